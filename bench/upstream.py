"""Upstream openstack-placement, installed into a throwaway venv and run for comparison.

Launched as the reference's recipe does (shared/reference/placement-api.md section 5):
gunicorn with one sync worker, a SQLite file with ``sqlite_synchronous = True``, noauth2,
``randomize_allocation_candidates = False``. Upstream code lives only in that venv.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from moorage.placement.launcher import ServerStartError, free_port, write_config

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


class UpstreamPlacement:
    """One gunicorn-served upstream placement on a fresh SQLite database."""

    def __init__(self, venv: Path, workdir: Path, host: str = "127.0.0.1") -> None:
        self.venv = venv
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port(host)
        self.host = host
        self.url = f"http://{host}:{self.port}"
        self.log_path = workdir / "gunicorn.log"
        self._process: subprocess.Popen[bytes] | None = None

    def _write_config(self) -> Path:
        return write_config(self.workdir / "placement.conf", {
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

    def start(self, timeout: float = 60.0) -> UpstreamPlacement:
        config = self._write_config()
        env = {**os.environ, "OS_PLACEMENT_CONFIG_DIR": str(self.workdir)}
        bin_dir = self.venv / "bin"
        subprocess.run(
            [str(bin_dir / "placement-manage"), "--config-file", str(config), "db", "sync"],
            check=True, env=env, cwd=self.workdir, capture_output=True,
        )
        log = self.log_path.open("ab")
        self._process = subprocess.Popen(
            [str(bin_dir / "gunicorn"), "--bind", f"{self.host}:{self.port}",
             "--workers", "1", "--threads", "1", "--timeout", "600",
             "placement.wsgi.api:application"],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.workdir,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ServerStartError(
                    f"upstream placement exited with {self._process.returncode}:\n{self.output()}"
                )
            with (
                contextlib.suppress(OSError, urllib.error.URLError),
                urllib.request.urlopen(self.url + "/", timeout=1) as answer,
            ):
                if answer.status == 200:
                    return self
            time.sleep(0.1)
        self.stop()
        raise ServerStartError(f"upstream placement did not answer in {timeout}s:\n{self.output()}")

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self._process is None or self._process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, signal.SIGTERM)
        try:
            self._process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=5)

    def __enter__(self) -> UpstreamPlacement:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
