"""End to end: boots per second through the whole path, at 100, 1,000 and 10,000 hosts.

For each size it starts the real services as separate processes, as an operator runs
them: placement (``moorage placement serve``, candidates randomized), the compute API
(``moorage api serve``, granian, with its conductor in each of ``--api-workers``
processes) and a fleet of N simulated fake hosts (``moorage compute fleet``), all on
SQLite in a temporary directory or on PostgreSQL (``--db``). Both prefilters are on
and the image asks for ``hw_vif_model=virtio`` and ``disk_format=raw``. Then
``--clients`` threads each create a server and wait for it to be ACTIVE (or ERROR),
over and over, until ``--boots`` boots are done. A single watcher
(``moorage.run.watcher``, as ``moorage run`` uses) polls ``GET
/servers/detail?changes-since=...&status=ACTIVE&status=ERROR...`` (what came to rest
since its last poll) and wakes the waiting clients, as a dashboard would, rather than
every client polling its own server.

It prints a table (and writes JSON): boots/s, create-to-ACTIVE latency, the
scheduler's own time per decision (``moorage:scheduling.seconds``, claim
included), the registration of the fleet, and the CPU milliseconds per boot over
the timed burst (user + system, from /proc; ``cpu.py``) of every process of the run
by role and in total, with how busy the machine was. CPU per boot is the figure to
optimise: it does not depend on the machine's speed or load, where boots/s does. A
run in which processes outside it used more than 5% of the machine is marked
"disturbed" (its boots/s is not comparable). After every run it checks the
cloud: every ACTIVE server holds exactly one allocation, on its host's provider;
no server in ERROR holds any; no provider is allocated past its capacity; and the
touched providers' usages are exactly the servers' allocations (nothing orphaned).

    .venv/bin/python bench/e2e.py --hosts 100,1000,10000 --api-workers 1,2 \\
        [--db postgresql://USER@HOST/postgres] --json bench/results/e2e.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
import uuid as uuidlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import requests
import sqlalchemy as sa

from burst_profile import BurstProfile
from cpu import CpuUse, CpuWindow, postgresql_roots
from moorage.api.client import ComputeApiClient, ComputeApiError
from moorage.api.launcher import ComputeApiProcess, ConductorProcess, FleetProcess
from moorage.placement.launcher import PlacementProcess
from moorage.placement.provider_names import provider_uuid
from moorage.run.watcher import ServerWatcher

# Asked as Moorage's own client asks: the newest compute microversion, with Moorage's
# additions (the scheduling record read below).
TOKEN = {"X-Auth-Token": "admin", "OpenStack-API-Version": "compute 2.100",
         "Moorage-Additions": "1"}
# The warm-up's servers are named apart from the timed ones (vm-N).
WARMUP = "warmup-"


@dataclass
class RunResult:
    hosts: int
    database: str
    api_workers: int
    clients: int
    boots: int
    active: int
    error: int
    seconds: float
    boots_per_second: float
    latency_p50_ms: float
    latency_p95_ms: float
    scheduling_p50_ms: float
    scheduling_p95_ms: float
    registration_seconds: float
    checks: list[str] = field(default_factory=list)
    # CPU milliseconds per timed boot, by role (placement, api, conductor, fleet,
    # client, postgresql), and the machine over the burst.
    cpu_ms_per_boot: dict[str, float] = field(default_factory=dict)
    cpu_ms_per_boot_total: float = 0.0
    machine_busy: float = 0.0
    others_share: float = 0.0
    disturbed: bool = False
    # CPU milliseconds per second by role while nothing boots (``--idle`` seconds after
    # the warm-up, the watcher still polling): what the cloud costs whatever it does.
    idle_cpu_ms_per_second: dict[str, float] = field(default_factory=dict)

    @property
    def consistent(self) -> bool:
        return not self.checks


def percentile(samples: Sequence[float], pct: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))]


@contextlib.contextmanager
def databases(db: str | None, names: Sequence[str], workdir: Path) -> Iterator[list[str]]:
    """A fresh database per service: SQLite files, or PostgreSQL databases dropped after."""
    if db is None:
        yield [f"sqlite:///{workdir / f'{name}.sqlite'}" for name in names]
        return
    admin = sa.create_engine(db.replace("postgresql://", "postgresql+psycopg://", 1),
                             isolation_level="AUTOCOMMIT")
    made = [f"moorage_e2e_{name}_{uuidlib.uuid4().hex[:8]}" for name in names]
    try:
        with admin.connect() as conn:
            for name in made:
                conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        base = sa.engine.make_url(db)
        yield [base.set(database=name).render_as_string(hide_password=False)
               for name in made]
    finally:
        with admin.connect() as conn:
            for name in made:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def fleet_file(path: Path, hosts: int) -> Path:
    path.write_text(f"""name: e2e
