"""Servers and migrations as the compute API stores them.

A server row holds snapshots of its flavor and image (as nova's instance does), so a
flavor deleted or an image changed later never changes what a server was built from.
Every state change goes through :func:`transition`, a compare-and-set on the status
and task state, so the conductor's workers and the API never overwrite each other:
a delete that arrives during a build wins, and the build notices.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from moorage.api.storage.schema import migrations, servers
from moorage.model.codec import flavor_from_json, flavor_to_json, image_from_json, image_to_json
from moorage.model.flavor import Flavor
from moorage.model.image import Image

# Server statuses, nova's names.
BUILD = "BUILD"
ACTIVE = "ACTIVE"
ERROR = "ERROR"
REBUILD = "REBUILD"
RESIZE = "RESIZE"
VERIFY_RESIZE = "VERIFY_RESIZE"
REVERT_RESIZE = "REVERT_RESIZE"
DELETED = "DELETED"

# Migration kinds and statuses, nova's names.
MIGRATION = "migration"
RESIZE_KIND = "resize"
EVACUATION = "evacuation"


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)


@dataclass
class ServerRecord:
    """One server, with what it was built from and what happened to it."""

    uuid: str
    name: str
    project_id: str
    user_id: str
    flavor_id: str
    flavor: Flavor
    image_id: str
    image: Image
    is_bfv: bool = False
    availability_zone: str | None = None
    status: str = BUILD
    task_state: str | None = "scheduling"
    host: str | None = None
    node: str | None = None
    # One entry per host tried: {"host", "node", "result", "kind", "message", "feature"}.
    attempts: list[dict[str, Any]] = field(default_factory=list)
    # What the scheduler did: request filter records, candidate counts, the request.
    scheduling: dict[str, Any] = field(default_factory=dict)
    # Why the server is in ERROR: {"code", "message", "details", "created"}.
    fault: dict[str, Any] | None = None
    created_at: datetime.datetime = field(default_factory=utcnow)
    updated_at: datetime.datetime = field(default_factory=utcnow)
    launched_at: datetime.datetime | None = None
    deleted_at: datetime.datetime | None = None
    # A requested target host (admin), kept for the first schedule only.
    requested_host: str | None = None

    @property
    def deleted(self) -> bool:
        return self.status == DELETED


def _to_row(record: ServerRecord) -> dict[str, Any]:
    scheduling = dict(record.scheduling)
    if record.requested_host:
        scheduling.setdefault("requested_host", record.requested_host)
    return {
        "uuid": record.uuid,
        "name": record.name,
        "project_id": record.project_id,
        "user_id": record.user_id,
        "flavor_id": record.flavor_id,
        "flavor": json.dumps(flavor_to_json(record.flavor)),
        "image_id": record.image_id,
        "image": json.dumps(image_to_json(record.image)),
        "is_bfv": record.is_bfv,
        "availability_zone": record.availability_zone,
        "status": record.status,
        "task_state": record.task_state,
        "host": record.host,
        "node": record.node,
        "attempts": json.dumps(record.attempts),
        "scheduling": json.dumps(scheduling),
        "fault": json.dumps(record.fault) if record.fault is not None else None,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "launched_at": record.launched_at,
        "deleted_at": record.deleted_at,
    }


def _from_row(row: RowMapping) -> ServerRecord:
    scheduling = json.loads(row["scheduling"] or "{}")
    return ServerRecord(
        uuid=row["uuid"],
        name=row["name"],
        project_id=row["project_id"],
        user_id=row["user_id"],
        flavor_id=row["flavor_id"],
        flavor=flavor_from_json(json.loads(row["flavor"])),
        image_id=row["image_id"],
        image=image_from_json(json.loads(row["image"])),
        is_bfv=bool(row["is_bfv"]),
        availability_zone=row["availability_zone"],
        status=row["status"],
        task_state=row["task_state"],
        host=row["host"],
        node=row["node"],
        attempts=json.loads(row["attempts"] or "[]"),
        scheduling=scheduling,
        fault=json.loads(row["fault"]) if row["fault"] else None,
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        launched_at=row["launched_at"],
        deleted_at=row["deleted_at"],
        requested_host=scheduling.get("requested_host"),
    )


def insert_server(conn: Connection, record: ServerRecord) -> None:
    conn.execute(servers.insert().values(**_to_row(record)))


def load_server(conn: Connection, uuid: str, *, with_deleted: bool = False
                ) -> ServerRecord | None:
    row = conn.execute(servers.select().where(servers.c.uuid == uuid)).mappings().first()
    if row is None:
        return None
    record = _from_row(row)
    if record.deleted and not with_deleted:
        return None
    return record


@dataclass(frozen=True)
class ServerQuery:
    """What GET /servers may filter on (the subset of nova's filters we keep)."""

    project_id: str | None = None  # None: every project (admin with all_tenants)
    status: str | None = None
    host: str | None = None
    name: str | None = None
    limit: int | None = None
    marker: str | None = None


def list_servers(conn: Connection, query: ServerQuery) -> list[ServerRecord]:
    """Servers newest first, as nova lists them; ``marker`` pages after that server."""
    statement = servers.select().where(servers.c.status != DELETED)
    if query.project_id is not None:
        statement = statement.where(servers.c.project_id == query.project_id)
    if query.status is not None:
        statement = statement.where(servers.c.status == query.status)
    if query.host is not None:
        statement = statement.where(servers.c.host == query.host)
    if query.name is not None:
        statement = statement.where(servers.c.name == query.name)
    order = (servers.c.created_at.desc(), servers.c.uuid.desc())
    if query.marker is not None:
        marker = conn.execute(
            sa.select(servers.c.created_at, servers.c.uuid).where(servers.c.uuid == query.marker)
        ).first()
        if marker is None:
            raise LookupError(query.marker)
        statement = statement.where(
            sa.or_(
                servers.c.created_at < marker.created_at,
                sa.and_(servers.c.created_at == marker.created_at, servers.c.uuid < marker.uuid),
            )
        )
    statement = statement.order_by(*order)
    if query.limit is not None:
        statement = statement.limit(query.limit)
    return [_from_row(row) for row in conn.execute(statement).mappings()]


def count_servers_on_host(conn: Connection, host: str) -> int:
    return int(conn.execute(
        sa.select(sa.func.count()).select_from(servers)
        .where(servers.c.host == host, servers.c.status != DELETED)
    ).scalar_one())


def transition(conn: Connection, uuid: str, *, expect_status: Iterable[str] | None = None,
               expect_task: Iterable[str | None] | None = None,
               **changes: Any) -> bool:
    """Change a server if it is still in one of the expected states; False if it is not
    (deleted meanwhile, or another operation got there first). JSON fields are given as
    Python values."""
    values = dict(changes)
    for name in ("attempts", "scheduling", "fault"):
        if name in values and values[name] is not None:
            values[name] = json.dumps(values[name])
    for name in ("flavor",):
        if name in values:
            values[name] = json.dumps(flavor_to_json(values[name]))
    for name in ("image",):
        if name in values:
            values[name] = json.dumps(image_to_json(values[name]))
    values["updated_at"] = utcnow()
    statement = servers.update().where(servers.c.uuid == uuid).values(**values)
    if expect_status is not None:
        statement = statement.where(servers.c.status.in_(list(expect_status)))
    if expect_task is not None:
        expected = list(expect_task)
        conditions = [servers.c.task_state.in_([t for t in expected if t is not None])]
        if None in expected:
            conditions.append(servers.c.task_state.is_(None))
        statement = statement.where(sa.or_(*conditions))
    return bool(conn.execute(statement).rowcount)


# --- migrations ------------------------------------------------------------------


@dataclass
class MigrationRecord:
    """A move of a server: cold migration, resize or evacuation.

    Its uuid is also the placement consumer that holds the source host's allocations
    while the move is in flight, as nova does."""

    uuid: str
    server_uuid: str
    kind: str
    source_host: str
    dest_host: str | None = None
    status: str = "pre-migrating"
    id: int | None = None
    created_at: datetime.datetime = field(default_factory=utcnow)
    updated_at: datetime.datetime = field(default_factory=utcnow)


def _migration_from_row(row: RowMapping) -> MigrationRecord:
    return MigrationRecord(
        id=row["id"], uuid=row["uuid"], server_uuid=row["server_uuid"], kind=row["kind"],
        source_host=row["source_host"], dest_host=row["dest_host"], status=row["status"],
        created_at=row["created_at"], updated_at=row["updated_at"],
    )


def insert_migration(conn: Connection, record: MigrationRecord) -> MigrationRecord:
    result = conn.execute(migrations.insert().values(
        uuid=record.uuid, server_uuid=record.server_uuid, kind=record.kind,
        source_host=record.source_host, dest_host=record.dest_host, status=record.status,
        created_at=record.created_at, updated_at=record.updated_at,
    ))
    key = result.inserted_primary_key
    assert key is not None
    record.id = int(key[0])
    return record


def update_migration(conn: Connection, uuid: str, **changes: Any) -> None:
    conn.execute(migrations.update().where(migrations.c.uuid == uuid)
                 .values(updated_at=utcnow(), **changes))


def load_migration(conn: Connection, uuid: str) -> MigrationRecord | None:
    row = conn.execute(migrations.select().where(migrations.c.uuid == uuid)).mappings().first()
    return _migration_from_row(row) if row is not None else None


def list_migrations(conn: Connection, *, server_uuid: str | None = None,
                    statuses: Sequence[str] | None = None,
                    kinds: Sequence[str] | None = None) -> list[MigrationRecord]:
    statement = migrations.select()
    if server_uuid is not None:
        statement = statement.where(migrations.c.server_uuid == server_uuid)
    if statuses is not None:
        statement = statement.where(migrations.c.status.in_(list(statuses)))
    if kinds is not None:
        statement = statement.where(migrations.c.kind.in_(list(kinds)))
    statement = statement.order_by(migrations.c.id.desc())
    return [_migration_from_row(row) for row in conn.execute(statement).mappings()]


def in_flight_migration(conn: Connection, server_uuid: str) -> MigrationRecord | None:
    """The server's unfinished move, if any (at most one at a time)."""
    found = list_migrations(conn, server_uuid=server_uuid, statuses=IN_FLIGHT)
    return found[0] if found else None


# A move holds resources on both hosts in these statuses.
IN_FLIGHT = ("pre-migrating", "migrating", "finished")


def attempts_summary(attempts: Sequence[Mapping[str, Any]]) -> str:
    """One line per failed host, for a fault message."""
    return "; ".join(
        f"{a.get('host')}: {a.get('kind')}: {a.get('message')}"
        for a in attempts if a.get("result") != "ok"
    )
