"""Placement benchmark: scheduler queries and claims against N compute nodes, as tables.

For each N it loads the workload (bench/workload.py) into a fresh Moorage server and,
with ``--with-upstream`` and N <= 5000, into upstream openstack-placement 16.0.0, then
times every operation on each service in turn (interleaved, same run, same client) and
prints p50/p95, result counts and response sizes. An operation a service cannot do yet
is reported as failed with its HTTP status, never as a time.

    .venv/bin/python bench/placement_bench.py --providers 1000,10000,100000
    .venv/bin/python bench/placement_bench.py --providers 1000,5000 --with-upstream --json r.json

See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import http.client
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import upstream
from http_client import PlacementClient, Reply
from loader import LoadError, LoadResult, load_in_bulk, load_over_http
from moorage.db.engine import normalize_url
from moorage.placement.launcher import PlacementProcess
from workload import (
    BIGGER_FLAVOR,
    FLAVOR,
    MICROVERSION,
    READ_QUERIES,
    SCHEDULE_PATH,
    TARGET_QUERY,
    ProviderSpec,
    ReadQuery,
    providers,
)

MOORAGE = "moorage"
UPSTREAM = "upstream"
HTTP_LOADER_MAX = 10_000
UPSTREAM_MAX = 5_000
PROJECT_ID = "4d3a1c3e-bench-project"
USER_ID = "7f0e2b9a-bench-user"

# The goals.
GOAL_P50_AT_100K_MS = 50.0
GOAL_SPEEDUP_AT_5K = 25.0
GOAL_CLAIM_P50_MS = 3.0

NOT_MEASURED = "not measured"
CLAIM_NEW = "claim_new"
CLAIM_GET = "claim_get"
CLAIM_REPLACE = "claim_replace"
CLAIM_STALE = "claim_stale"
CYCLE = "schedule_claim"
LABELS: dict[str, str] = {
    **{q.key: q.label for q in READ_QUERIES},
    CLAIM_NEW: "PUT /allocations/{c} new consumer (gen=null, consumer_type)",
    CLAIM_GET: "GET /allocations/{c}",
    CLAIM_REPLACE: "PUT /allocations/{c} replace with consumer_generation",
    CLAIM_STALE: "PUT /allocations/{c} stale consumer_generation (must be 409)",
    CYCLE: "schedule+claim cycle (GET a/c AVX2 limit=10 + PUT)",
}


# -- results ---------------------------------------------------------------------------


@dataclass
class Row:
    """One operation timed on one service in one pass."""

    key: str
    target: str
    samples_ms: list[float] = field(default_factory=list)
    error: str | None = None
    count: int | None = None
    expected: int | None = None
    size: int | None = None
    note: str | None = None

    @property
    def p50(self) -> float | None:
        return percentile(self.samples_ms, 50) if self.samples_ms and not self.error else None

    @property
    def p95(self) -> float | None:
        return percentile(self.samples_ms, 95) if self.samples_ms and not self.error else None


def percentile(samples: Sequence[float], pct: int) -> float:
    """Linear-interpolated percentile (the median for 50)."""
    if len(samples) == 1:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[pct - 1]


@dataclass
class Setup:
    """How one service got its providers and how long it took to answer after launch."""

    target: str
    loader: str
    providers: int
    seconds: float | None
    rate: float | None
    start_seconds: float | None
    error: str | None = None


@dataclass
class SizeRun:
    providers: int
    backend: str
    setups: list[Setup]
    passes: list[list[Row]]


# -- services under test ----------------------------------------------------------------


@dataclass
class Target:
    """One running, loaded service and the client that talks to it."""

    name: str
    client: PlacementClient
    specs: Sequence[ProviderSpec]
    # Claims go to providers in turn, so no provider fills up.
    next_provider: int = 0

    def provider_for_claim(self) -> str:
        spec = self.specs[self.next_provider % len(self.specs)]
        self.next_provider += 1
        return spec.uuid


@contextlib.contextmanager
def fresh_database(db: str, workdir: Path) -> Iterator[str]:
    """An empty database: a SQLite file in ``workdir``, or a new PostgreSQL database."""
    workdir.mkdir(parents=True, exist_ok=True)
    if db == "sqlite":
        yield f"sqlite:///{workdir / 'placement.sqlite'}"
        return
    admin = sa.create_engine(normalize_url(db), isolation_level="AUTOCOMMIT")
    name = f"moorage_bench_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield sa.engine.make_url(normalize_url(db)).set(database=name).render_as_string(
            hide_password=False
        )
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def _start_moorage(
    stack: contextlib.ExitStack, workdir: Path, database_url: str, args: argparse.Namespace
) -> tuple[PlacementProcess, float]:
    """Launch a Moorage server (stopped with ``stack``); seconds until it answered."""
    config: dict[str, dict[str, object]] = {
        "placement": {"randomize_allocation_candidates": False}
    }
    for section, option, value in args.server_option:
        config.setdefault(section, {})[option] = value
    server = PlacementProcess(workdir, database_url=database_url, workers=args.workers,
                              config=config)
    started = time.perf_counter()
    stack.callback(server.stop)
    server.start(timeout=600)
    return server, time.perf_counter() - started


@contextlib.contextmanager
def moorage_target(
    specs: Sequence[ProviderSpec], args: argparse.Namespace, workdir: Path, setups: list[Setup]
) -> Iterator[Target]:
    """A Moorage server holding ``specs``, loaded over HTTP or in bulk as ``--loader`` says.

    When the HTTP loader fails (an endpoint is not there yet), the failure is recorded
    and the providers are bulk-loaded into a new database so the reads can still be timed.
    """
    loader = args.loader
    if loader == "auto":
        loader = "http" if len(specs) <= HTTP_LOADER_MAX else "bulk"
    if loader == "http":
        with contextlib.ExitStack() as stack:
            database_url = stack.enter_context(fresh_database(args.db, workdir / "http"))
            server, start_seconds = _start_moorage(stack, workdir / "http", database_url, args)
            try:
                result = load_over_http(server.url, specs, args.load_threads)
            except LoadError as exc:
                setups.append(Setup(MOORAGE, "http", len(specs), None, None, start_seconds,
                                    f"FAILED: {exc}"))
                print(f"  moorage: HTTP loader failed ({exc}); loading in bulk instead",
                      flush=True)
            else:
                setups.append(_setup(MOORAGE, result, start_seconds))
                yield _target(MOORAGE, server.url, specs, stack)
                return
    with contextlib.ExitStack() as stack:
        database_url = stack.enter_context(fresh_database(args.db, workdir / "bulk"))
        result = load_in_bulk(database_url, specs)
        server, start_seconds = _start_moorage(stack, workdir / "bulk", database_url, args)
        setups.append(_setup(MOORAGE, result, start_seconds))
        yield _target(MOORAGE, server.url, specs, stack)


@contextlib.contextmanager
def upstream_target(
    specs: Sequence[ProviderSpec], args: argparse.Namespace, workdir: Path, setups: list[Setup]
) -> Iterator[Target | None]:
    """Upstream placement holding ``specs`` (always loaded over HTTP), or None if it failed.

    Its start time includes ``placement-manage db sync`` on the empty database.
    """
    venv = upstream.ensure_venv(args.upstream_venv)
    with contextlib.ExitStack() as stack:
        server = upstream.UpstreamPlacement(venv, workdir / "upstream")
        started = time.perf_counter()
        stack.enter_context(server)
        start_seconds = time.perf_counter() - started
        try:
            result = load_over_http(server.url, specs, args.load_threads)
        except LoadError as exc:
            setups.append(Setup(UPSTREAM, "http", len(specs), None, None, start_seconds,
                                f"FAILED: {exc}"))
            yield None
            return
        setups.append(_setup(UPSTREAM, result, start_seconds))
        yield _target(UPSTREAM, server.url, specs, stack)


def _setup(target: str, result: LoadResult, start_seconds: float | None) -> Setup:
    return Setup(target, result.describe(), result.providers, result.seconds, result.rate,
                 start_seconds)


def _target(name: str, url: str, specs: Sequence[ProviderSpec],
            stack: contextlib.ExitStack) -> Target:
    client = PlacementClient(url)
    stack.callback(client.close)
    return Target(name, client, specs)


# -- timed operations ---------------------------------------------------------------------


def time_read(target: Target, warmups: int, calls: int, *, query: ReadQuery) -> Row:
    """Warm up (the first call also checks the status), then time ``calls`` GETs."""
    row = Row(query.key, target.name, expected=query.expected(target.specs))
    last: Reply | None = None
    for i in range(warmups + calls):
        reply = target.client.get(query.path)
        if reply.status != 200:
            row.error = reply.problem() if i == 0 else f"{reply.problem()} (call {i + 1})"
            return row
        if i >= warmups:
            row.samples_ms.append(reply.seconds * 1000)
        last = reply
    if last is not None:
        row.count = len(last.json()[query.collection])
        row.size = len(last.body)
    return row


def _claim_body(provider_uuid: str, resources: dict[str, int],
                generation: int | None) -> dict[str, Any]:
    return {
        "allocations": {provider_uuid: {"resources": resources}},
        "project_id": PROJECT_ID,
        "user_id": USER_ID,
        "consumer_generation": generation,
        "consumer_type": "INSTANCE",
    }


def release(target: Target, consumers: Sequence[str]) -> str | None:
    """DELETE the allocations a row made (untimed), so every pass sees the same free space."""
    for consumer in consumers:
        reply = target.client.call("DELETE", f"/allocations/{consumer}")
        if reply.status != 204:
            return f"allocations not released: DELETE {reply.problem()}"
    return None


def time_claims(target: Target, warmups: int, calls: int) -> list[Row]:
    """Per consumer: PUT a new allocation, GET it back, replace it with its generation.

    Then replays the first replace with its now stale generation, which must get 409.
    """
    rows = [Row(k, target.name) for k in (CLAIM_NEW, CLAIM_GET, CLAIM_REPLACE, CLAIM_STALE)]
    consumers: list[str] = []
    try:
        _claims(target, warmups, calls, rows, consumers)
    finally:
        problem = release(target, consumers)
    if problem:
        rows[-1].note = f"{rows[-1].note or ''} {problem}".strip()
    return rows


def _fail(rows: Sequence[Row], first: int, reply: Reply, call: int) -> None:
    """Record a failed call on ``rows[first]``; the rows after it could not be measured."""
    rows[first].error = reply.problem() if call == 0 else f"{reply.problem()} (call {call + 1})"
    for row in rows[first + 1 :]:
        row.error = f"{NOT_MEASURED}: {LABELS[rows[first].key]} failed"


def _claims(
    target: Target, warmups: int, calls: int, rows: list[Row], consumers: list[str]
) -> None:
    new, get, replace, stale = rows
    client = target.client
    stale_claim: tuple[str, dict[str, Any]] | None = None
    for i in range(warmups + calls):
        provider = target.provider_for_claim()
        consumer = str(uuid.uuid4())
        path = f"/allocations/{consumer}"
        reply = client.put(path, _claim_body(provider, FLAVOR, None))
        if reply.status != 204:
            return _fail(rows, 0, reply, i)
        consumers.append(consumer)
        shown = client.get(path)
        if shown.status != 200:
            return _fail(rows, 1, shown, i)
        generation = shown.json().get("consumer_generation")
        body = _claim_body(provider, BIGGER_FLAVOR, generation)
        replaced = client.put(path, body)
        if replaced.status != 204:
            return _fail(rows, 2, replaced, i)
        if stale_claim is None:
            stale_claim = (path, body)
        if i >= warmups:
            new.samples_ms.append(reply.seconds * 1000)
            get.samples_ms.append(shown.seconds * 1000)
            replace.samples_ms.append(replaced.seconds * 1000)
    if stale_claim is not None:
        answer = client.put(*stale_claim)
        if answer.status == 409:
            stale.note = "409 ok"
        else:
            stale.error = f"expected 409, got {answer.problem()}"
    return None


def time_cycle(target: Target, warmups: int, calls: int) -> Row:
    """GET candidates (limit=10), claim the first one: the time of the two calls together."""
    row = Row(CYCLE, target.name)
    consumers: list[str] = []
    try:
        _cycles(target, warmups, calls, row, consumers)
    finally:
        problem = release(target, consumers)
    if problem:
        row.note = problem
    return row


def _cycles(target: Target, warmups: int, calls: int, row: Row, consumers: list[str]) -> None:
    client = target.client
    for i in range(warmups + calls):
        found = client.get(SCHEDULE_PATH)
        if found.status != 200:
            row.error = f"GET a/c {found.problem()}"
            return
        candidates = found.json()["allocation_requests"]
        if not candidates:
            row.error = "GET a/c returned no candidate"
            return
        body = {
            "allocations": candidates[0]["allocations"],
            "project_id": PROJECT_ID,
            "user_id": USER_ID,
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        }
        consumer = str(uuid.uuid4())
        claimed = client.put(f"/allocations/{consumer}", body)
        if claimed.status != 204:
            row.error = f"PUT {claimed.problem()}"
            return
        consumers.append(consumer)
        if i >= warmups:
            row.samples_ms.append((found.seconds + claimed.seconds) * 1000)


Measure = Callable[[Target, int, int], Row | list[Row]]


def _guarded(
    keys: Sequence[str], measure: Measure, target: Target, warmups: int, calls: int
) -> list[Row]:
    """Run one measurement; a lost connection (a crashed server) fails its rows, not the run."""
    try:
        rows = measure(target, warmups, calls)
    except (OSError, http.client.HTTPException) as exc:
        return [Row(key, target.name, error=f"connection failed: {exc!r}") for key in keys]
    return rows if isinstance(rows, list) else [rows]


def run_pass(targets: Sequence[Target], number: int, warmups: int, calls: int) -> list[Row]:
    """Every operation once per service, alternating which service goes first."""
    order = list(targets) if number % 2 == 0 else list(reversed(targets))
    steps: list[tuple[str, list[str], Measure]] = [
        (query.label, [query.key], functools.partial(time_read, query=query))
        for query in READ_QUERIES
    ]
    steps.append(("claims", [CLAIM_NEW, CLAIM_GET, CLAIM_REPLACE, CLAIM_STALE], time_claims))
    steps.append(("schedule+claim", [CYCLE], time_cycle))
    rows: list[Row] = []
    for label, keys, measure in steps:
        for target in order:
            print(f"  pass {number + 1}: {target.name}: {label}", flush=True)
            rows += _guarded(keys, measure, target, warmups, calls)
    return rows


def run_size(count: int, args: argparse.Namespace, workdir: Path) -> SizeRun:
    specs = providers(count)
    setups: list[Setup] = []
    passes: list[list[Row]] = []
    with contextlib.ExitStack() as stack:
        print(f"N={count}: loading moorage ...", flush=True)
        targets = [stack.enter_context(moorage_target(specs, args, workdir / MOORAGE, setups))]
        if args.with_upstream and count <= args.upstream_max:
            print(f"N={count}: loading upstream placement {upstream.VERSION} ...", flush=True)
            other = stack.enter_context(upstream_target(specs, args, workdir, setups))
            if other is not None:
                targets.append(other)
        for number in range(args.repeat):
            passes.append(run_pass(targets, number, args.warmups, args.calls))
    backend = "sqlite" if args.db == "sqlite" else "postgresql"
    return SizeRun(count, backend, setups, passes)


# -- tables -------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _bytes(size: int | None) -> str:
    if size is None:
        return ""
    if size >= 1_000_000:
        return f"{size / 1_000_000:.1f} MB"
    if size >= 1000:
        return f"{size / 1000:.0f} KB"
    return f"{size} B"


def _result(row: Row | None) -> str:
    if row is None:
        return ""
    if row.note:
        return row.note
    if row.count is None:
        return ""
    if row.expected is not None and row.count != row.expected:
        return f"{row.count} (WRONG: want {row.expected})"
    return str(row.count)


def _markdown(header: Sequence[str], lines: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out.extend("| " + " | ".join(cells) + " |" for cells in lines)
    return "\n".join(out)


def setup_table(run: SizeRun) -> str:
    lines = []
    for s in run.setups:
        if s.error:
            lines.append([s.target, s.loader, str(s.providers), s.error, "",
                          _seconds(s.start_seconds)])
            continue
        lines.append([
            s.target, s.loader, str(s.providers), _seconds(s.seconds),
            f"{s.rate:.0f} RP/s" if s.rate else "", _seconds(s.start_seconds),
        ])
    return _markdown(["service", "loader", "providers", "setup", "rate", "server start"], lines)


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.1f} s"


def _timing_cells(row: Row | None) -> list[str]:
    if row is None:
        return ["", ""]
    if row.error:
        shown = row.error if row.error.startswith(NOT_MEASURED) else f"FAILED: {row.error}"
        return [shown, "—"]
    return [_ms(row.p50), _ms(row.p95)]


def pass_table(rows: Sequence[Row]) -> str:
    by_key: dict[str, dict[str, Row]] = {}
    for row in rows:
        by_key.setdefault(row.key, {})[row.target] = row
    with_upstream = any(row.target == UPSTREAM for row in rows)
    header = ["operation", "moorage p50 ms", "p95"]
    if with_upstream:
        header += ["upstream p50 ms", "p95", "speed-up (p50)"]
    header += ["results", "response"]
    lines = []
    for key, targets in by_key.items():
        ours, theirs = targets.get(MOORAGE), targets.get(UPSTREAM)
        cells = [LABELS[key], *_timing_cells(ours)]
        results = _result(ours)
        size = _bytes(ours.size if ours else None)
        if with_upstream:
            cells += [*_timing_cells(theirs), _speedup(ours, theirs)]
            if theirs is not None and _result(theirs) != results:
                results = f"{results or '—'} / {_result(theirs) or '—'}"
            if theirs is not None and theirs.size and ours is not None and ours.size:
                size = f"{size} / {_bytes(theirs.size)}"
        lines.append([*cells, results, size])
    return _markdown(header, lines)


def _speedup(ours: Row | None, theirs: Row | None) -> str:
    if ours is None or theirs is None or ours.p50 is None or theirs.p50 is None:
        return "—"
    return f"{theirs.p50 / ours.p50:.1f}x"


def _pooled_p50(run: SizeRun, key: str, target: str) -> float | None:
    """p50 over the samples of every pass, or None if any pass failed or none ran."""
    samples: list[float] = []
    for rows in run.passes:
        for row in rows:
            if row.key == key and row.target == target:
                if row.error:
                    return None
                samples.extend(row.samples_ms)
    return percentile(samples, 50) if samples else None


def _failure(run: SizeRun, key: str, target: str) -> str:
    for rows in run.passes:
        for row in rows:
            if row.key == key and row.target == target and row.error:
                return f"FAILED: {row.error}"
    return NOT_MEASURED


def goals_table(runs: Sequence[SizeRun]) -> str:
    """The issue's targets against what this run measured."""
    lines: list[list[str]] = []
    target_label = LABELS[TARGET_QUERY]
    for run in runs:
        ours = _pooled_p50(run, TARGET_QUERY, MOORAGE)
        goal, met = "report", ""
        if run.providers >= 100_000:
            goal = f"<= {GOAL_P50_AT_100K_MS:.0f} ms"
            met = "" if ours is None else ("yes" if ours <= GOAL_P50_AT_100K_MS else "NO")
        measured = f"{_ms(ours)} ms" if ours is not None else _failure(run, TARGET_QUERY, MOORAGE)
        lines.append([f"{target_label} p50", str(run.providers), goal, measured, met])
        theirs = _pooled_p50(run, TARGET_QUERY, UPSTREAM)
        if ours is not None and theirs is not None:
            speedup = theirs / ours
            goal, met = "report", ""
            if run.providers == 5000:
                goal = f">= {GOAL_SPEEDUP_AT_5K:.0f}x"
                met = "yes" if speedup >= GOAL_SPEEDUP_AT_5K else "NO"
            lines.append([f"{target_label}: speed-up over upstream", str(run.providers), goal,
                          f"{speedup:.1f}x ({_ms(theirs)} / {_ms(ours)} ms)", met])
        claim = _pooled_p50(run, CLAIM_NEW, MOORAGE)
        lines.append([
            f"{LABELS[CLAIM_NEW]} p50", str(run.providers), f"<= {GOAL_CLAIM_P50_MS:.0f} ms",
            f"{_ms(claim)} ms" if claim is not None else _failure(run, CLAIM_NEW, MOORAGE),
            "" if claim is None else ("yes" if claim <= GOAL_CLAIM_P50_MS else "NO"),
        ])
    if not any(run.providers == 5000 and any(s.target == UPSTREAM for s in run.setups)
               for run in runs):
        lines.append([f"{target_label}: speed-up over upstream", "5000",
                      f">= {GOAL_SPEEDUP_AT_5K:.0f}x",
                      "not measured (run with --providers 5000 --with-upstream)", ""])
    return _markdown(["goal", "N", "target", "measured", "met"], lines)


