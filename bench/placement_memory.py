"""Placement worker memory: the worker's RSS around whole-cloud queries, as tables.

Bulk-loads N compute nodes (bench/workload.py), starts one real placement server
with one granian worker, and sends the two queries that return the whole cloud,
GET /resource_providers and an unlimited GET /allocation_candidates, a few times
each. After every call it reads the worker's resident set (what it keeps) and its
peak (what the answer cost), with the response's size and time. Two small
queries are timed before and after them, so that a change made for big answers
can be checked not to slow the common case (run it on both versions of the code).

    .venv/bin/python bench/placement_memory.py --providers 100000 --json mem.json

It is a benchmark, not a test: it prints what it saw and passes no judgement apart
from marking a call that left the worker above the issue's 1 GB bound.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from http_client import PlacementClient
from loader import load_in_bulk
from moorage.placement.launcher import PlacementProcess
from workload import providers

MB = 1024 * 1024
# The bound: no query may leave a worker above 1 GB.
BOUND_MB = 1024
# A worker frees (and may return) memory after the last byte is sent; read it after this.
SETTLE_SECONDS = 1.0
MICROVERSION = "1.39"


@dataclass(frozen=True)
class Query:
    label: str
    path: str


WHOLE_CLOUD = (
    Query("GET /resource_providers", "/resource_providers"),
    Query("GET /allocation_candidates?resources=VCPU:1", "/allocation_candidates?resources=VCPU:1"),
)
SMALL = (
    Query("GET /resource_providers?name=cn-000000", "/resource_providers?name=cn-000000"),
    Query("GET /allocation_candidates?resources=VCPU:1&limit=10",
          "/allocation_candidates?resources=VCPU:1&limit=10"),
)


@dataclass(frozen=True)
class Memory:
    """A process's resident set now and at its peak (/proc/PID/status VmRSS, VmHWM)."""

    rss_mb: float
    peak_mb: float


@dataclass(frozen=True)
class Call:
    """One whole-cloud call and the worker's memory once it had answered."""

    label: str
    number: int
    status: int
    bytes: int
    seconds: float
    rss_mb: float
    peak_mb: float


@dataclass(frozen=True)
class Timing:
    """A small query's latency, timed many times."""

    label: str
    calls: int
    bytes: int
    p50_ms: float
    p95_ms: float


# -- the worker process ----------------------------------------------------------------


def children(pid: int) -> list[int]:
    """Direct children of ``pid``, found by scanning /proc (no psutil).

    /proc/PID/task/*/children would be quicker but needs CONFIG_PROC_CHILDREN,
    which not every kernel (or sandbox) has; every /proc/PID/stat names its parent.
    """
    found: list[int] = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the process ended while we looked
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        ppid = int(text[text.rindex(")") + 2:].split()[1])
        if ppid == pid:
            found.append(int(stat.parent.name))
    return found


def descendants(pid: int) -> list[int]:
    pending, found = [pid], []
    while pending:
        for child in children(pending.pop()):
            found.append(child)
            pending.append(child)
    return found


def memory(pid: int) -> Memory:
    fields: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024  # kB
    return Memory(fields["VmRSS"], fields["VmHWM"])


def worker_pid(server_pid: int) -> int:
    """The granian worker: the launched process's descendant holding the most memory.

    The launcher runs ``moorage placement serve``, whose granian spawns the worker
    (and may spawn helpers); only the worker has loaded the provider index.
    """
    candidates = descendants(server_pid)
    if not candidates:
        raise RuntimeError(f"placement process {server_pid} has no worker process")
    return max(candidates, key=lambda pid: memory(pid).rss_mb)


# -- measuring -------------------------------------------------------------------------


def time_small(client: PlacementClient, query: Query, calls: int) -> Timing:
    reply = client.get(query.path)
    if reply.status != 200:
        raise RuntimeError(f"{query.label}: {reply.problem()}")
    samples = [client.get(query.path).seconds * 1000 for _ in range(calls)]
    quantiles = statistics.quantiles(samples, n=100, method="inclusive")
    return Timing(query.label, calls, len(reply.body), quantiles[49], quantiles[94])


