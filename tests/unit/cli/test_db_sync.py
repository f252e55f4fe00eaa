"""``moorage placement db sync`` and ``moorage api db sync``: one implementation, each
naming its own database, its revisions and, without its password, a URL it cannot use."""

from __future__ import annotations

from pathlib import Path

import pytest

from moorage.api.storage import migration as api_migration
from moorage.placement.storage import migration as placement_migration
from tests.cli_runner import run_moorage

SERVICES = [
    pytest.param("placement", "placement database", placement_migration.head_revision(),
                 id="placement"),
    pytest.param("api", "compute API database", api_migration.head_revision(), id="api"),
]


@pytest.mark.parametrize(("service", "title", "head"), SERVICES)
def test_db_sync_reports_the_revisions(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                       service: str, title: str, head: str) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    first = run_moorage(capsys, [service, "db", "sync", "--db", url])
    assert first.code == 0, first.err
    assert first.out == f"{title} {url}: empty -> {head}\n"
    again = run_moorage(capsys, [service, "db", "sync", "--db", url])
    assert again.out == f"{title} {url}: {head} -> {head}\n"


@pytest.mark.parametrize(("service", "title", "head"), SERVICES)
def test_a_database_it_cannot_use_is_one_line_without_the_password(
        capsys: pytest.CaptureFixture[str], service: str, title: str, head: str) -> None:
    run = run_moorage(capsys, [service, "db", "sync", "--db",
                               "postgresql://nobody:secret@127.0.0.1:1/x"])
    assert run.code == 1
    assert f"cannot use the {title} postgresql://nobody:***@127.0.0.1:1/x" in run.err
    assert "secret" not in run.err + run.out
    assert "Traceback" not in run.err
