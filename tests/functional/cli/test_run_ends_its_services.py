"""``moorage run`` and ``moorage serve`` end every process they started when they are
told to stop (SIGTERM as systemd or a CI timeout sends it, SIGINT as Ctrl-C, SIGHUP as
a closed terminal) and when they are killed outright (SIGKILL): within 10 s no
process of theirs is left. Found when a timeout ended a large run and its placement
and compute API served on, orphaned, 25 minutes later."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.functional.cli.test_run import SMALL_CLOUD

# Long enough to be killed in the middle: the services are up well before it ends.
LONG_CLOUD = SMALL_CLOUD.replace("count: 4}", "count: 5000}")
SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL]


def _default_signals() -> None:
    """In the child: every signal of SIGNALS with its default action. A test run
    started in the background or under nohup ignores SIGINT or SIGHUP, and its
    children inherit that (rightly: nohup means it), which is not what is tested."""
    for sig in SIGNALS[:-1]:
        signal.signal(sig, signal.SIG_DFL)


def _descendants_once_serving(process: psutil.Popen, names: tuple[str, ...], said: Path,
                              timeout: float = 120) -> list[psutil.Process]:
    """Every process ``process`` started, once one runs each of ``names`` (a command
    line word: "placement", "api"). ``said``: where its standard error goes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, said.read_text()[-3000:]
        commands = [_command(p) for p in process.children(recursive=True)]
        if all(any(f" {name} serve" in c for c in commands) for name in names):
            time.sleep(1.0)  # their workers too
            return process.children(recursive=True)
        time.sleep(0.2)
    raise AssertionError(f"no {names} started within {timeout}s")


def _command(process: psutil.Process) -> str:
    """Its command line; "" once it has ended (a zombie tells none)."""
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _left(processes: list[psutil.Process], within: float) -> list[str]:
    deadline = time.monotonic() + within
    while True:
        alive = [p for p in processes if _alive(p)]
        if not alive or time.monotonic() > deadline:
            return [f"{p.pid}: {_command(p)}" for p in alive]
        time.sleep(0.1)


def _end(process: psutil.Popen, sig: signal.Signals,
         started: list[psutil.Process]) -> None:
    try:
        process.send_signal(sig)
        process.wait(timeout=30)
        assert _left(started, within=10) == []
    finally:
        for leftover in [process, *started]:
            with contextlib.suppress(psutil.Error):
                leftover.kill()


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_run_ends_its_services(tmp_path: Path, sig: signal.Signals) -> None:
    cloud = tmp_path / "long.yaml"
    cloud.write_text(LONG_CLOUD)
    said = tmp_path / "stderr"
    # To a file: a pipe nobody reads while the run goes on fills, and the run then
    # blocks on its next line (the cleanup's, after SIGINT) instead of ending.
    with said.open("w") as stderr:
        process = psutil.Popen([sys.executable, "-m", "moorage", "run", str(cloud),
                                "--only", "both", "--api-workers", "2"], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=stderr, text=True,
                               preexec_fn=_default_signals)
    try:
        started = _descendants_once_serving(process, ("placement", "api"), said)
    except BaseException:
        _end(process, signal.SIGKILL, process.children(recursive=True))
        raise
    assert len(started) >= 2, started
    _end(process, sig, started)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_serve_ends_with_everything_it_started(tmp_path: Path, sig: signal.Signals) -> None:
    process = psutil.Popen(
        [sys.executable, "-m", "moorage", "serve", "--port", "0", "--placement-port", "0",
         "--data-dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        preexec_fn=_default_signals)
    assert process.stdout is not None
    while not (line := process.stdout.readline()).startswith("Ctrl-C"):
        assert line, "moorage serve exited early"
    started = process.children(recursive=True)
    _end(process, sig, [*started, psutil.Process(process.pid)])
