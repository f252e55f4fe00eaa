"""The compute hosts' traits, read from any placement service in a few requests, for
``bootability``: the upgrade preflight, the image admission and the start-up check.

Only reads, and only calls upstream OpenStack Placement has too: ``GET /``,
``GET /resource_providers`` (``required=`` from 1.18, ``in:`` from 1.39), ``GET
/traits?associated=true`` (1.6) and ``GET /resource_providers/{uuid}/traits``.

**Which providers are hosts.** The root providers that are not sharing providers
(``MISC_SHARES_VIA_AGGREGATE``): nova's and Moorage's compute nodes are the roots of
their trees (NUMA cells, GPUs, NICs hang below), and a shared storage pool, the other
kind of root, carries that trait. Telling them apart by their VCPU or MEMORY_MB
inventory would take one request per provider (the listing's ``resources=`` filter
keeps only providers with room left, so a full host would drop out).

**How the traits are read.** Either one ``GET /resource_providers?required=T`` per
trait wanted (and one ``required=in:...`` per family wanted, or one per member in use
below 1.39), answered with the providers that have it; or one ``GET
/resource_providers/{uuid}/traits`` per host, concurrently. Only traits some provider
has are asked about (``GET /traits?associated=true``), and whichever way takes fewer
requests is taken: per trait on any cloud larger than a few dozen hosts, so the count
of requests does not grow with the hosts (a preflight of a whole catalogue asks about
a few dozen traits), per host on a small one.

**Freshness.** A reader keeps what it read for ``max_age`` seconds (the compute API
keeps 10 s of it, so creating many images costs placement nothing more); within that
time only a trait never asked about costs a request.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import os_traits

from moorage.model.vocabulary import Prefilter
from moorage.placement.client import PlacementClient, PlacementError, Provider, ProviderQuery
from moorage.scheduler.bootability import HostTraits, properties_of_family, unreported_families

LOG = logging.getLogger(__name__)

SHARES = os_traits.MISC_SHARES_VIA_AGGREGATE
# required=in:T1,T2 (any of them) on GET /resource_providers.
ANY_TRAIT_MICROVERSION = (1, 39)


@dataclass
class _Snapshot:
    """What one reading of placement found; grows as more traits are asked about."""

    taken: float
    roots: list[Provider]
    in_use: frozenset[str]
    any_trait: bool
    # root uuid -> every trait it has, when the traits were read host by host.
    every_trait: dict[str, frozenset[str]] | None
    # trait or family -> the root uuids that have it (any member, for a family).
    holders: dict[str, frozenset[str]] = field(default_factory=dict)


class HostTraitsReader:
    """Reads the compute hosts' traits from placement, keeping them ``max_age``
    seconds. Safe to share between threads; ``requests`` counts what it sent."""

    def __init__(self, client: PlacementClient, max_age: float = math.inf,
                 clock: Callable[[], float] = time.monotonic,
                 per_host: bool | None = None) -> None:
        self.client = client
        self.max_age = max_age
        self.clock = clock
        # None: whichever takes fewer requests; True or False: host by host, or not.
        self.per_host = per_host
        self.requests = 0
        self._lock = threading.Lock()
        self._snapshot: _Snapshot | None = None

    def hosts(self, wanted_traits: Iterable[str] = (),
              wanted_families: Iterable[str] = ()) -> list[HostTraits]:
        """Every compute host, with those of ``wanted_traits`` it has and which of
        ``wanted_families`` it reports any trait of. PlacementError if placement
        cannot answer."""
        wanted = frozenset(wanted_traits) | {SHARES}
        families = frozenset(wanted_families)
        with self._lock:
            snapshot = self._fresh(len(wanted) + len(families))
            if snapshot.every_trait is None:
                self._read_holders(snapshot, wanted, families)
            return self._hosts(snapshot, wanted, families)

    def traits_in_use(self) -> frozenset[str]:
        """Every trait some provider has."""
        with self._lock:
            return self._fresh(0).in_use

    # -- reading -----------------------------------------------------------------
    def _get(self, path: str, params: list[tuple[str, str]] | None = None) -> object:
        self.requests += 1
        return self.client.request("GET", path, params=params or [])

    def _providers(self, query: ProviderQuery | None = None) -> list[Provider]:
        self.requests += 1
        return self.client.providers(query)

    def _fresh(self, queries: int) -> _Snapshot:
        """The snapshot, read anew when older than ``max_age``. ``queries``: how many
        per-trait queries the caller expects, to choose how traits are read."""
        now = self.clock()
        snapshot = self._snapshot
        if snapshot is not None and now - snapshot.taken <= self.max_age:
            return snapshot
        roots = [p for p in self._providers() if p.uuid == p.root_uuid]
        body = self._get("/traits", [("associated", "true")])
        in_use = frozenset(body["traits"]) if isinstance(body, dict) else frozenset()
        every_trait = None
        if self.per_host if self.per_host is not None else len(roots) <= queries:
            every_trait = self._every_trait(roots)
            roots = [p for p in roots if p.uuid in every_trait]
        snapshot = _Snapshot(now, roots, in_use, self._any_trait_supported(), every_trait)
        self._snapshot = snapshot
        return snapshot

    def _any_trait_supported(self) -> bool:
        body = self._get("/")
        versions = body.get("versions", []) if isinstance(body, dict) else []
        for version in versions:
            major, _, minor = str(version.get("max_version", "")).partition(".")
            if major.isdigit() and minor.isdigit():
                return (int(major), int(minor)) >= ANY_TRAIT_MICROVERSION
        return False

    def _every_trait(self, roots: list[Provider]) -> dict[str, frozenset[str]]:
        """Each root's traits, one request per root (a root deleted meanwhile is left
        out)."""

        def read(provider: Provider) -> tuple[str, frozenset[str]] | None:
            try:
                body = self._get(f"/resource_providers/{provider.uuid}/traits")
            except PlacementError as exc:
                if exc.status == 404:
                    return None
                raise
            assert isinstance(body, dict)
            return provider.uuid, frozenset(body["traits"])

        return dict(found for found in self.client.concurrently(read, roots) if found)

    def _read_holders(self, snapshot: _Snapshot, wanted: frozenset[str],
                      families: frozenset[str]) -> None:
        """The holders of each wanted trait and family not asked about yet."""
        roots = {p.uuid for p in snapshot.roots}
        queries: dict[str, list[str]] = {}
        for trait in sorted(wanted - snapshot.holders.keys()):
            if trait in snapshot.in_use:
                queries[trait] = [trait]
            else:
                snapshot.holders[trait] = frozenset()
        members_asked: set[str] = set()
        for family in sorted(families - snapshot.holders.keys()):
            members = sorted(t for t in snapshot.in_use if t.startswith(family + "_"))
            if not members:
                snapshot.holders[family] = frozenset()
            elif snapshot.any_trait or len(members) == 1:
                queries[family] = [f"in:{','.join(members)}" if len(members) > 1
                                   else members[0]]
            else:
                queries[family] = []
                members_asked.update(m for m in members if m not in snapshot.holders)
        for member in sorted(members_asked - queries.keys()):
            queries[member] = [member]
        keys = sorted(k for k, required in queries.items() if required)
        answers = self.client.concurrently(
            lambda key: self._providers(ProviderQuery(required=queries[key])), keys)
        for key, having in zip(keys, answers, strict=True):
            snapshot.holders[key] = frozenset(p.uuid for p in having if p.uuid in roots)
        for family in (k for k, required in queries.items() if not required):
            snapshot.holders[family] = frozenset().union(*(
                snapshot.holders.get(m, frozenset()) for m in snapshot.in_use
                if m.startswith(family + "_")))

    @staticmethod
    def _hosts(snapshot: _Snapshot, wanted: frozenset[str],
               families: frozenset[str]) -> list[HostTraits]:
        hosts: list[HostTraits] = []
        for root in snapshot.roots:
            if snapshot.every_trait is not None:
                every = snapshot.every_trait[root.uuid]
                has = every & wanted
                reports = frozenset(f for f in families
                                    if any(t.startswith(f + "_") for t in every))
            else:
                has = frozenset(t for t in wanted if root.uuid in snapshot.holders[t])
                reports = frozenset(f for f in families if root.uuid in snapshot.holders[f])
            if SHARES not in has:
                hosts.append(HostTraits(root.name, root.uuid, has - {SHARES}, reports))
        return hosts


def startup_warnings(prefilters: Iterable[Prefilter], client: PlacementClient) -> list[str]:
    """One line per prefilter that is on while no provider reports any trait of a
    family it requires: every boot of an image that needs that family would find no
    host. A placement that cannot answer is a line too, never an exception: this
    check must not keep a service from starting."""
    prefilters = tuple(prefilters)
    if not prefilters:
        return []
    try:
        in_use = HostTraitsReader(client).traits_in_use()
    except PlacementError as exc:
        return [f"could not check that the hosts report the traits the prefilters "
                f"{', '.join(prefilters)} require: {exc}"]
    lines = []
    for prefilter, families in unreported_families(prefilters, in_use).items():
        names = " or ".join(f"{family}_*" for family in families)
        properties = ", ".join(p for family in families for p in properties_of_family(family))
        lines.append(
            f"[scheduler] {prefilter} is on, but no resource provider reports any "
            f"{names} trait: every boot of an image that sets {properties} will find no "
            f"valid host until the hosts report them (their agents are older, or their "
            f"drivers do not); `moorage scheduler preflight` counts the hosts per image")
    return lines

