"""Reaping the QEMU processes of an embedded libvirt driver.

Why: with ``qemu:///embed`` this process is libvirt's daemon, and the QEMU processes
libvirt starts (guests, and the short-lived ones that probe QEMU's capabilities)
daemonize: their parent exits, so they become children of PID 1. When libvirt stops
one, it sends SIGTERM and then polls every 200 ms until the process is gone; a
process that has exited but was not yet reaped still counts as there. Where PID 1
reaps late (a container's init, or none at all) every stop then takes seconds
(here, 2 s each: a first look at QEMU took 8 s, destroying 10 guests 11 s).

So this process becomes a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux
3.4): orphaned descendants are re-parented to it instead of PID 1, and a thread reaps
those that are QEMU processes and have been zombies for a while. libvirt waits for
its direct children at once; a zombie left for ``grace`` seconds is one nobody waits
for.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
import threading
import time
from pathlib import Path

LOG = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36
# The command names (at most 15 characters in /proc) of the processes reaped.
REAPED_COMMANDS = ("qemu-system",)

_lock = threading.Lock()
_started = False


def adopt_orphans(interval: float = 0.05, grace: float = 0.2) -> bool:
    """Make this process the subreaper of its orphaned descendants and reap the QEMU
    ones, from now on (once per process); False where Linux does not allow it."""
    global _started
    with _lock:
        if _started:
            return True
        if not sys.platform.startswith("linux"):
            return False
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            LOG.debug("prctl(PR_SET_CHILD_SUBREAPER) failed: errno %d", ctypes.get_errno())
            return False
        threading.Thread(target=_reap_forever, args=(interval, grace), daemon=True,
                         name="qemu-reaper").start()
        _started = True
        return True


def _reap_forever(interval: float, grace: float) -> None:
    seen: dict[int, float] = {}   # zombie pid -> when first seen
    while True:
        time.sleep(interval)
        now = time.monotonic()
        current = set(zombie_qemu_children())
        for pid in list(seen):
            if pid not in current:
                del seen[pid]
        for pid in current:
            since = seen.setdefault(pid, now)
            if now - since < grace:
                continue
            # ChildProcessError: reaped meanwhile by whoever waited for it
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            seen.pop(pid, None)


def zombie_qemu_children() -> list[int]:
    """This process's children that have exited unreaped and are QEMU processes."""
    found = []
    for pid in _children():
        try:
            stat = (Path("/proc") / str(pid) / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ...": comm may hold spaces and parentheses
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        state = stat[stat.rindex(")") + 2:stat.rindex(")") + 3]
        if state == "Z" and comm.startswith(REAPED_COMMANDS):
            found.append(pid)
    return found


def _children() -> list[int]:
    pids: list[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            pids += [int(p) for p in
                     Path(f"/proc/self/task/{task}/children").read_text().split()]
        except OSError:
            continue
    return pids
