"""select_destinations at 100, 1,000 and 10,000 hosts: the scheduler's own cost.

For each size it loads N compute nodes into a real placement server (bulk, before the
server starts: the upstream benchmark's seeded traits, provider uuids derived from the
host names as the compute agents derive them), records N compute services in a
compute API database as their heartbeats would, and times
``Scheduler.select_destinations`` for one boot request with both prefilters on
(image ``disk_format=qcow2, hw_vif_model=virtio``: about a quarter of the hosts
qualify), claim included; placement randomizes its candidates, and the scheduler's
``[scheduler] placement_sample_size`` is at its default. The claim is released after
each call (untimed), so every call sees the same cloud. Besides the time per call it
prints this process's CPU per call (the scheduler and its placement client; placement
runs in its own process): what scheduling a boot costs the compute API, without the
noise of waiting. ``--profile`` writes a pyinstrument profile per size.

``--replay N`` adds the scheduler's CPU per call after placement has answered: N of
placement's candidates answers are recorded, then replayed to the same calls with no
HTTP and no claim written, so the figure is the scheduler's own work from the
answer's bytes to the chosen host (the JSON decoded, the answer converted, the host
filters, the weighers, the recorded decisions), steadier than the CPU of a call
that waits for placement.

    .venv/bin/python bench/scheduler_bench.py --hosts 100,1000,10000 [--db postgresql://...]
        [--replay 20]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson
from oslo_config import cfg

from loader import load_in_bulk
from moorage.api.catalog import ApiCatalog
from moorage.api.storage import migration as api_migration
from moorage.api.storage.services import Heartbeat, record_heartbeats
from moorage.conf import load_config
from moorage.db.database import Database
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.placement.client import PlacementClient
from moorage.placement.launcher import PlacementProcess
from moorage.placement.provider_names import provider_uuid
from moorage.scheduler.manager import Scheduler
from moorage.scheduler.types import RequestSpec
from workload import ProviderSpec, providers


@dataclass
class SizeResult:
    hosts: int
    calls: int
    p50_ms: float
    p95_ms: float
    mean_ms: float
    candidates: int
    hosts_passing_filters: int
    # The CPU of this process (the scheduler and its placement client; placement runs
    # in its own) per call, the median: what a boot costs the compute API to schedule.
    cpu_p50_ms: float
    # --replay: the CPU per call with placement's answers replayed (no HTTP, no claim),
    # the median of the batches; None without it.
    replayed_cpu_us: float | None = None


def percentile(samples: Sequence[float], pct: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))
    return ordered[index]


def host_specs(count: int) -> list[ProviderSpec]:
    """The seeded workload, named and identified as compute agents name their nodes."""
    return [ProviderSpec(provider_uuid(f"host-{i:06d}"), f"host-{i:06d}", spec.traits)
            for i, spec in enumerate(providers(count))]


def record_services(db: Database, specs: Sequence[ProviderSpec]) -> None:
    """One compute service per host, as its first heartbeat records it."""
    beats = [Heartbeat(host=s.name, binary="nova-compute", driver="fake", nodes=[s.name],
                       agent_url=None, supported_instances=[("x86_64", "qemu", "hvm")],
                       hypervisor_version=7002000, version="bench") for s in specs]
    with db.writer() as writer:
        record_heartbeats(writer.conn, beats)


def boot_request(index: int) -> RequestSpec:
    flavor = Flavor("bench", vcpus=2, memory_mb=4096, root_gb=20)
    image = Image.create("bench-image", "bench", disk_format="qcow2",
                         properties={"hw_vif_model": "virtio"})
    return RequestSpec(instance_uuid=str(uuidlib.UUID(int=index + 1)), project_id="bench",
                       user_id="bench", flavor=flavor, image=image)


class RecordingPlacement(PlacementClient):
    """A placement client keeping the raw bytes of the candidates answers it reads."""

    def __init__(self, url: str, token: str) -> None:
        super().__init__(url, token)
        self.answers: list[bytes] = []

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        body = super().request(method, path, **kwargs)
        if method == "GET" and path == "/allocation_candidates":
            self.answers.append(orjson.dumps(body))
        return body


class ReplayedPlacement(PlacementClient):
    """Recorded candidates answers given again, in turn, decoded from their bytes as
    the client decodes placement's; every claim succeeds without being written."""

    def __init__(self, url: str, token: str, answers: Sequence[bytes]) -> None:
        super().__init__(url, token)
        self._answers = itertools.cycle(answers)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        if method == "GET" and path == "/allocation_candidates":
            return orjson.loads(next(self._answers))
        return super().request(method, path, **kwargs)

    def claim_new(self, consumer_uuid: str,
                  allocation_request: Mapping[str, Mapping[str, int]], project_id: str,
                  user_id: str) -> bool | None:
        return True


