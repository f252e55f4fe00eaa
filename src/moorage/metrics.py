"""Prometheus metrics: what placement and the compute API serve on ``GET /metrics``.

Two kinds, both counted with ``prometheus_client``:

* ``HttpMetrics``, one per application: requests by route template, method and
  status, and their latency by route template and method. The labels are bounded by
  construction: a route is a template of the route table (never the raw path), a path
  no route matches is ``unmatched``, and a method outside HTTP's usual few is
  ``other``, so no client can grow the series without bound.
* the conductor's events (boots by outcome, reschedules, NoValidHost by the deciding
  constraint), counted once per process, from where ``conductor/tasks/`` decides
  them: ``boot_ended``, ``rescheduled``, ``no_valid_host``.

Why the request path stays cheap: placement answers thousands of requests a second,
so ``HttpMetrics.observe`` keeps each label combination's child in a dict of its own
(``labels()`` validates and takes the metric's lock on every call); what is left is
prometheus_client's own lock per value.

Several processes: a server with granian workers gives them one directory
(``multiprocess_directory``, in the launching process) and each worker writes its
values there (prometheus_client's multiprocess mode), so whichever worker answers
``/metrics`` sums every worker's. prometheus_client picks its storage when it is
first imported, which the launching process has done before it forks the workers;
``_prepare_storage`` switches it in the worker, before any metric is made.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, values
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector

LOG = logging.getLogger(__name__)

# The text format every Prometheus reads.
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
# prometheus_client's own variable: the directory the processes of one server share.
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
# The route label of a path no route matches.
UNMATCHED = "unmatched"
# Methods counted under their own name; any other is "other".
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "other"
# Request latency buckets, in seconds: placement answers most reads in about a
# millisecond and claims in two; a large listing can take a second.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                   1.0, 2.5, 5.0, 10.0)


def _prepare_storage() -> None:
    """Keep this process's values in the shared directory when its server set one.

    prometheus_client reads the variable when it is imported; a granian worker is
    forked from a process that imported it before the directory was made, so the
    choice is made again here, before the process's first metric."""
    if os.environ.get(MULTIPROCESS_ENV) and not values.ValueClass._multiprocess:
        values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]


def _multiprocess() -> bool:
    return bool(values.ValueClass._multiprocess)


class HttpMetrics:
    """The request counter and latency histogram of one HTTP application."""

    def __init__(self) -> None:
        _prepare_storage()
        self.registry = CollectorRegistry(auto_describe=True)
        self._requests = Counter(
            "moorage_http_requests", "HTTP requests answered, by route template, method "
            "and status.", ("route", "method", "status"), registry=self.registry)
        self._latency = Histogram(
            "moorage_http_request_duration_seconds", "Time from a request's arrival to "
            "its response's start, by route template and method.", ("route", "method"),
            buckets=LATENCY_BUCKETS, registry=self.registry)
        # Children by label values. A dict read and write are atomic under the GIL; two
        # threads adding the same key store the same child (labels() is locked).
        self._counted: dict[tuple[str, str, int], Counter] = {}
        self._timed: dict[tuple[str, str], Histogram] = {}

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request and its latency."""
        if method not in METHODS:
            method = OTHER_METHOD
        counter = self._counted.get((route, method, status))
        if counter is None:
            counter = self._requests.labels(route, method, str(status))
            self._counted[(route, method, status)] = counter
        counter.inc()
        timer = self._timed.get((route, method))
        if timer is None:
            timer = self._timed[(route, method)] = self._latency.labels(route, method)
        timer.observe(seconds)

    def render(self, *, conductor: bool = False) -> bytes:
        """The text exposition of this application's metrics (with the conductor's
        when it runs in this process)."""
        if _multiprocess():
            # Every worker's values, from the shared directory: what this server's
            # processes counted, whichever of them answers.
            merged = CollectorRegistry()
            MultiProcessCollector(merged)  # type: ignore[no-untyped-call]
            return generate_latest(merged)
        registries = [self.registry, *([conductor_metrics().registry] if conductor else [])]
        return b"".join(generate_latest(r) for r in registries)


# -- the conductor's events --------------------------------------------------------------

class BootOutcome(StrEnum):
    """How a build ended, as the boots counter labels it."""

    ACTIVE = "active"
    ERROR = "error"
    # Deleted while it was spawning: the build's guest and claim were removed.
    DELETED = "deleted"


class ConductorMetrics:
    """The conductor's counters; one set per process (``conductor_metrics``)."""

    def __init__(self) -> None:
        _prepare_storage()
        self.registry = CollectorRegistry(auto_describe=True)
        self.boots = Counter("moorage_boots", "Builds that ended, by outcome.",
                             ("outcome",), registry=self.registry)
        self.reschedules = Counter(
            "moorage_reschedules", "Spawns moved to an alternate host after a host "
            "failed one (builds and moves).", registry=self.registry)
        self.no_valid_host = Counter(
            "moorage_no_valid_host", "Scheduling requests no host could take, by the "
            "constraint that left none.", ("constraint",), registry=self.registry)
        self._boots = {outcome: self.boots.labels(outcome.value) for outcome in BootOutcome}


_conductor: ConductorMetrics | None = None


def conductor_metrics() -> ConductorMetrics:
    """This process's conductor counters, made at first use (after ``_prepare_storage``
    can see the server's directory)."""
    global _conductor
    if _conductor is None:
        _conductor = ConductorMetrics()
    return _conductor


def boot_ended(outcome: BootOutcome) -> None:
    conductor_metrics()._boots[outcome].inc()


def rescheduled() -> None:
    conductor_metrics().reschedules.inc()


def no_valid_host(exc: BaseException) -> None:
    """Count a NoValidHost by its ``deciding`` constraint (a bounded vocabulary)."""
    conductor_metrics().no_valid_host.labels(getattr(exc, "deciding", "unknown")).inc()


# -- several worker processes -------------------------------------------------------------

@contextlib.contextmanager
def multiprocess_directory(service: str) -> Iterator[Path]:
    """The directory a server's worker processes share their values in, set in this
    process's environment (which the workers inherit) while the block runs.

    An operator's own ``PROMETHEUS_MULTIPROC_DIR`` is used, emptied of the values a
    previous run left; otherwise a fresh temporary directory, removed afterwards.
    """
    given = os.environ.get(MULTIPROCESS_ENV)
    if given:
        directory = Path(given)
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("*.db"):
            stale.unlink()
    else:
        directory = Path(tempfile.mkdtemp(prefix=f"moorage-{service}-metrics-"))
        os.environ[MULTIPROCESS_ENV] = str(directory)
    LOG.info("metrics: the worker processes count in %s", directory)
    try:
        yield directory
    finally:
        if not given:
            os.environ.pop(MULTIPROCESS_ENV, None)
            shutil.rmtree(directory, ignore_errors=True)
