"""``moorage-status upgrade check``, run as the installed command an operator runs
before restarting the services on a new Moorage (nova-status's convention)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config

from moorage.api.storage import migration as api_migration
from moorage.db.database import Database

STATUS = Path(sys.executable).with_name("moorage-status")
SUCCESS, WARNING, FAILURE = 0, 1, 2


def _status(*argv: str) -> subprocess.CompletedProcess[str]:
    assert STATUS.exists(), (
        f"{STATUS} is missing: the moorage-status console script comes with the install "
        "(pip install -e '.[test]' again)")
    return subprocess.run([str(STATUS), *argv], capture_output=True, text=True, timeout=120)


def _checks(conf: Path) -> tuple[int, dict[str, tuple[int, Any]]]:
    done = _status("--config-file", str(conf), "upgrade", "check", "--json")
    assert done.returncode in (SUCCESS, WARNING, FAILURE), done.stdout + done.stderr
    found = json.loads(done.stdout)
    return done.returncode, {c["check"]: (c["result"], c["details"]) for c in found["checks"]}


def _conf(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "moorage.conf"
    path.write_text(f"[placement_database]\nconnection = sqlite:///{tmp_path / 'p.sqlite'}\n"
                    f"[database]\nconnection = sqlite:///{tmp_path / 'api.sqlite'}\n{extra}")
    return path


def _moorage(*argv: str) -> None:
    done = subprocess.run([sys.executable, "-m", "moorage", *argv], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_databases_not_created_are_warnings_and_nothing_is_written(tmp_path: Path) -> None:
    conf = _conf(tmp_path)
    code, checks = _checks(conf)
    assert code == WARNING
    assert checks["Option values"][0] == SUCCESS
    assert checks["Placement database schema"] == (
        WARNING, f"no placement database at sqlite:///{tmp_path / 'p.sqlite'}: where this "
        "host runs the service, create it with `moorage placement db sync`")
    assert checks["Compute API database schema"][0] == WARNING
    assert checks["Prefilters and placement's traits"] == (
        SUCCESS, "no prefilter is on ([scheduler])")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["moorage.conf"]


def test_synced_databases_pass(tmp_path: Path) -> None:
    conf = _conf(tmp_path)
    _moorage("placement", "db", "sync", "--config-file", str(conf))
    _moorage("api", "db", "sync", "--config-file", str(conf))
    code, checks = _checks(conf)
    assert code == SUCCESS, checks
    head = api_migration.MIGRATIONS.head_revision()
    assert checks["Compute API database schema"] == (
        SUCCESS, f"sqlite:///{tmp_path / 'api.sqlite'} is at revision {head}")


def test_a_database_behind_the_code_fails_naming_the_sync(tmp_path: Path) -> None:
    conf = _conf(tmp_path)
    db = Database(f"sqlite:///{tmp_path / 'api.sqlite'}")
    config = Config()
    config.set_main_option("script_location", str(api_migration.MIGRATIONS.scripts))
    config.set_main_option("version_table", api_migration.MIGRATIONS.version_table)
    with db.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0014")  # an older Moorage's schema
    db.dispose()
    code, checks = _checks(conf)
    assert code == FAILURE
    head = api_migration.MIGRATIONS.head_revision()
    assert checks["Compute API database schema"] == (
        FAILURE, f"the compute API database at sqlite:///{tmp_path / 'api.sqlite'} is at "
        f"revision 0014; this Moorage needs {head}: run `moorage api db sync` (or start "
        "the service with sync_on_startup)")


def test_a_bad_option_fails_naming_it(tmp_path: Path) -> None:
    conf = _conf(tmp_path, "[placement]\nmax_allocation_candidates = lots\n")
    code, checks = _checks(conf)
    assert code == FAILURE
    assert checks["Option values"] == (
        FAILURE, f"[placement] max_allocation_candidates in {conf}: invalid literal for "
        "int() with base 10: 'lots'; allowed: an integer")


def test_a_prefilter_on_with_placement_unreachable_is_a_warning(tmp_path: Path) -> None:
    conf = _conf(tmp_path, "[scheduler]\nimage_metadata_prefilter = true\n"
                 "[placement]\nendpoint_override = http://127.0.0.1:9\n")
    code, checks = _checks(conf)
    result, details = checks["Prefilters and placement's traits"]
    assert result == WARNING and "127.0.0.1:9" in details
    assert code == WARNING  # the databases' absence is a warning too, no worse


def test_a_configuration_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    done = _status("--config-file", str(tmp_path / "absent.conf"), "upgrade", "check")
    assert done.returncode == 255
    assert done.stderr.strip() == (
        f"moorage-status: configuration file not found: {tmp_path / 'absent.conf'}")
    assert done.stdout == ""


def test_the_services_keystone_credentials_are_tried(tmp_path: Path) -> None:
    from moorage.placement.launcher import free_port

    code, checks = _checks(_conf(tmp_path))
    assert checks["Keystone credentials of the services"][0] == SUCCESS
    auth_url = f"http://127.0.0.1:{free_port()}/v3"
    conf = _conf(tmp_path, f"[placement]\nauth_type = password\nauth_url = {auth_url}\n"
                 "username = nova\npassword = x\nproject_name = service\n"
                 "user_domain_id = default\nproject_domain_id = default\n")
    code, checks = _checks(conf)
    assert code == FAILURE
    assert checks["Keystone credentials of the services"] == (
        FAILURE, f"[placement] could not get a token from {auth_url}: not reachable "
        "(connection refused)")
    missing = _conf(tmp_path, "[glance]\nauth_type = password\n")
    assert _checks(missing)[1]["Keystone credentials of the services"] == (
        FAILURE, "[glance] auth_type = password needs auth_url")