def replayed_cpu(conf: cfg.ConfigOpts, api_db: Database, url: str, answers: Sequence[bytes],
                 calls: int) -> float:
    """CPU µs per select_destinations against replayed answers: the median of five
    batches of ``calls``."""
    scheduler = Scheduler(conf, ReplayedPlacement(url, "admin", answers),
                          ApiCatalog(api_db, 3600.0))
    for call in range(200):
        scheduler.select_destinations(boot_request(call))
    batches = []
    for _ in range(5):
        started = time.process_time()
        for call in range(calls):
            scheduler.select_destinations(boot_request(call))
        batches.append((time.process_time() - started) / calls * 1e6)
    return statistics.median(batches)


def run_size(count: int, args: argparse.Namespace, workdir: Path) -> SizeResult:
    specs = host_specs(count)
    placement_url = f"sqlite:///{workdir / f'placement-{count}.sqlite'}"
    load_in_bulk(placement_url, specs)
    api_db = Database(args.api_db or f"sqlite:///{workdir / f'api-{count}.sqlite'}")
    api_migration.upgrade(api_db)
    record_services(api_db, specs)
    conf = load_config([], [
        ("scheduler", "image_metadata_prefilter", True),
        ("scheduler", "query_placement_for_image_type_support", True),
        ("DEFAULT", "service_down_time", 3600),
    ])
    # Random candidates, as the scheduler's sample option recommends for a large cloud.
    with PlacementProcess(workdir / f"placement-{count}", database_url=placement_url,
                          config={"placement": {"randomize_allocation_candidates": True}}
                          ) as server:
        client = RecordingPlacement(server.url, "admin")
        scheduler = Scheduler(conf, client, ApiCatalog(api_db, 3600.0))
        samples: list[float] = []
        cpu: list[float] = []
        last = None
        profiler = None
        for call in range(args.warmups + args.calls):
            if call == args.warmups and args.profile:
                from pyinstrument import Profiler
                profiler = Profiler(interval=0.0002)
                profiler.start()
            spec = boot_request(call)
            started, started_cpu = time.perf_counter(), time.process_time()
            last = scheduler.select_destinations(spec)
            elapsed = time.perf_counter() - started
            used = time.process_time() - started_cpu
            if call >= args.warmups:
                samples.append(elapsed)
                cpu.append(used)
            scheduler.placement.delete_allocations(spec.instance_uuid)
        if profiler is not None:
            profiler.stop()
            out = Path(args.profile) / f"select_destinations-{count}.html"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(profiler.output_html())
            print(profiler.output_text(unicode=False, color=False, show_all=False)[:6000],
                  file=sys.stderr)
        replayed = (replayed_cpu(conf, api_db, server.url, client.answers[-args.replay:],
                                 args.calls) if args.replay else None)
    api_db.dispose()
    assert last is not None
    ms = [s * 1000 for s in samples]
    return SizeResult(count, len(ms), statistics.median(ms), percentile(ms, 95),
                      statistics.fmean(ms), last.candidates, last.hosts_passing_filters,
                      statistics.median(cpu) * 1000, replayed)


def table(results: Sequence[SizeResult]) -> str:
    replayed = any(r.replayed_cpu_us is not None for r in results)
    lines = ["| hosts | p50 ms | p95 ms | mean ms | scheduler CPU p50 ms | candidates "
             "| passing host filters |" + (" CPU µs, answers replayed |" if replayed else ""),
             "|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if replayed else "")]
    lines += [f"| {r.hosts:,} | {r.p50_ms:.2f} | {r.p95_ms:.2f} | {r.mean_ms:.2f} | "
              f"{r.cpu_p50_ms:.2f} | {r.candidates:,} | {r.hosts_passing_filters:,} |"
              + (f" {r.replayed_cpu_us:,.0f} |" if r.replayed_cpu_us is not None
                 else " |" if replayed else "")
              for r in results]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="100,1000,10000",
                        help="comma-separated sizes (default 100,1000,10000)")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmups", type=int, default=20)
    parser.add_argument("--api-db", help="compute API database URL (default: SQLite in a "
                        "temporary directory); must be empty")
    parser.add_argument("--profile", metavar="DIR", help="write pyinstrument profiles here")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    parser.add_argument("--replay", type=int, default=0, metavar="N",
                        help="also time the scheduler on N recorded candidates answers "
                        "replayed (no HTTP, no claim)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.hosts.split(",") if s]
    results = []
    with tempfile.TemporaryDirectory(prefix="moorage-sched-bench-") as tmp:
        for count in sizes:
            result = run_size(count, args, Path(tmp))
            results.append(result)
            print(f"{count} hosts: p50 {result.p50_ms:.2f} ms, p95 {result.p95_ms:.2f} ms",
                  file=sys.stderr)
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
