"""ApiCatalog: the compute API's hosts and aggregates as the scheduler reads them
(``moorage.scheduler.types.Catalog``), from the services, servers and aggregates tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.api.storage import aggregates as aggregate_store
from moorage.api.storage import services as service_store
from moorage.lifecycle.schema import servers
from moorage.lifecycle.states import ServerStatus
from moorage.placement.storage.database import Database, utcnow
from moorage.scheduler.types import Aggregate, HostInfo


def instances_by_host(conn: Connection) -> dict[str, int]:
    """Servers not deleted, counted per host."""
    # SELECT host, count(*) FROM servers WHERE status != 'DELETED' AND host IS NOT NULL
    # GROUP BY host
    rows = conn.execute(
        sa.select(servers.c.host, sa.func.count())
        .where(servers.c.status != ServerStatus.DELETED, servers.c.host.is_not(None))
        .group_by(servers.c.host))
    return {str(host): int(count) for host, count in rows}


def host_infos(conn: Connection, service_down_time: float) -> dict[str, HostInfo]:
    now = utcnow()
    counts = instances_by_host(conn)
    return {
        service.host: HostInfo(
            host=service.host,
            nodes=tuple(service.nodes),
            enabled=not service.disabled,
            up=service.is_up(service_down_time, now),
            driver=service.driver,
            supported_instances=tuple(service.supported_instances),
            hypervisor_version=service.hypervisor_version,
            instances=counts.get(service.host, 0),
        )
        for service in service_store.list_services(conn)
    }


def to_aggregate(record: aggregate_store.AggregateRecord) -> Aggregate:
    return Aggregate(uuid=record.uuid, name=record.name, hosts=frozenset(record.hosts),
                     metadata=dict(record.metadata),
                     availability_zone=record.availability_zone)


class ApiCatalog:
    """Reads the tables afresh on every call: services come and go, heartbeats age."""

    def __init__(self, database: Database, service_down_time: float) -> None:
        self._database = database
        self._service_down_time = service_down_time

    def hosts(self) -> Mapping[str, HostInfo]:
        with self._database.reader() as conn:
            return host_infos(conn, self._service_down_time)

    def aggregates(self) -> Sequence[Aggregate]:
        with self._database.reader() as conn:
            return [to_aggregate(r) for r in aggregate_store.list_aggregates(conn)]