def print_run(run: SizeRun, args: argparse.Namespace) -> None:
    print()
    print(f"## N={run.providers} providers ({run.backend}, microversion {MICROVERSION}, "
          f"{args.warmups} warm-ups + {args.calls} timed calls per row)")
    if args.server_option or args.workers != 1:
        overrides = [f"{s}.{o}={v}" for s, o, v in args.server_option]
        print(f"\nMoorage: {args.workers} worker(s); {', '.join(overrides) or 'default options'}")
    print()
    print(setup_table(run))
    for number, rows in enumerate(run.passes):
        print()
        print(f"### N={run.providers}, pass {number + 1} of {len(run.passes)}")
        print()
        print(pass_table(rows))
    print(flush=True)


# -- command line -------------------------------------------------------------------------


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError("provider counts must be positive integers")
    return sizes


def _server_option(text: str) -> tuple[str, str, str]:
    name, sep, value = text.partition("=")
    section, dot, option = name.partition(".")
    if not (sep and dot and section and option):
        raise argparse.ArgumentTypeError(f"expected SECTION.OPTION=VALUE, got {text!r}")
    return section, option, value


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--providers", type=_sizes, default=_sizes("1000,10000,100000"),
                        metavar="N[,N...]", help="provider counts to run, in order")
    parser.add_argument("--repeat", type=int, default=1, metavar="R",
                        help="measurement passes over each loaded size (services interleaved)")
    parser.add_argument("--calls", type=int, default=30, help="timed calls per row")
    parser.add_argument("--warmups", type=int, default=2,
                        help="untimed calls before each row (the first checks the status)")
    parser.add_argument("--db", default="sqlite", metavar="sqlite|URL",
                        help="Moorage's database: a SQLite file, or a PostgreSQL URL whose "
                        "user may CREATE DATABASE (a fresh database per size, dropped after)")
    parser.add_argument("--loader", choices=["auto", "http", "bulk"], default="auto",
                        help=f"auto: http up to {HTTP_LOADER_MAX} providers, bulk above")
    parser.add_argument("--load-threads", type=int, default=4,
                        help="threads of the HTTP loader")
    parser.add_argument("--workers", type=int, default=1, help="Moorage server processes")
    parser.add_argument("--server-option", type=_server_option, action="append", default=[],
                        metavar="SECTION.OPTION=VALUE",
                        help="Moorage configuration override (repeatable), e.g. "
                        "placement_database.sqlite_synchronous=False")
    parser.add_argument("--with-upstream", action="store_true",
                        help=f"also run upstream openstack-placement {upstream.VERSION}, "
                        "for sizes up to --upstream-max")
    parser.add_argument("--upstream-max", type=int, default=UPSTREAM_MAX, metavar="N",
                        help="largest size to run upstream at")
    parser.add_argument("--upstream-venv", type=Path,
                        default=Path(__file__).resolve().parent / ".upstream-venv",
                        help="cached venv that upstream is installed into")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write results here")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory (databases, server logs)")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.calls < 1 or args.warmups < 1:
        parser.error("--repeat, --calls and --warmups must be at least 1")
    return args


def _machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
    }


def write_json(path: Path, args: argparse.Namespace, runs: Sequence[SizeRun]) -> None:
    def row_json(row: Row) -> dict[str, Any]:
        data = asdict(row)
        data["label"] = LABELS[row.key]
        data["p50_ms"], data["p95_ms"] = row.p50, row.p95
        return data

    document = {
        "benchmark": "placement_bench",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": _machine(),
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "microversion": MICROVERSION,
        "upstream_version": upstream.VERSION,
        "runs": [
            {
                "providers": run.providers,
                "backend": run.backend,
                "setups": [asdict(s) for s in run.setups],
                "passes": [[row_json(row) for row in rows] for rows in run.passes],
            }
            for run in runs
        ],
    }
    path.write_text(json.dumps(document, indent=2) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="moorage-bench-"))
    runs: list[SizeRun] = []
    try:
        for count in args.providers:
            run = run_size(count, args, workdir / f"n{count}")
            runs.append(run)
            print_run(run, args)
            if args.json:
                write_json(args.json, args, runs)
    finally:
        if args.keep:
            print(f"work directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print("## Goals")
    print()
    print(goals_table(runs))
    if args.json:
        print(f"\nresults written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
