"""Boots per second of this tree against an earlier commit's, in interleaved pairs.

Usage: .venv/bin/python bench/e2e_pairs.py --base REV [--pairs N] [--hosts H]
       [--api-workers W] [--json FILE]

On a shared machine one run of ``bench/e2e.py`` ranges by a third from one minute to
the next, more than most changes move it; only runs side by side compare. This runs
``bench/e2e.py --hosts H --api-workers W`` in this tree and in a git worktree of
``REV`` (made in a temporary directory, removed after), a pair at a time, the order
alternating, both with this interpreter and its packages. For each run it records
boots/s and the CPU seconds of every process of the run by role (placement, the
compute API, the fleet, the bench client), read from /proc every 0.2 s
(``cpu.tree_cpu``). It prints
a table per pair, then the means, the mean difference and its standard error.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cpu import tree_cpu

HERE = Path(__file__).resolve().parents[1]


@dataclass
class Run:
    """One run of bench/e2e.py: its boots/s and CPU seconds by role."""

    tree: str
    boots_per_second: float
    cpu: dict[str, float] = field(default_factory=dict)
    # CPU ms per boot over the timed burst (bench/e2e.py's own figure), and by role.
    cpu_ms_per_boot: float = 0.0
    cpu_ms_by_role: dict[str, float] = field(default_factory=dict)

    @property
    def cpu_total(self) -> float:
        return sum(self.cpu.values())


def run_once(tree: Path, label: str, args: argparse.Namespace, workdir: Path) -> Run:
    out = workdir / f"{label}-{time.monotonic_ns()}.json"
    command = [sys.executable, "bench/e2e.py", "--hosts", str(args.hosts),
               "--api-workers", str(args.api_workers), "--json", str(out)]
    environment = {**os.environ, "PYTHONPATH": str(tree / "src")}
    pids: dict[int, tuple[str, float]] = {}
    with open(workdir / f"{label}.log", "ab") as log:
        process = subprocess.Popen(command, cwd=tree, env=environment, stdout=log,
                                   stderr=subprocess.STDOUT)
        while process.poll() is None:
            # The last value seen of each process (its reaped children's not included),
            # under the role it had while it ran: a process ended but not yet reaped
            # shows no command line, which names no role.
            for pid, (role, seconds) in tree_cpu({process.pid: "other"}).items():
                known = pids.get(pid)
                pids[pid] = (known[0] if known and role == "other" else role, seconds)
            time.sleep(0.2)
    if process.returncode != 0:
        raise SystemExit(f"bench/e2e.py in {tree} exited with {process.returncode}: "
                         f"see {workdir / (label + '.log')}")
    (result,) = json.loads(out.read_text())
    cpu: dict[str, float] = {}
    for role, seconds in pids.values():
        cpu[role] = cpu.get(role, 0.0) + seconds
    return Run(label, float(result["boots_per_second"]), cpu,
               float(result.get("cpu_ms_per_boot_total", 0.0)),
               dict(result.get("cpu_ms_per_boot", {})))


def _summary(pairs: list[tuple[Run, Run]]) -> list[str]:
    base = [b.boots_per_second for b, _t in pairs]
    this = [t.boots_per_second for _b, t in pairs]
    differences = [t - b for b, t in zip(base, this, strict=True)]
    relative = statistics.mean(differences) / statistics.mean(base)
    lines = [f"base {statistics.mean(base):.1f} boots/s, this tree "
             f"{statistics.mean(this):.1f}: {relative:+.1%}"]
    if len(pairs) > 1:
        error = statistics.stdev(differences) / len(pairs) ** 0.5
        lines.append(f"mean difference {statistics.mean(differences):+.1f} boots/s, standard "
                     f"error {error:.1f} ({error / statistics.mean(base):.1%} of base)")
    per_boot = [(b.cpu_ms_per_boot, t.cpu_ms_per_boot) for b, t in pairs]
    lines.append(f"CPU ms per boot (timed burst): base "
                 f"{statistics.median(b for b, _t in per_boot):.2f}, this tree "
                 f"{statistics.median(t for _b, t in per_boot):.2f} (medians)")
    for role in sorted({r for b, t in pairs for r in (*b.cpu_ms_by_role, *t.cpu_ms_by_role)}):
        lines.append(
            f"CPU ms per boot of {role}: base "
            f"{statistics.median(b.cpu_ms_by_role.get(role, 0.0) for b, _t in pairs):.2f}, "
            f"this tree "
            f"{statistics.median(t.cpu_ms_by_role.get(role, 0.0) for _b, t in pairs):.2f}")
    for role in sorted({r for b, t in pairs for r in (*b.cpu, *t.cpu)}):
        cpu_base = statistics.mean(b.cpu.get(role, 0.0) for b, _t in pairs)
        cpu_this = statistics.mean(t.cpu.get(role, 0.0) for _b, t in pairs)
        lines.append(f"CPU s of {role}: base {cpu_base:.2f}, this tree {cpu_this:.2f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--api-workers", type=int, default=2)
    parser.add_argument("--json", metavar="FILE", help="write every run here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="e2e-pairs-") as tmp:
        workdir = Path(tmp)
        base_tree = workdir / "base"
        made = subprocess.run(["git", "worktree", "add", "--detach", str(base_tree),
                               args.base], cwd=HERE, capture_output=True, text=True)
        if made.returncode != 0:
            raise SystemExit(f"--base {args.base}: {made.stderr.strip()}")
        pairs: list[tuple[Run, Run]] = []
        try:
            print("| pair | base boots/s | this tree boots/s | base CPU s | this tree CPU s "
                  "| base CPU ms/boot | this tree CPU ms/boot |")
            print("|---:|---:|---:|---:|---:|---:|---:|")
            for number in range(1, args.pairs + 1):
                order = [("base", base_tree), ("this", HERE)]
                if number % 2 == 0:
                    order.reverse()
                runs = {label: run_once(tree, label, args, workdir) for label, tree in order}
                pairs.append((runs["base"], runs["this"]))
                print(f"| {number} | {runs['base'].boots_per_second:.0f} | "
                      f"{runs['this'].boots_per_second:.0f} | {runs['base'].cpu_total:.1f} | "
                      f"{runs['this'].cpu_total:.1f} | {runs['base'].cpu_ms_per_boot:.2f} | "
                      f"{runs['this'].cpu_ms_per_boot:.2f} |", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)],
                           cwd=HERE, capture_output=True)
        for line in _summary(pairs):
            print(line)
        if args.json:
            Path(args.json).write_text(json.dumps(
                [{"base": asdict(b), "this": asdict(t)} for b, t in pairs], indent=1))


if __name__ == "__main__":
    main()
