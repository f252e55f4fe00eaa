"""CPU time of a benchmark's processes and of the machine, read from /proc (Linux).

A run's figure to optimise is CPU per boot, which does not depend on how fast or busy
the machine is, where boots/s does. ``CpuWindow`` reads, at the start and the end of a
timed burst, the user + system seconds of every process below a root (by role: what
its command line runs, a server's workers under their master's) and of the whole
machine (``/proc/stat``). Their difference gives each role's CPU over the burst, how
busy the machine was, and how much of it went to processes outside the run: a run
where others took more than ``DISTURBED`` of the machine is marked, as its boots/s
is not comparable.

Nothing here needs a dependency: psutil would read the same files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
CORES = os.cpu_count() or 1
# A run's processes, by what their command line runs (the first that matches).
ROLES = (("placement serve", "placement"), ("api serve", "api"),
         ("conductor serve", "conductor"), ("compute fleet", "fleet"),
         ("compute run", "agent"), ("e2e.py", "client"))
# Other processes' share of the machine above which a run is marked disturbed.
DISTURBED = 0.05


def _role(command_line: str) -> str | None:
    if _is_postgresql(command_line):
        return "postgresql"
    for needle, role in ROLES:
        if needle in command_line:
            return role
    return None


def _is_postgresql(command_line: str) -> bool:
    """A PostgreSQL server process: the postmaster (``.../bin/postgres -D ...``) or one
    of its backends (``postgres: user db ...``)."""
    executable = command_line.split(" ", 1)[0]
    return executable.startswith("postgres:") or Path(executable).name == "postgres"


def _processes() -> dict[int, tuple[int, str, float]]:
    """Every process: pid -> (parent pid, command line, CPU seconds so far)."""
    seen: dict[int, tuple[int, str, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            command_line = Path(f"/proc/{entry}/cmdline").read_bytes().replace(
                b"\0", b" ").decode(errors="replace")
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        seen[int(entry)] = (int(fields[1]), command_line,
                            (int(fields[11]) + int(fields[12])) / TICK)
    return seen


def tree_cpu(roots: dict[int, str]) -> dict[int, tuple[str, float]]:
    """The CPU seconds so far of each process below one of ``roots`` (pid -> the role
    of a process that names none) and the root itself, by pid, each under the role of
    the nearest process of its line that names one."""
    seen = _processes()
    found: dict[int, tuple[str, float]] = {}
    for pid, (_parent, _line, seconds) in seen.items():
        role, ancestor, steps = None, pid, 0
        while ancestor in seen and steps < 64:
            role = role or _role(seen[ancestor][1])
            if ancestor in roots:
                found[pid] = (role or roots[ancestor], seconds)
                break
            ancestor, steps = seen[ancestor][0], steps + 1
    return found


def machine_cpu() -> tuple[float, float]:
    """(busy, all) CPU seconds of the machine since boot, every core: busy is all but
    idle and iowait."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    every = sum(fields[:8])  # user nice system idle iowait irq softirq steal
    return (every - fields[3] - fields[4]) / TICK, every / TICK


@dataclass
class CpuUse:
    """What a window measured: CPU seconds by role, the machine's busy and total
    seconds, and the busy seconds of processes outside the run."""

    by_role: dict[str, float] = field(default_factory=dict)
    machine_busy: float = 0.0
    machine_total: float = 0.0

    @property
    def run_total(self) -> float:
        return sum(self.by_role.values())

    @property
    def busy(self) -> float:
        """How busy the machine was, 0 to 1."""
        return self.machine_busy / self.machine_total if self.machine_total else 0.0

    @property
    def others(self) -> float:
        """The share of the machine other processes used, 0 to 1."""
        if not self.machine_total:
            return 0.0
        return max(0.0, self.machine_busy - self.run_total) / self.machine_total

    @property
    def disturbed(self) -> bool:
        return self.others > DISTURBED

    def per_boot_ms(self, boots: int) -> dict[str, float]:
        return {role: seconds * 1000 / boots for role, seconds in self.by_role.items()}


class CpuWindow:
    """CPU used between ``start`` and ``stop`` by the processes below ``roots`` and by
    the machine. Processes that appear meanwhile count from zero; one that ends before
    ``stop`` is lost (a run's services live through the burst)."""

    def __init__(self, roots: dict[int, str]) -> None:
        self.roots = roots
        self._before: dict[int, tuple[str, float]] = {}
        self._machine: tuple[float, float] = (0.0, 0.0)

    def start(self) -> CpuWindow:
        self._before = tree_cpu(self.roots)
        self._machine = machine_cpu()
        return self

    def stop(self) -> CpuUse:
        after = tree_cpu(self.roots)
        busy, every = machine_cpu()
        use = CpuUse(machine_busy=busy - self._machine[0],
                     machine_total=every - self._machine[1])
        for pid, (role, seconds) in after.items():
            spent = seconds - self._before.get(pid, (role, 0.0))[1]
            use.by_role[role] = use.by_role.get(role, 0.0) + max(0.0, spent)
        return use


def postgresql_roots() -> dict[int, str]:
    """The PostgreSQL servers' main processes (their backends are below them): a run
    on PostgreSQL counts the server's CPU too."""
    seen = _processes()
    return {pid: "postgresql" for pid, (parent, line, _s) in seen.items()
            if _is_postgresql(line) and not _is_postgresql(seen.get(parent, (0, "", 0.0))[1])}
