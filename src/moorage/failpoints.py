"""Failpoints: named places where a test can make this process die, at once, as a
SIGKILL or a power cut would make it (etcd's gofail and TiKV's fail-rs are the
anchors). Production code calls ``reach(name)`` at the steps whose interruption must
be survived; nothing happens unless the environment arms that name:

    MOORAGE_FAILPOINTS=conductor.build.after_claim@/tmp/marker[,...]

An armed failpoint fires once: the first process to reach it creates the marker file
and kills itself with SIGKILL; a process that finds the marker (the same service
restarted, or its successor) passes. Only the tests arm failpoints.
"""

from __future__ import annotations

import logging
import os
import signal

LOG = logging.getLogger(__name__)

ENV = "MOORAGE_FAILPOINTS"


def _armed() -> dict[str, str]:
    found: dict[str, str] = {}
    for item in os.environ.get(ENV, "").split(","):
        name, _, marker = item.strip().partition("@")
        if name and marker:
            found[name] = marker
    return found


_ARMED = _armed()


def reach(name: str) -> None:
    """Die here if a test armed ``name`` and nobody died here yet."""
    marker = _ARMED.get(name)
    if marker is None:
        return
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    LOG.warning("failpoint %s: killing this process (pid %d)", name, os.getpid())
    os.kill(os.getpid(), signal.SIGKILL)
