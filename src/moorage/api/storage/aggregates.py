"""Host aggregates: named sets of hosts with metadata, and an availability zone.

The availability zone is kept in its own column and shown in the metadata under
``availability_zone``, as nova shows it.
"""

from __future__ import annotations

import datetime
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.api.errors import BadRequest, Conflict, NotFound
from moorage.api.storage import catalog_state
from moorage.api.storage.schema import aggregate_hosts, aggregate_metadata, aggregates
from moorage.db.clock import utcnow

AZ_KEY = "availability_zone"


@dataclass(frozen=True)
class AggregateRecord:
    id: int
    uuid: str
    name: str
    availability_zone: str | None
    hosts: list[str] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None


def _not_found(aggregate_id: object) -> NotFound:
    return NotFound(f"Aggregate {aggregate_id} could not be found.")


def _load_all(conn: Connection, where: sa.ColumnElement[bool] | None = None
              ) -> list[AggregateRecord]:
    statement = sa.select(aggregates).order_by(aggregates.c.id)
    if where is not None:
        statement = statement.where(where)
    rows = list(conn.execute(statement))
    ids = [row.id for row in rows]
    hosts: dict[int, list[str]] = {i: [] for i in ids}
    meta: dict[int, dict[str, str]] = {i: {} for i in ids}
    if ids:
        for h in conn.execute(sa.select(aggregate_hosts)
                              .where(aggregate_hosts.c.aggregate_id.in_(ids))
                              .order_by(aggregate_hosts.c.host)):
            hosts[h.aggregate_id].append(h.host)
        for m in conn.execute(sa.select(aggregate_metadata)
                              .where(aggregate_metadata.c.aggregate_id.in_(ids))):
            meta[m.aggregate_id][m.key] = m.value
    records = []
    for row in rows:
        metadata = dict(sorted(meta[row.id].items()))
        if row.availability_zone is not None:
            metadata[AZ_KEY] = row.availability_zone
        records.append(AggregateRecord(
            id=row.id, uuid=row.uuid, name=row.name, availability_zone=row.availability_zone,
            hosts=hosts[row.id], metadata=metadata, created_at=row.created_at,
            updated_at=row.updated_at))
    return records


def list_aggregates(conn: Connection) -> list[AggregateRecord]:
    return _load_all(conn)


def load_aggregate(conn: Connection, aggregate_id: int) -> AggregateRecord:
    found = _load_all(conn, aggregates.c.id == aggregate_id)
    if not found:
        raise _not_found(aggregate_id)
    return found[0]


def _check_name_free(conn: Connection, name: str, except_id: int | None = None) -> None:
    statement = sa.select(aggregates.c.id).where(aggregates.c.name == name)
    if except_id is not None:
        statement = statement.where(aggregates.c.id != except_id)
    if conn.execute(statement).first() is not None:
        raise Conflict(f"Aggregate {name} already exists.")


def create_aggregate(conn: Connection, name: str, availability_zone: str | None
                     ) -> AggregateRecord:
    catalog_state.bump(conn, aggregates=True)
    _check_name_free(conn, name)
    now = utcnow()
    result = conn.execute(aggregates.insert().values(
        uuid=str(uuidlib.uuid4()), name=name, availability_zone=availability_zone,
        created_at=now, updated_at=now))
    key = result.inserted_primary_key
    assert key is not None
    return load_aggregate(conn, int(key[0]))


def _host_zones(conn: Connection, host: str, except_id: int) -> set[str | None]:
    """The availability zones of the other aggregates ``host`` is in."""
    # SELECT a.availability_zone FROM aggregates a JOIN aggregate_hosts h ON ...
    # WHERE h.host = :host AND a.id != :except_id
    rows = conn.execute(
        sa.select(aggregates.c.availability_zone)
        .join(aggregate_hosts, aggregate_hosts.c.aggregate_id == aggregates.c.id)
        .where(aggregate_hosts.c.host == host, aggregates.c.id != except_id))
    return {row.availability_zone for row in rows}


