"""A failpoint stops its process before any other thread of it goes past the step."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

# Two threads of one process reach the armed failpoint "step", 0.1 s apart. The
# first fires it; its log line takes 0.5 s to write (a slow disk, a loaded machine),
# during which the second arrives. Each says when it has gone past the step.
CHILD = """
import logging, sys, threading, time
class Slow(logging.Handler):
    def emit(self, record):
        time.sleep(0.5)
logging.getLogger().addHandler(Slow())
from moorage import failpoints
def go(name):
    failpoints.reach("step")
    print(name, "past", flush=True)
first = threading.Thread(target=go, args=("first",))
first.start()
time.sleep(0.1)
go("second")
first.join()
"""


def _lines(process: subprocess.Popen[str], seconds: float) -> list[str]:
    """What the child printed within ``seconds`` (it may be stopped meanwhile)."""
    assert process.stdout is not None
    os.set_blocking(process.stdout.fileno(), False)
    found = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line:
            found.append(line.strip())
        else:
            time.sleep(0.02)
    return found


def test_no_thread_goes_past_a_stop_failpoint_its_process_is_firing(tmp_path: Path) -> None:
    marker = tmp_path / "fired"
    env = {**os.environ, "MOORAGE_FAILPOINTS": f"step=stop@{marker}",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    child = subprocess.Popen([sys.executable, "-c", CHILD], env=env, text=True,
                             stdout=subprocess.PIPE)
    try:
        # Stopped: neither thread went past the step, the one that fired it nor the
        # other, which arrived while the first was still writing its line.
        stopped = _lines(child, 2.0)
        assert stopped == []
        assert marker.exists()
        assert Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
        child.send_signal(signal.SIGCONT)
        assert sorted(stopped + _lines(child, 2.0)) == ["first past", "second past"]
        assert child.wait(timeout=10) == 0
    finally:
        child.kill()