host_groups:
  - name: kvm
    count: {hosts}
    driver: fake
    capacity: {{vcpus: 64, memory_mb: 262144, disk_gb: 4000}}
    traits: [COMPUTE_NET_VIF_MODEL_VIRTIO, COMPUTE_NET_VIF_MODEL_E1000]
    image_types: [raw, qcow2]
""")
    return path


def boot_all(api_url: str, flavor: str, image: str, boots: int, clients: int,
             watcher: ServerWatcher, prefix: str) -> tuple[float, list[float], list[str]]:
    """``boots`` creates by ``clients`` threads, each waiting for its server."""
    next_index = iter(range(boots))
    index_lock = threading.Lock()
    latencies: list[float] = []
    problems: list[str] = []

    def client() -> None:
        api = ComputeApiClient(api_url, "admin", timeout=120)
        while True:
            with index_lock:
                index = next(next_index, None)
            if index is None:
                return
            started = time.perf_counter()
            try:
                uuid = str(api.create_server(f"{prefix}{index}", flavor, image)["id"])
            except ComputeApiError as exc:
                problems.append(f"create {index}: {exc}")
                continue
            try:
                watcher.wait(uuid, 300)
            except TimeoutError as exc:
                problems.append(str(exc))
                continue
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, latencies, problems


def check(api_url: str, placement_url: str, servers: Sequence[dict[str, Any]]) -> list[str]:
    """What is wrong with the cloud after the run (nothing, we hope)."""
    problems: list[str] = []
    headers = {**TOKEN, "OpenStack-API-Version": "placement 1.39"}
    session = requests.Session()
    session.headers.update(headers)
    by_provider: dict[str, dict[str, int]] = {}
    for server in servers:
        held = session.get(f"{placement_url}/allocations/{server['id']}",
                           timeout=60).json()["allocations"]
        if server["status"] == "ACTIVE":
            expected = provider_uuid(server["OS-EXT-SRV-ATTR:hypervisor_hostname"])
            if list(held) != [expected]:
                problems.append(f"ACTIVE server {server['id']} holds {sorted(held)}, not "
                                f"exactly its host's provider {expected}")
        elif held:
            problems.append(f"{server['status']} server {server['id']} holds {sorted(held)}")
        for rp, allocation in held.items():
            for rc, amount in allocation["resources"].items():
                by_provider.setdefault(rp, {})[rc] = by_provider.setdefault(rp, {}).get(
                    rc, 0) + int(amount)
    for rp, summed in by_provider.items():
        inventories = session.get(f"{placement_url}/resource_providers/{rp}/inventories",
                                  timeout=60).json()["inventories"]
        usages = session.get(f"{placement_url}/resource_providers/{rp}/usages",
                             timeout=60).json()["usages"]
        for rc, used in usages.items():
            if used != summed.get(rc, 0):
                problems.append(f"provider {rp} uses {used} {rc}; its servers hold "
                                f"{summed.get(rc, 0)}")
            inventory = inventories[rc]
            capacity = (inventory["total"] - inventory["reserved"]) * inventory[
                "allocation_ratio"]
            if used > capacity:
                problems.append(f"provider {rp} over-allocated: {used} {rc} of {capacity}")
    return problems


def all_servers(api_url: str) -> list[dict[str, Any]]:
    session = requests.Session()
    session.headers.update(TOKEN)
    found: list[dict[str, Any]] = []
    marker = None
    while True:
        params = {"all_tenants": "1", "limit": "1000", **({"marker": marker} if marker else {})}
        page = session.get(api_url + "/v2.1/servers/detail", params=params,
                           timeout=120).json()["servers"]
        found.extend(page)
        if len(page) < 1000:
            return found
        marker = page[-1]["id"]


# The compute API's, the conductors' and the fleet's [DEFAULT] service_token.
SERVICE_TOKEN = "e2e-bench-token"


def api_config(args: argparse.Namespace) -> dict[str, dict[str, object]]:
    """Both prefilters on; heartbeats seldom (the fleet beats in one request anyway);
    quotas enforced with limits no run reaches."""
    return {
        "scheduler": {"image_metadata_prefilter": True,
                      "query_placement_for_image_type_support": True},
        "conductor": {"workers": args.conductor_workers,
                      "run_in_api": not args.conductors},
        "DEFAULT": {"service_down_time": 600, "report_interval": 30,
                    "service_token": SERVICE_TOKEN},
        # Enforced, so that every boot pays for its quota check (the project locked,
        # its limits read, its live servers counted), but never refused.
        "quota": {"instances": 10_000_000, "cores": 100_000_000, "ram": 10**12},
    }


def run(hosts: int, api_workers: int, args: argparse.Namespace, workdir: Path) -> RunResult:
    label = "postgresql" if args.db else "sqlite"
    placement_config: dict[str, dict[str, object]] = {
        "placement": {"randomize_allocation_candidates": True}}
    if args.placement_threads:
        placement_config["placement_server"] = {"threads": args.placement_threads}
    with contextlib.ExitStack() as stack:
        placement_db, api_db = stack.enter_context(
            databases(args.db, ["placement", "api"], workdir))
        placement = stack.enter_context(PlacementProcess(
            workdir / "placement", database_url=placement_db, config=placement_config,
            workers=args.placement_workers))
        api = ComputeApiProcess(workdir / "api", placement_url=placement.url,
                                database_url=api_db, workers=api_workers,
                                config=api_config(args))
        api.start()
        stack.callback(api.stop)
        for number in range(args.conductors):
            conductor = ConductorProcess(workdir / f"conductor{number}", api.config_file,
                                         name=f"conductor{number}")
            conductor.start()
            stack.callback(conductor.stop)
        fleet = FleetProcess(workdir / "fleet", fleet_file(workdir / "fleet.yaml", hosts),
                             placement_url=placement.url, api_url=api.url,
                             config={"DEFAULT": {"report_interval": 30,
                                                 "service_token": SERVICE_TOKEN}})
        registering = time.perf_counter()
        fleet.start(timeout=600)
        stack.callback(fleet.stop)
        registered = time.perf_counter() - registering
        session = requests.Session()
        session.headers.update(TOKEN)
        base = api.url + "/v2.1"
        deadline = time.monotonic() + 120
        while len(session.get(base + "/os-services", timeout=60).json()["services"]) < hosts:
            if time.monotonic() > deadline:
                raise RuntimeError("the fleet's hosts did not all register")
            time.sleep(0.5)
        flavor = session.post(base + "/flavors", json={"flavor": {
            "name": "small", "vcpus": 1, "ram": 512, "disk": 1}}).json()["flavor"]["id"]
        # The image service: glance v2 at /image on the same listener.
        image = session.post(api.url + "/image/v2/images", json={
            "name": "virtio", "disk_format": "raw", "container_format": "bare",
            "visibility": "public", "hw_vif_model": "virtio"}).json()["id"]
        watcher = ServerWatcher(api.url, interval=args.poll).start()
        try:
            boot_all(api.url, flavor, image, args.warmup, args.clients, watcher, WARMUP)
            idle = idle_cpu(args.idle, args.db)
            roots = {os.getpid(): "client", **(postgresql_roots() if args.db else {})}
            profile = (BurstProfile(args.profile / f"{hosts}-{api_workers}").start(roots)
                       if args.profile else None)
            window = CpuWindow(roots).start()
            seconds, latencies, problems = boot_all(api.url, flavor, image, args.boots,
                                                    args.clients, watcher, "vm-")
            used = window.stop()
            if profile:
                profile.stop()
                print(profile.report(), file=sys.stderr)
        finally:
            watcher.stop()
        servers = all_servers(api.url)
        problems += check(api.url, placement.url, servers)
    timed = [s for s in servers if not s["name"].startswith(WARMUP)]
    scheduling = [float(s["moorage:scheduling"]["seconds"]) * 1000 for s in timed
                  if s["moorage:scheduling"].get("seconds") is not None]
    active = sum(1 for s in timed if s["status"] == "ACTIVE")
    return RunResult(
        hosts=hosts, database=label, api_workers=api_workers, clients=args.clients,
        boots=len(latencies), active=active, error=len(timed) - active,
        seconds=seconds, boots_per_second=len(latencies) / seconds,
        latency_p50_ms=percentile(latencies, 50) * 1000,
        latency_p95_ms=percentile(latencies, 95) * 1000,
        scheduling_p50_ms=percentile(scheduling, 50),
        scheduling_p95_ms=percentile(scheduling, 95),
        registration_seconds=registered, checks=problems[:20],
        idle_cpu_ms_per_second=idle, **cpu_fields(used, len(latencies)))


def idle_cpu(seconds: float, postgresql: bool) -> dict[str, float]:
    """CPU milliseconds per second of each role over ``seconds`` in which nothing
    boots: heartbeats, periodic syncs, the watcher's polls. Such a cost is per second,
    not per boot, so it weighs more on a boot the slower boots come."""
    if seconds <= 0:
        return {}
    window = CpuWindow({os.getpid(): "client", **(postgresql_roots() if postgresql else {})})
    window.start()
    time.sleep(seconds)
    used = window.stop()
    return {role: round(spent * 1000 / seconds, 1)
            for role, spent in sorted(used.by_role.items())}


def cpu_fields(used: CpuUse, boots: int) -> dict[str, Any]:
    per_boot = used.per_boot_ms(max(1, boots))
    return {"cpu_ms_per_boot": {role: round(ms, 3) for role, ms in sorted(per_boot.items())},
            "cpu_ms_per_boot_total": round(sum(per_boot.values()), 3),
            "machine_busy": round(used.busy, 3), "others_share": round(used.others, 3),
            "disturbed": used.disturbed}


def table(results: Sequence[RunResult]) -> str:
    lines = ["| hosts | database | API processes | boots | boots/s | create to ACTIVE p50 / "
             "p95 ms | scheduling p50 / p95 ms | fleet start s | checks |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        lines.append(
            f"| {r.hosts:,} | {r.database} | {r.api_workers} | {r.boots:,} | "
            f"**{r.boots_per_second:.0f}** | {r.latency_p50_ms:.0f} / {r.latency_p95_ms:.0f} | "
            f"{r.scheduling_p50_ms:.1f} / {r.scheduling_p95_ms:.1f} | "
            f"{r.registration_seconds:.0f} | "
            f"{'ok' if r.consistent else f'{len(r.checks)} FAILED'} |")
    return "\n".join(lines)


def cpu_table(results: Sequence[RunResult]) -> str:
    """CPU milliseconds per boot over the timed burst, by role, and the machine."""
    roles = sorted({role for r in results for role in r.cpu_ms_per_boot})
    lines = ["| hosts | database | API processes | CPU ms per boot | "
             + " | ".join(roles) + " | machine busy | others | run |",
             "|---:|---|---:|---:|" + "---:|" * len(roles) + "---:|---:|---|"]
    for r in results:
        lines.append(
            f"| {r.hosts:,} | {r.database} | {r.api_workers} | "
            f"**{r.cpu_ms_per_boot_total:.2f}** | "
            + " | ".join(f"{r.cpu_ms_per_boot.get(role, 0.0):.2f}" for role in roles)
            + f" | {r.machine_busy:.0%} | {r.others_share:.0%} | "
            f"{'DISTURBED' if r.disturbed else 'quiet'} |")
    return "\n".join(lines)


def idle_table(results: Sequence[RunResult]) -> str:
    """CPU milliseconds per second while idle, by role."""
    roles = sorted({role for r in results for role in r.idle_cpu_ms_per_second})
    lines = ["| hosts | database | API processes | idle CPU ms per second | "
             + " | ".join(roles) + " |",
             "|---:|---|---:|---:|" + "---:|" * len(roles)]
    for r in results:
        idle = r.idle_cpu_ms_per_second
        lines.append(f"| {r.hosts:,} | {r.database} | {r.api_workers} | "
                     f"**{sum(idle.values()):.0f}** | "
                     + " | ".join(f"{idle.get(role, 0.0):.0f}" for role in roles) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="100,1000,10000")
    parser.add_argument("--api-workers", default="1,2",
                        help="compute API processes to try, comma-separated (default 1,2)")
    parser.add_argument("--boots", type=int, default=3000, help="boots timed per run")
    parser.add_argument("--warmup", type=int, default=100, help="boots before timing")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--placement-workers", type=int, default=1,
                        help="placement processes (default 1)")
    parser.add_argument("--placement-threads", type=int, default=0,
                        help="request threads per placement process (default: "
                        "[placement_server] threads' default)")
    parser.add_argument("--conductors", type=int, default=0,
                        help="separate conductor processes (the API processes then run "
                        "none; default 0: a conductor in each API process)")
    parser.add_argument("--conductor-workers", type=int, default=16,
                        help="[conductor] workers of each API process (default 16)")
    parser.add_argument("--poll", type=float, default=0.02,
                        help="seconds between the watcher's polls (default 0.02)")
    parser.add_argument("--idle", type=float, default=10.0,
                        help="seconds after the warm-up in which nothing boots, to measure "
                        "the CPU the cloud uses idle (default 10; 0: none)")
    parser.add_argument("--db", metavar="URL",
                        help="a PostgreSQL server URL whose user may CREATE DATABASE "
                        "(default: SQLite files)")
    parser.add_argument("--json", metavar="PATH", help="write the results here")
    parser.add_argument("--keep", metavar="DIR", help="run in DIR and keep the services' "
                        "logs and databases there (default: a temporary directory)")
    parser.add_argument("--profile", metavar="DIR", type=Path,
                        help="py-spy each service over the timed burst only, keep the raw "
                        "stacks in DIR and print where each role's samples went (the "
                        "py-spy sampling costs CPU, so such a run's figures do not count)")
    args = parser.parse_args(argv)
    results: list[RunResult] = []
    for hosts in (int(h) for h in args.hosts.split(",") if h):
        for workers in (int(w) for w in args.api_workers.split(",") if w):
            if args.keep:
                workdir = Path(args.keep) / f"{hosts}-hosts-{workers}-api"
                workdir.mkdir(parents=True, exist_ok=True)
                result = run(hosts, workers, args, workdir)
            else:
                with tempfile.TemporaryDirectory(prefix="moorage-e2e-") as tmp:
                    result = run(hosts, workers, args, Path(tmp))
            results.append(result)
            print(f"{hosts} hosts, {workers} API processes, {result.database}: "
                  f"{result.boots_per_second:.0f} boots/s, "
                  f"{result.cpu_ms_per_boot_total:.2f} CPU ms per boot"
                  + (f" (DISTURBED: others used {result.others_share:.0%} of the machine)"
                     if result.disturbed else "")
                  + ("" if result.consistent else f"; CHECKS FAILED: {result.checks}"),
                  file=sys.stderr, flush=True)
    print(table(results))
    print()
    print(cpu_table(results))
    if any(r.idle_cpu_ms_per_second for r in results):
        print()
        print(idle_table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(
            [{**asdict(r), "consistent": r.consistent} for r in results], indent=2))
    return 0 if all(r.consistent for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
