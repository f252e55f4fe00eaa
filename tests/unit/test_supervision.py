"""die_with_master only in a worker of a marked master: never in a process run on its
own (a test, a server with no worker processes, another WSGI server); die_with_parent
only in a command its parent named."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from moorage import supervision


def test_not_a_worker_without_a_marked_master(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(supervision.MASTER_ENV, raising=False)
    assert supervision.die_with_master() is False
    # Marked, but this process's parent is not the master: left alone.
    monkeypatch.setenv(supervision.MASTER_ENV, str(os.getpid()))
    assert supervision.die_with_master() is False


def test_a_worker_dies_with_its_master() -> None:
    """A master marks itself and starts a worker that asks to die with it; the master
    is SIGKILLed; the worker is gone at once (it would otherwise sleep a minute)."""
    worker = ("from moorage import supervision; import time, sys; "
              "assert supervision.die_with_master(); print('armed', flush=True); "
              "time.sleep(60)")
    master = (f"import os, subprocess, sys, time; from moorage import supervision; "
              f"supervision.mark_master(); "
              f"p = subprocess.Popen([sys.executable, '-c', {worker!r}]); "
              f"print(p.pid, flush=True); time.sleep(60)")
    process = subprocess.Popen([sys.executable, "-c", master], stdout=subprocess.PIPE,
                               text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                   sys.path)})
    assert process.stdout is not None
    lines = {process.stdout.readline().strip() for _ in range(2)}
    assert "armed" in lines, lines
    worker_pid = int(next(line for line in lines if line != "armed"))
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(worker_pid, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{worker_pid}/stat") as stat:
            if stat.read().split(")")[-1].split()[0] == "Z":
                return  # dead, waiting to be reaped by init
        time.sleep(0.05)
    os.kill(worker_pid, signal.SIGKILL)
    raise AssertionError("the worker outlived its master")


def test_a_command_ends_with_its_parent_only_when_named_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(supervision.PARENT_ENV, raising=False)
    assert supervision.die_with_parent() is False
    # Named, but not this process's parent (this process itself): left alone.
    monkeypatch.setenv(supervision.PARENT_ENV, str(os.getpid()))
    assert supervision.die_with_parent() is False
    monkeypatch.setenv(supervision.PARENT_ENV, "not-a-pid")
    assert supervision.die_with_parent() is False
    # What a launcher adds from the main thread names this process.
    assert supervision.child_environment() == {supervision.PARENT_ENV: str(os.getpid())}


def test_a_command_whose_parent_ended_before_it_could_ask_ends_at_once(
        tmp_path: Path) -> None:
    """A run killed while its services still import their code: by the time a service
    asks to die with its parent, the parent is gone. It ends then, not never."""
    out = tmp_path / "child.out"
    # A parent that starts the command, names itself, and exits at once.
    parent = subprocess.run([sys.executable, "-c", (
        "import os, subprocess, sys\n"
        f"env = {{**os.environ, {supervision.PARENT_ENV!r}: str(os.getpid())}}\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time, sys; "
        "time.sleep(1.0); from moorage import supervision; supervision.die_with_parent(); "
        "print(\"still here\", flush=True); time.sleep(30)'], env=env, "
        "stdout=open(sys.argv[1], 'w'))\n"
        "print(child.pid)\n"), str(out)], capture_output=True, text=True, check=True)
    child = int(parent.stdout)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not supervision._ended(child):
        time.sleep(0.05)
    ended = supervision._ended(child)
    if not ended:
        os.kill(child, signal.SIGKILL)
    assert ended, "the orphan went on"
    assert "still here" not in out.read_text()
    # A grandchild, whose named ancestor still runs, is left alone (as above).
    assert supervision._ended(os.getpid()) is False


def test_no_parent_is_named_from_a_thread_that_may_end() -> None:
    """Linux signals the child when the thread that started it ends: a command started
    from another thread is not told to end with its parent."""
    found: list[dict[str, str]] = []
    thread = threading.Thread(target=lambda: found.append(supervision.child_environment()))
    thread.start()
    thread.join()
    assert found == [{}]


def test_a_worker_killed_again_and_again_waits_longer_each_time() -> None:
    waits = [supervision.respawn_backoff(n) for n in range(0, 10)]
    assert waits[:4] == [0.0, 0.0, supervision.RESPAWN_INTERVAL,
                         2 * supervision.RESPAWN_INTERVAL]
    assert waits == sorted(waits)
    assert max(waits) == supervision.MAX_BACKOFF


@pytest.mark.parametrize(("lived", "status", "could_not_start", "quick"), [
    (0.2, 1, True, True),      # the app factory raised: a bad configuration
    (0.2, 0, True, True),
    (0.2, -9, False, True),    # SIGKILL (the OOM killer, an operator): start it again
    (0.2, None, False, True),  # a worker thread: how it ended is not known
    (60.0, 1, False, False),   # it served a minute: a crash, not a start that fails
])
def test_which_dead_workers_stop_the_server(lived: float, status: int | None,
                                            could_not_start: bool, quick: bool) -> None:
    death = supervision.WorkerDeath(0, lived, status)
    assert (death.could_not_start, death.quick) == (could_not_start, quick)