def measure_whole(client: PlacementClient, query: Query, number: int, pid: int) -> Call:
    reply = client.get(query.path)
    time.sleep(SETTLE_SECONDS)
    used = memory(pid)
    return Call(query.label, number, reply.status, len(reply.body), reply.seconds,
                used.rss_mb, used.peak_mb)


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    specs = providers(args.providers)
    database_url = f"sqlite:///{workdir / 'placement.sqlite'}"
    print(f"loading {len(specs)} providers in bulk ...", flush=True)
    loaded = load_in_bulk(database_url, specs)
    server = PlacementProcess(
        workdir, database_url=database_url, workers=1,
        config={"placement": {"randomize_allocation_candidates": False}},
    )
    started = time.perf_counter()
    server.start(timeout=600)
    try:
        start_seconds = time.perf_counter() - started
        assert server.pid is not None
        pid = worker_pid(server.pid)
        at_start = memory(pid)
        print(f"worker {pid}: {at_start.rss_mb:.0f} MB after start", flush=True)
        client = PlacementClient(server.url, version=MICROVERSION)
        try:
            small = [time_small(client, q, args.small_calls) for q in SMALL]
            calls = []
            for query in WHOLE_CLOUD:
                for number in range(1, args.repeat + 1):
                    call = measure_whole(client, query, number, pid)
                    print(f"  {call.label} #{number}: {call.rss_mb:.0f} MB", flush=True)
                    calls.append(call)
            small_after = [time_small(client, q, args.small_calls) for q in SMALL]
        finally:
            client.close()
    finally:
        server.stop()
    return {
        "providers": len(specs),
        "load_seconds": loaded.seconds,
        "start_seconds": start_seconds,
        "rss_at_start_mb": at_start.rss_mb,
        "calls": [asdict(c) for c in calls],
        "small_before": [asdict(t) for t in small],
        "small_after": [asdict(t) for t in small_after],
    }


# -- reporting -------------------------------------------------------------------------


def calls_table(result: dict[str, Any]) -> str:
    lines = [
        "| query | call | status | response | time | worker RSS after | worker peak RSS |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| (after start, index loaded) | | | | | {result['rss_at_start_mb']:.0f} MB | |",
    ]
    for call in result["calls"]:
        flag = " **over 1 GB**" if call["rss_mb"] > BOUND_MB else ""
        lines.append(
            f"| {call['label']} | {call['number']} | {call['status']} | "
            f"{call['bytes'] / MB:.1f} MB | {call['seconds']:.2f} s | "
            f"{call['rss_mb']:.0f} MB{flag} | {call['peak_mb']:.0f} MB |"
        )
    return "\n".join(lines)


def small_table(result: dict[str, Any]) -> str:
    lines = [
        "| small query | response | p50 before | p95 before | p50 after | p95 after |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for before, after in zip(result["small_before"], result["small_after"], strict=True):
        lines.append(
            f"| {before['label']} | {before['bytes']} B | {before['p50_ms']:.2f} ms | "
            f"{before['p95_ms']:.2f} ms | {after['p50_ms']:.2f} ms | {after['p95_ms']:.2f} ms |"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--providers", type=int, default=100_000, help="compute nodes to load")
    parser.add_argument("--repeat", type=int, default=3, help="calls of each whole-cloud query")
    parser.add_argument("--small-calls", type=int, default=200,
                        help="timed calls of each small query (before and after the big ones)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write results here")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory (database, server log)")
    args = parser.parse_args(argv)
    if args.providers < 1 or args.repeat < 1 or args.small_calls < 2:
        parser.error("--providers and --repeat must be at least 1, --small-calls at least 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="moorage-memory-"))
    try:
        result = run(args, workdir)
    finally:
        if args.keep:
            print(f"work directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    date = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    print()
    print(f"## Placement worker memory, N={result['providers']} providers "
          f"(microversion {MICROVERSION}, 1 worker, {date})")
    print()
    print(f"bulk load {result['load_seconds']:.1f} s; server answered after "
          f"{result['start_seconds']:.1f} s; RSS read {SETTLE_SECONDS:.0f} s after each answer")
    print()
    print(calls_table(result))
    print()
    print(small_table(result))
    if args.json:
        document = {
            "benchmark": "placement_memory",
            "date": date,
            "machine": {"python": platform.python_version(), "platform": platform.platform(),
                        "cpus": os.cpu_count()},
            "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            **result,
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")
        print(f"\nresults written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
