"""Failpoints: named places where a test can make this process die, at once, as a
SIGKILL or a power cut would make it, or stop, as a process paused by SIGSTOP (a
stalled VM, a long pause) is stopped (etcd's gofail and TiKV's fail-rs are the
anchors). Production code calls ``reach(name)`` at the steps whose interruption must
be survived; nothing happens unless the environment arms that name:

    MOORAGE_FAILPOINTS=conductor.build.after_claim@/tmp/marker[,...]
    MOORAGE_FAILPOINTS=conductor.build.after_spawn=stop@/tmp/marker

An armed failpoint fires once: the first process to reach it creates the marker file
and kills itself with SIGKILL (``=stop``: stops itself with SIGSTOP, every thread with
it, until the test sends SIGCONT); a process that finds the marker (the same service
restarted, or its successor) passes, and so does, once the process resumes, another
thread of the process that fired it. Only the tests arm failpoints.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

LOG = logging.getLogger(__name__)

ENV = "MOORAGE_FAILPOINTS"


# What an armed failpoint does: the signal it sends this process.
ACTIONS = {"kill": signal.SIGKILL, "stop": signal.SIGSTOP}


def _armed() -> dict[str, tuple[str, signal.Signals]]:
    found: dict[str, tuple[str, signal.Signals]] = {}
    for item in os.environ.get(ENV, "").split(","):
        armed, _, marker = item.strip().partition("@")
        name, _, action = armed.partition("=")
        if name and marker:
            found[name] = (marker, ACTIONS[action or "kill"])
    return found


_ARMED = _armed()
# Held by the thread that fires a failpoint until its signal has stopped the process
# (and, for a stop, until the process resumes): another thread of this process that
# reaches an armed failpoint meanwhile waits for it. Without it, a thread that found
# the marker while the firing thread was still writing its log line went past the
# step and on, and a conductor meant to stop at a move's spawn finished other moves
# first (CI failure of stop 45: test_paused_conductor[migrate]).
_FIRING = threading.Lock()


def reach(name: str) -> None:
    """Die (or stop) here if a test armed ``name`` and nobody fired it yet."""
    armed = _ARMED.get(name)
    if armed is None:
        return
    marker, sent = armed
    with _FIRING:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.close(fd)
        LOG.warning("failpoint %s: sending %s to this process (pid %d)", name,
                    sent.name, os.getpid())
        os.kill(os.getpid(), sent)
        # The kernel stops this thread when it next enters the kernel, which a
        # statement sent to the database must not be: here, at the step.
        time.sleep(0.001)
