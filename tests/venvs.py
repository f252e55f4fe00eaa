"""Where the throwaway venvs of the real components live (tools/*.sh make them): the
one place that reads their environment variable or falls back to the cache, and that
refuses, naming how to make it, an executable a venv lacks."""

from __future__ import annotations

import os
import select
import subprocess
from pathlib import Path


def venv_path(variable: str, default_name: str) -> Path:
    """``$variable``, else ``$XDG_CACHE_HOME`` (or ``~/.cache``)``/moorage/default_name``."""
    configured = os.environ.get(variable)
    if configured:
        return Path(configured)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "moorage" / default_name


def executable(venv: Path, name: str, missing: type[Exception], how_to_create: str) -> Path:
    """``venv``'s ``bin/name``; ``missing`` saying how to create the venv when absent."""
    path = venv / "bin" / name
    if not os.access(path, os.X_OK):
        raise missing(f"{path} is missing. {how_to_create}")
    return path


def start_server(argv: list[str], log: Path, missing: type[Exception], what: str,
                 timeout: float, hint: str = "") -> tuple[subprocess.Popen[bytes], int]:
    """Run a server script (``tests/keystone_server.py``, ``tests/glance_server.py``)
    that prints the port it listens on as its first line, in a session of its own, its
    stderr to ``log``; the process and that port. ``missing`` names why it did not
    start (the last line of ``log``, then ``hint``) when no port comes within
    ``timeout``."""
    with log.open("wb") as stderr:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    line = process.stdout.readline().decode().strip() if ready else ""
    if not line.isdigit():
        stop_server(process)
        reason = log.read_text(errors="replace").strip().splitlines()
        raise missing(f"{what} did not start: "
                      f"{reason[-1] if reason else f'no port within {timeout}s'}"
                      f"{f'. {hint}' if hint else ''}")
    return process, int(line)


def stop_server(process: subprocess.Popen[bytes] | None) -> None:
    """End a server ``start_server`` started: SIGTERM, then SIGKILL after 10 s."""
    if process is None:
        return
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()
