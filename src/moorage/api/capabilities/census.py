"""Per standard trait: how many enabled, up hosts offer it, and their free capacity.

Why one allocation-candidates query: placement has no bulk read of providers with
their traits and inventories; per-provider reads are three GETs per host (30,000 at
10,000 hosts) and per-trait provider listings repeat every host once per trait. One
``GET /allocation_candidates?resources=VCPU:1,MEMORY_MB:1`` answers for every host
at once: its provider summaries carry each provider's traits and, per resource
class, capacity and usage. It also defines what "offers" means here: a host that can
take a server now. A host with no VCPU or memory left, a disabled one
(``!COMPUTE_STATUS_DISABLED``, and the compute API's own record) and a down one (the
catalog's heartbeats) offer nothing.

Coherence: the census is a few seconds old at most (``[api]
capability_cache_seconds``); it counts hosts and sums capacity, which a user reads as
a rough figure, and one census per interval keeps a page that every user may reload
from costing placement a whole-cloud query per view.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass

from moorage.model import vocabulary
from moorage.placement.client import Candidates, PlacementClient
from moorage.placement.provider_names import provider_uuid
from moorage.scheduler.request_filters import STATUS_DISABLED
from moorage.scheduler.types import Catalog

# The resources whose free amounts are shown, in this order.
RESOURCES = ("VCPU", "MEMORY_MB", "DISK_GB")
# The smallest server: a host that cannot take it offers nothing now.
QUERY = (("resources", "VCPU:1,MEMORY_MB:1"), ("root_required", f"!{STATUS_DISABLED}"))


@dataclass(frozen=True)
class HostOffer:
    """One compute node that can take a server: its traits and free resources."""

    traits: frozenset[str]
    free: Mapping[str, int]


@dataclass(frozen=True)
class TraitOffer:
    """The hosts that offer one trait: how many, and their free resources summed."""

    hosts: int
    free: Mapping[str, int]


Census = Mapping[str, TraitOffer]


def available_nodes(catalog: Catalog) -> frozenset[str]:
    """The compute node providers of the enabled hosts whose service is up."""
    return frozenset(provider_uuid(node) for host in catalog.hosts().values()
                     if host.enabled and host.up for node in host.nodes)


def host_offers(candidates: Candidates, nodes: Set[str]) -> list[HostOffer]:
    """Each root provider in ``nodes`` the answer mentions: its own traits (what the
    request filters require, ``root_required``) and the free resources of its tree."""
    free: dict[str, dict[str, int]] = {}
    for summary in candidates.summaries.values():
        if summary.root_uuid not in nodes:
            continue
        tree = free.setdefault(summary.root_uuid, dict.fromkeys(RESOURCES, 0))
        for rc in RESOURCES:
            used, capacity = summary.resources.get(rc, (0, 0))
            tree[rc] += max(capacity - used, 0)
    return [HostOffer(frozenset(candidates.summaries[root].traits), amounts)
            for root, amounts in free.items() if root in candidates.summaries]


def census(offers: Iterable[HostOffer]) -> dict[str, TraitOffer]:
    """Per standard trait, the hosts offering it. CUSTOM_ traits are left out: the
    operator names them, and a name may say which host it is (CUSTOM_RACK7_GPU)."""
    hosts: dict[str, int] = {}
    free: dict[str, dict[str, int]] = {}
    for offer in offers:
        for trait in offer.traits:
            if vocabulary.is_custom(trait):
                continue
            hosts[trait] = hosts.get(trait, 0) + 1
            summed = free.setdefault(trait, dict.fromkeys(RESOURCES, 0))
            for rc in RESOURCES:
                summed[rc] += offer.free.get(rc, 0)
    return {trait: TraitOffer(count, free[trait]) for trait, count in hosts.items()}


def read_census(placement: PlacementClient, catalog: Catalog) -> dict[str, TraitOffer]:
    """The census now: one placement query, the catalog's liveness."""
    return census(host_offers(placement.allocation_candidates_for(QUERY),
                              available_nodes(catalog)))


class CensusCache:
    """The last census, reused for ``ttl`` seconds; one reader at a time refreshes
    it, so a burst of page views costs placement one query."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._census: Census | None = None
        self._read_at = 0.0

    def get(self, ttl: float, read: Callable[[], Census]) -> Census:
        with self._lock:
            if self._census is None or self._clock() - self._read_at >= ttl:
                self._census = read()
                self._read_at = self._clock()
            return self._census