def _check_zone(conn: Connection, record: AggregateRecord, zone: str | None,
                hosts: list[str]) -> None:
    """A host belongs to at most one availability zone (nova's rule)."""
    if zone is None:
        return
    for host in hosts:
        others = {z for z in _host_zones(conn, host, record.id) if z is not None}
        if others - {zone}:
            raise BadRequest(
                f"Cannot put host {host} in availability zone {zone}: it is already in "
                f"availability zone {sorted(others)[0]}; a host can be in only one.")


def update_aggregate(conn: Connection, aggregate_id: int, *, name: str | None = None,
                     availability_zone: str | None = None, set_zone: bool = False
                     ) -> AggregateRecord:
    catalog_state.bump(conn, aggregates=True)
    record = load_aggregate(conn, aggregate_id)
    values: dict[str, object] = {"updated_at": utcnow()}
    if name is not None:
        _check_name_free(conn, name, aggregate_id)
        values["name"] = name
    if set_zone:
        _check_zone(conn, record, availability_zone, record.hosts)
        values["availability_zone"] = availability_zone
    conn.execute(aggregates.update().where(aggregates.c.id == aggregate_id).values(**values))
    return load_aggregate(conn, aggregate_id)


def delete_aggregate(conn: Connection, aggregate_id: int) -> AggregateRecord:
    catalog_state.bump(conn, aggregates=True)
    record = load_aggregate(conn, aggregate_id)
    if record.hosts:
        raise BadRequest(f"Cannot delete aggregate {aggregate_id}: it still has hosts "
                         f"({', '.join(record.hosts)}); remove them first.")
    conn.execute(aggregate_metadata.delete().where(
        aggregate_metadata.c.aggregate_id == aggregate_id))
    conn.execute(aggregates.delete().where(aggregates.c.id == aggregate_id))
    return record


def add_host(conn: Connection, aggregate_id: int, host: str) -> AggregateRecord:
    catalog_state.bump(conn, aggregates=True)
    record = load_aggregate(conn, aggregate_id)
    if host in record.hosts:
        raise Conflict(f"Aggregate {aggregate_id} already has host {host}.")
    _check_zone(conn, record, record.availability_zone, [host])
    conn.execute(aggregate_hosts.insert().values(aggregate_id=aggregate_id, host=host))
    return load_aggregate(conn, aggregate_id)


def remove_host(conn: Connection, aggregate_id: int, host: str) -> AggregateRecord:
    catalog_state.bump(conn, aggregates=True)
    load_aggregate(conn, aggregate_id)
    removed = conn.execute(aggregate_hosts.delete().where(
        aggregate_hosts.c.aggregate_id == aggregate_id, aggregate_hosts.c.host == host)).rowcount
    if not removed:
        raise NotFound(f"Cannot remove host {host} from aggregate {aggregate_id}: "
                       "the host is not in it.")
    return load_aggregate(conn, aggregate_id)


def set_metadata(conn: Connection, aggregate_id: int, changes: Mapping[str, str | None]
                 ) -> AggregateRecord:
    """Merge ``changes`` into the metadata; a None value removes the key.
    ``availability_zone`` sets (or with None clears) the zone."""
    catalog_state.bump(conn, aggregates=True)
    record = load_aggregate(conn, aggregate_id)
    updates = dict(changes)
    if AZ_KEY in updates:
        zone = updates.pop(AZ_KEY)
        update_aggregate(conn, aggregate_id, availability_zone=zone, set_zone=True)
    for key, value in updates.items():
        conn.execute(aggregate_metadata.delete().where(
            aggregate_metadata.c.aggregate_id == record.id, aggregate_metadata.c.key == key))
        if value is not None:
            conn.execute(aggregate_metadata.insert().values(
                aggregate_id=record.id, key=key, value=value))
    return load_aggregate(conn, aggregate_id)


def aggregate_uuids_of_host(conn: Connection, host: str) -> list[str]:
    """The uuids of the aggregates ``host`` is in: its placement aggregates."""
    rows = conn.execute(
        sa.select(aggregates.c.uuid)
        .join(aggregate_hosts, aggregate_hosts.c.aggregate_id == aggregates.c.id)
        .where(aggregate_hosts.c.host == host).order_by(aggregates.c.uuid))
    return [row.uuid for row in rows]
