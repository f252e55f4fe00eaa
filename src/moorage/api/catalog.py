"""ApiCatalog: the compute API's hosts and aggregates, held in memory for the scheduler
(``moorage.scheduler.types.Catalog``) and kept coherent with the database.

Why: a scheduling decision looks at the few hosts placement offered, but reading the
services and aggregates tables to find them costs a read of every host, on every
request: 24 ms per request at 10,000 hosts, more than everything else together.

Coherence: every change of a service other than a heartbeat, and every change of an
aggregate, bumps ``catalog_state.version`` in its transaction and stamps the changed
service (``storage/catalog_state.py``). Before answering ``hosts()`` or
``aggregates()`` the catalog reads the versions (one statement on a dedicated
connection) and, when they moved, reloads the services stamped since, the
aggregates if they changed, or everything after a service was deleted. It therefore
never answers from a state older than the last committed change, in any process.

Liveness: heartbeats only refresh ``services.updated_at`` and bump nothing (10,000
hosts beat every few seconds). The catalog reads the heartbeats newer than the last
it saw at most every ``min(1 s, service_down_time / 10)`` and updates each host's
``Liveness`` in place; whether a host is up is computed when a filter asks, for the
hosts placement offered only. A heartbeat is therefore seen at most that late,
which can only make a host look older than it is, never up when it is down. Beats
stamped with the newest second seen are read again only until it settles
(``_read_heartbeats``): a fleet stamps thousands of hosts with one second.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.api.storage import aggregates as aggregate_store
from moorage.api.storage.catalog_state import VERSIONS_SQL, CatalogVersions
from moorage.api.storage.schema import services
from moorage.db.database import Database
from moorage.placement.provider_names import provider_uuid
from moorage.scheduler.types import Aggregate, HostInfo, Liveness

__all__ = ["ApiCatalog", "to_aggregate"]

_COLUMNS = (services.c.host, services.c.nodes, services.c.disabled, services.c.forced_down,
            services.c.driver, services.c.supported_instances,
            services.c.hypervisor_version, services.c.updated_at, services.c.agent_url,
            services.c.refused)


def to_aggregate(record: aggregate_store.AggregateRecord) -> Aggregate:
    return Aggregate(uuid=record.uuid, name=record.name, hosts=frozenset(record.hosts),
                     metadata=dict(record.metadata),
                     availability_zone=record.availability_zone)


def _epoch(moment: datetime.datetime | None) -> float | None:
    """Seconds since the epoch of a naive UTC timestamp."""
    if moment is None:
        return None
    return moment.replace(tzinfo=datetime.UTC).timestamp()


class ApiCatalog:
    """Hosts and aggregates in memory, as fresh as the last committed change."""

    def __init__(self, database: Database, service_down_time: float, *,
                 liveness_interval: float | None = None) -> None:
        self._database = database
        self._down_after = float(service_down_time)
        self._liveness_interval = (liveness_interval if liveness_interval is not None
                                   else min(1.0, self._down_after / 10))
        self._lock = threading.Lock()
        self._versions: CatalogVersions | None = None
        self._hosts: dict[str, HostInfo] = {}
        self._liveness: dict[str, Liveness] = {}
        self._by_provider: dict[str, tuple[str, str]] = {}
        self._aggregates: tuple[Aggregate, ...] = ()
        self._aggregates_of: dict[str, tuple[Aggregate, ...]] = {}
        self._liveness_read = 0.0  # monotonic time of the last heartbeat read
        self._latest_beat: datetime.datetime | None = None
        self._latest_changed = 0.0  # monotonic time _latest_beat last moved

    # -- the Catalog protocol -------------------------------------------------------
    def hosts(self) -> Mapping[str, HostInfo]:
        self._fresh()
        return self._hosts

    def aggregates(self) -> Sequence[Aggregate]:
        self._fresh()
        return self._aggregates

    def aggregates_of(self, host: str) -> Sequence[Aggregate]:
        return self._aggregates_of.get(host, ())

    def node_of_provider(self, provider_uuid: str) -> tuple[str, str] | None:
        return self._by_provider.get(provider_uuid)

    def known(self, host: str) -> HostInfo | None:
        """``host`` as the last ``hosts()`` saw it, without asking whether it changed
        since (the conductor reaching the agent of a host it just scheduled to)."""
        found = self._hosts.get(host)
        return found if found is not None else self.hosts().get(host)

    # -- keeping up -------------------------------------------------------------------
    def _fresh(self) -> None:
        versions = CatalogVersions.of(self._database.poll(VERSIONS_SQL))
        due = time.monotonic() - self._liveness_read >= self._liveness_interval
        if _same_catalog(versions, self._versions) and not due:
            return
        with self._lock:
            if not _same_catalog(versions, self._versions):
                self._catch_up(versions)
            if time.monotonic() - self._liveness_read >= self._liveness_interval:
                self._read_heartbeats()

    def _catch_up(self, versions: CatalogVersions) -> None:
        known = self._versions
        with self._database.reader() as conn:
            if known is None or versions.reset != known.reset:
                self._replace_hosts(conn)
            elif versions.version != known.version:
                self._update_hosts(conn, since=known.version)
            if known is None or versions.aggregates != known.aggregates:
                self._aggregates = tuple(
                    to_aggregate(r) for r in aggregate_store.list_aggregates(conn))
            self._aggregates_of = _by_host(self._aggregates)
        self._versions = versions

    def _replace_hosts(self, conn: Connection) -> None:
        # SELECT host, nodes, disabled, ... FROM services
        rows = conn.execute(sa.select(*_COLUMNS))
        self._hosts, self._by_provider = {}, {}
        liveness, self._liveness = self._liveness, {}
        self._apply(rows, liveness)

    def _update_hosts(self, conn: Connection, since: int) -> None:
        # SELECT host, nodes, disabled, ... FROM services WHERE change_version > :since
        rows = conn.execute(sa.select(*_COLUMNS).where(services.c.change_version > since))
        hosts = dict(self._hosts)
        by_provider = dict(self._by_provider)
        self._hosts, self._by_provider = hosts, by_provider
        self._apply(rows, self._liveness)

    def _apply(self, rows: Iterable[Any], previous: Mapping[str, Liveness]) -> None:
        """Put these service rows in the (new) dictionaries, reusing each host's
        Liveness so that snapshots handed out earlier keep seeing its heartbeats."""
        for row in rows:
            (host, nodes_json, disabled, forced_down, driver, supported_json, version,
             beat, agent_url, refused_json) = row
            host = str(host)
            nodes = tuple(json.loads(str(nodes_json)))
            old = self._hosts.get(host)
            if old is not None:
                for node in old.nodes:
                    self._by_provider.pop(provider_uuid(node), None)
            liveness = previous.get(host) or Liveness(None, self._down_after)
            liveness.forced_down = bool(forced_down)
            seen = _epoch(beat)
            if seen is not None and (liveness.last_seen is None or seen > liveness.last_seen):
                liveness.last_seen = seen
            self._liveness[host] = liveness
            self._hosts[host] = HostInfo(
                host=host, nodes=nodes, enabled=not disabled, liveness=liveness,
                driver=str(driver),
                supported_instances=tuple((str(a), str(h), str(m)) for a, h, m
                                          in json.loads(str(supported_json))),
                hypervisor_version=version, agent_url=agent_url,
                refused={str(node): frozenset(traits)
                         for node, traits in json.loads(str(refused_json)).items()})
            for node in nodes:
                self._by_provider[provider_uuid(node)] = (host, node)

    def _read_heartbeats(self) -> None:
        """Refresh the liveness of the hosts that heart-beat since the last read.

        Timestamps are whole seconds, and a beat's is taken before it commits: until
        the newest beat seen has been the newest for ``_SETTLE`` seconds, the read
        looks one second behind it, so that a beat committed in the same second (or
        one that started just before it) is not missed. After that, only newer beats
        are read: a fleet's beat stamps thousands of hosts with one second, and they
        are not read again at every refresh until the next beat."""
        since = self._latest_beat
        # SELECT host, updated_at FROM services [WHERE updated_at >= :since - 1 s]
        #                                       [WHERE updated_at > :since] (settled)
        statement = sa.select(services.c.host, services.c.updated_at)
        if since is not None:
            if time.monotonic() - self._latest_changed < _SETTLE:
                statement = statement.where(
                    services.c.updated_at >= since - datetime.timedelta(seconds=1))
            else:
                statement = statement.where(services.c.updated_at > since)
        with self._database.reader() as conn:
            rows = conn.execute(statement).all()
        latest = since
        # Beats share a few distinct seconds: each converted once.
        seconds: dict[datetime.datetime, float | None] = {}
        for host, beat in rows:
            liveness = self._liveness.get(host)
            if liveness is not None:
                seen = seconds.get(beat)
                if seen is None:
                    seen = seconds[beat] = _epoch(beat)
                if seen is not None and (liveness.last_seen is None
                                         or seen > liveness.last_seen):
                    liveness.last_seen = seen
            if latest is None or beat > latest:
                latest = beat
        if latest != self._latest_beat:
            self._latest_beat = latest
            self._latest_changed = time.monotonic()
        self._liveness_read = time.monotonic()


# Seconds the newest heartbeat seen must stay the newest before beats stamped with
# its second are no longer read again (see ApiCatalog._read_heartbeats).
_SETTLE = 3.0


def _same_catalog(a: CatalogVersions, b: CatalogVersions | None) -> bool:
    return b is not None and a == b


def _by_host(aggregates: Sequence[Aggregate]) -> dict[str, tuple[Aggregate, ...]]:
    found: dict[str, list[Aggregate]] = {}
    for aggregate in aggregates:
        for host in aggregate.hosts:
            found.setdefault(host, []).append(aggregate)
    return {host: tuple(aggs) for host, aggs in found.items()}
