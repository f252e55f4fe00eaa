"""The "NOT RUN" banner reaches the end of the run, serially and on xdist workers,
where the skipping tests run in other processes than the one printing the summary."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import PG_ENV, PG_SKIP_ENV

pytest_plugins = ["pytester"]

WORKTREE = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("workers", [(), ("-n", "2", "--dist", "loadfile")],
                         ids=["serial", "xdist"])
def test_every_skipped_postgresql_test_is_counted(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
        workers: tuple[str, ...]) -> None:
    monkeypatch.delenv(PG_ENV, raising=False)
    monkeypatch.setenv(PG_SKIP_ENV, "1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(WORKTREE), os.environ.get("PYTHONPATH", "")]))
    pytester.makeconftest('pytest_plugins = ["tests.conftest"]\n')
    # Two files: under --dist loadfile each goes to its own worker.
    pytester.makepyfile(
        test_one="def test_a(postgresql_url): pass\ndef test_b(postgresql_url): pass\n",
        test_two="def test_c(postgresql_url): pass\ndef test_d(): pass\n")
    result = pytester.runpytest_subprocess(*workers, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines(["*POSTGRESQL TESTS NOT RUN*",
                                 f"3 PostgreSQL tests were skipped because {PG_SKIP_ENV}=1.*"])
