"""py-spy over a benchmark's services during its timed burst only.

A profile of a whole run is mostly registration, imports and the after-run checks;
the figure to optimise is the CPU of the burst. ``BurstProfile`` starts one
``py-spy record`` per service (its workers with it, ``--subprocesses``) when the
burst starts and stops them when it ends, then prints, per role, where the samples
went: the functions holding most samples (inclusive) and the leaves (self).

py-spy samples with ``--gil``: only the thread holding the interpreter's lock, so a
role's samples are where its Python CPU goes (what releases the lock, SQLite's steps
and the sockets' system calls, is not seen; /proc's CPU per boot stays the figure).
Without it py-spy also counts threads blocked in a system call (a COMMIT waiting for
the disk, a send) as busy, which put a fifth of a compute API's samples in COMMIT.
Samples whose leaf is a wait (a lock, a condition, a socket read, a pool's idle
worker) are left out: py-spy's idle detection misses some of them, and they cost
no CPU.

py-spy is not a dependency of the project: ``pip install py-spy``.
"""

from __future__ import annotations

import collections
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from cpu import _processes, _role, tree_cpu

# Leaves that wait rather than run, as ``_function`` names them.
WAITS = frozenset({
    "Condition.wait (threading.py)", "Event.wait (threading.py)",
    "Thread._wait_for_tstate_lock (threading.py)", "_worker (thread.py)",
    "SocketIO.readinto (socket.py)", "EpollSelector.select (selectors.py)",
    "PollSelector.select (selectors.py)", "Popen.poll (popen_fork.py)",
    "socket.accept (socket.py)"})
FRAME = re.compile(r"^(?P<name>.*?) \((?P<file>.*?)(?::\d+)?\)$")


class BurstProfile:
    """``py-spy record`` of each service process (a server's master with its
    workers) from ``start`` to ``stop``; raw stacks go to ``directory``."""

    def __init__(self, directory: Path, rate: int = 100) -> None:
        beside = Path(sys.executable).parent / "py-spy"
        found = str(beside) if beside.exists() else shutil.which("py-spy")
        if found is None:
            raise SystemExit("--profile needs py-spy (beside this Python or on PATH): "
                             "pip install py-spy")
        self.py_spy = found
        self.directory = directory
        self.rate = rate
        self._recorders: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, roots: dict[int, str]) -> BurstProfile:
        """Record every top service process below ``roots`` (one whose parent names
        no role: a server's master, not each of its workers)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        below = tree_cpu(roots)
        seen = _processes()
        for pid, (parent, line, _seconds) in sorted(seen.items()):
            role = _role(line)
            parent_role = _role(seen.get(parent, (0, "", 0.0))[1])
            if role in (None, "client", "postgresql") or parent_role not in (None, "client"):
                continue
            if pid not in below:
                continue
            out = self.directory / f"{role}-{pid}.txt"
            recorder = subprocess.Popen(
                [self.py_spy, "record", "--pid", str(pid), "--subprocesses", "--nonblocking",
                 "--gil", "-r", str(self.rate), "-f", "raw", "-o", str(out)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self._recorders.append((role, recorder))
        return self

    def stop(self) -> None:
        for _role_name, recorder in self._recorders:
            recorder.send_signal(signal.SIGINT)
        for _role_name, recorder in self._recorders:
            try:
                recorder.wait(timeout=60)
            except subprocess.TimeoutExpired:
                recorder.kill()

    def report(self, top: int = 25) -> str:
        """Per role: its share of the samples, then the functions with most samples
        (inclusive) and the leaves (self), as percentages of the role's samples."""
        return summarise(sorted(self.directory.glob("*.txt")), top)


def _function(frame: str) -> str:
    match = FRAME.match(frame)
    if not match:
        return frame
    return f"{match['name']} ({match['file'].rsplit('/', 1)[-1]})"


def summarise(files: list[Path], top: int) -> str:
    inclusive: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    leaves: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    totals: collections.Counter[str] = collections.Counter()
    for path in files:
        role = path.name.split("-", 1)[0]
        for line in path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            frames = [f for f in stack.split(";") if not f.startswith("process ")]
            if not frames or _function(frames[-1]) in WAITS:
                continue
            samples = int(count)
            totals[role] += samples
            for name in {_function(f) for f in frames}:
                inclusive[role][name] += samples
            leaves[role][_function(frames[-1])] += samples
    lines = []
    everything = sum(totals.values()) or 1
    for role, samples in totals.most_common():
        lines.append(f"## {role}: {samples} samples, {100 * samples / everything:.1f}% of all")
        lines.append("inclusive:")
        lines += [f"  {100 * n / samples:5.1f}% {name}"
                  for name, n in inclusive[role].most_common(top)]
        lines.append("self:")
        lines += [f"  {100 * n / samples:5.1f}% {name}"
                  for name, n in leaves[role].most_common(top)]
    return "\n".join(lines)
