"""Upstream openstack-placement, installed into a throwaway venv and run for comparison.

Launched as the reference's recipe does (shared/reference/placement-api.md section 5):
gunicorn with one sync worker, a SQLite file with ``sqlite_synchronous = True``, noauth2,
``randomize_allocation_candidates = False``. Upstream code lives only in that venv.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from moorage.placement.launcher import ServerProcess, write_config

VERSION = "16.0.0"
REQUIREMENTS = (f"openstack-placement=={VERSION}", "gunicorn")


def ensure_venv(venv: Path) -> Path:
    """The venv with upstream placement and gunicorn, created on first use and reused."""
    stamp = venv / f".installed-openstack-placement-{VERSION}"
    if stamp.exists():
        return venv
    print(f"installing upstream openstack-placement {VERSION} into {venv} ...", flush=True)
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *REQUIREMENTS],
        check=True,
    )
    stamp.touch()
    return venv


class UpstreamPlacement(ServerProcess):
    """One gunicorn-served upstream placement on a fresh SQLite database."""

    name = "upstream-placement"

    def __init__(self, venv: Path, workdir: Path, host: str = "127.0.0.1") -> None:
        super().__init__(workdir, host)
        self.venv = venv
        self.config_file = write_config(self.workdir / "placement.conf", {
            "DEFAULT": {"debug": False, "log_file": self.workdir / "placement-api.log"},
            "api": {"auth_strategy": "noauth2"},
            "placement": {
                "randomize_allocation_candidates": False,
                "max_allocation_candidates": -1,
            },
            "placement_database": {
                "connection": f"sqlite:///{self.workdir / 'placement.sqlite'}",
                "sqlite_synchronous": True,
                "sync_on_startup": False,
            },
        })

    def environment(self) -> dict[str, str]:
        return {**super().environment(), "OS_PLACEMENT_CONFIG_DIR": str(self.workdir)}

    def prepare(self) -> None:
        subprocess.run(
            [str(self.venv / "bin" / "placement-manage"), "--config-file",
             str(self.config_file), "db", "sync"],
            check=True, env=self.environment(), cwd=self.workdir, capture_output=True,
        )

    def command(self) -> list[str]:
        return [str(self.venv / "bin" / "gunicorn"), "--bind", f"{self.host}:{self.port}",
                "--workers", "1", "--threads", "1", "--timeout", "600",
                "placement.wsgi.api:application"]

    def start(self, timeout: float = 60.0) -> UpstreamPlacement:
        super().start(timeout)
        return self
