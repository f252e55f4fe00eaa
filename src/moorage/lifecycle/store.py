"""Reading and changing servers and migrations.

Every state change of a server goes through :func:`transition`, a compare-and-set on
its status and task state (and, for the conductor, on still owning the operation it
works for), so the conductors and the API never overwrite each other: a delete that
arrives during a build wins, and the build notices at its next step.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from moorage.db.clock import utcnow, utcnow_precise
from moorage.db.statements import Statement
from moorage.lifecycle import operations as operation_store
from moorage.lifecycle.records import MigrationRecord, ServerRecord
from moorage.lifecycle.schema import cleanups, migrations, operations, servers
from moorage.lifecycle.states import (
    IN_FLIGHT,
    MigrationKind,
    MigrationStatus,
    ServerStatus,
    TaskState,
)
from moorage.model.codec import flavor_from_json, flavor_to_json, image_from_json, image_to_json


def _dumps(value: object) -> str:
    """JSON text of a column (orjson: the server row is written on every transition)."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


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
        "flavor": _dumps(flavor_to_json(record.flavor)),
        "image_id": record.image_id,
        "image": _dumps(image_to_json(record.image)),
        "is_bfv": record.is_bfv,
        "availability_zone": record.availability_zone,
        "status": str(record.status),
        "task_state": str(record.task_state) if record.task_state is not None else None,
        "host": record.host,
        "node": record.node,
        "attempts": _dumps(record.attempts),
        "scheduling": _dumps(scheduling),
        "fault": _dumps(record.fault) if record.fault is not None else None,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "launched_at": record.launched_at,
        "deleted_at": record.deleted_at,
    }


def _from_row(row: RowMapping) -> ServerRecord:
    scheduling = orjson.loads(row["scheduling"] or "{}")
    task = row["task_state"]
    return ServerRecord(
        uuid=row["uuid"],
        name=row["name"],
        project_id=row["project_id"],
        user_id=row["user_id"],
        flavor_id=row["flavor_id"],
        flavor=flavor_from_json(orjson.loads(row["flavor"])),
        image_id=row["image_id"],
        image=image_from_json(orjson.loads(row["image"])),
        is_bfv=bool(row["is_bfv"]),
        availability_zone=row["availability_zone"],
        status=ServerStatus(row["status"]),
        task_state=TaskState(task) if task is not None else None,
        host=row["host"],
        node=row["node"],
        attempts=orjson.loads(row["attempts"] or "[]"),
        scheduling=scheduling,
        fault=orjson.loads(row["fault"]) if row["fault"] else None,
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        launched_at=row["launched_at"],
        deleted_at=row["deleted_at"],
        requested_host=scheduling.get("requested_host"),
    )


# INSERT INTO servers (uuid, name, ...) VALUES (...)
_INSERT_SERVER = Statement(servers.insert().values(
    {column.name: sa.bindparam(column.name) for column in servers.columns}))


def insert_server(conn: Connection, record: ServerRecord) -> None:
    _INSERT_SERVER.run(conn, _to_row(record))


_LOAD_SERVER = servers.select().where(servers.c.uuid == sa.bindparam("b_uuid"))


def load_server(conn: Connection, uuid: str, *, with_deleted: bool = False
                ) -> ServerRecord | None:
    row = conn.execute(_LOAD_SERVER, {"b_uuid": uuid}).mappings().first()
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
    statuses: tuple[str, ...] | None = None  # any of these
    host: str | None = None
    name: str | None = None
    limit: int | None = None
    marker: str | None = None
    # Servers changed at or after this moment, deleted ones included (nova's filter).
    changes_since: datetime.datetime | None = None


def list_servers(conn: Connection, query: ServerQuery) -> list[ServerRecord]:
    """Servers newest first, as nova lists them; ``marker`` pages after that server."""
    statement = servers.select()
    if query.changes_since is not None:
        statement = statement.where(servers.c.updated_at >= query.changes_since)
    else:
        statement = statement.where(servers.c.status != ServerStatus.DELETED)
    if query.project_id is not None:
        statement = statement.where(servers.c.project_id == query.project_id)
    if query.statuses is not None:
        statement = statement.where(servers.c.status.in_(query.statuses))
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
        .where(servers.c.host == host, servers.c.status != ServerStatus.DELETED)
    ).scalar_one())


def instances_by_host(conn: Connection) -> dict[str, int]:
    """Servers not deleted, counted per host."""
    # SELECT host, count(*) FROM servers WHERE status != 'DELETED' AND host IS NOT NULL
    # GROUP BY host
    rows = conn.execute(
        sa.select(servers.c.host, sa.func.count())
        .where(servers.c.status != ServerStatus.DELETED, servers.c.host.is_not(None))
        .group_by(servers.c.host))
    return {str(host): int(count) for host, count in rows}


@dataclass(frozen=True)
class Fence:
    """A conductor's claim on an operation: a transition made for it applies only while
    the operation is still that conductor's (a successor that took it over wins)."""

    operation_id: int
    owner: str


def transition(conn: Connection, uuid: str, *,
               expect_status: Iterable[ServerStatus] | None = None,
               expect_task: Iterable[TaskState | None] | None = None,
               fence: Fence | None = None, finish: bool = False,
               **changes: Any) -> bool:
    """Change a server if it is still in one of the expected states; False if it is not
    (deleted meanwhile, or another operation got there first, or ``fence`` no longer
    holds). JSON fields are given as Python values. ``finish``: the operation of
    ``fence`` is over, whether or not the server changed: it is deleted (still only
    if its owner is the fence's), on PostgreSQL in the same statement."""
    if finish and fence is None:
        raise ValueError("finishing an operation needs its fence")
    values = dict(changes)
    for name in ("attempts", "scheduling", "fault"):
        if name in values and values[name] is not None:
            values[name] = _dumps(values[name])
    if "flavor" in values:
        values["flavor"] = _dumps(flavor_to_json(values["flavor"]))
    if "image" in values:
        values["image"] = _dumps(image_to_json(values["image"]))
    for name in ("status", "task_state"):
        if values.get(name) is not None:
            values[name] = str(values[name])
    values["updated_at"] = utcnow_precise()
    statement = _transition_statement(
        tuple(sorted(values)),
        tuple(str(s) for s in expect_status) if expect_status is not None else None,
        tuple(str(t) if t is not None else None for t in expect_task)
        if expect_task is not None else None,
        fence is not None, finish and conn.dialect.name == "postgresql")
    params = {f"v_{name}": value for name, value in values.items()}
    params["b_uuid"] = uuid
    if fence is not None:
        params["b_operation"], params["b_owner"] = fence.operation_id, fence.owner
    changed = bool(statement.run(conn, params).rowcount)
    if finish and conn.dialect.name != "postgresql":
        assert fence is not None
        operation_store.finish(conn, fence.operation_id, fence.owner)
    return changed


@functools.lru_cache(maxsize=512)
def _transition_statement(columns: tuple[str, ...], statuses: tuple[str, ...] | None,
                          tasks: tuple[str | None, ...] | None,
                          fenced: bool, finishing: bool = False) -> Statement:
    """The UPDATE of a transition of this shape, built once (building and hashing a
    statement cost more than running it; a conductor runs thousands a minute)."""
    # UPDATE servers SET col = :v_col, ... WHERE uuid = :b_uuid [AND status IN (...)]
    #   [AND (task_state = ... OR ... OR task_state IS NULL)]
    #   [AND EXISTS (SELECT 1 FROM operations WHERE id = :b_operation
    #                AND owner = :b_owner)]
    # (The states are compared one by one, not with expanding IN lists, so that
    # the statement compiles once: Statement.)
    statement = (servers.update().where(servers.c.uuid == sa.bindparam("b_uuid"))
                 .values({name: sa.bindparam(f"v_{name}") for name in columns}))
    if statuses is not None:
        statement = statement.where(sa.or_(*(servers.c.status == s for s in statuses)))
    if tasks is not None:
        statement = statement.where(sa.or_(*(
            servers.c.task_state == t if t is not None else servers.c.task_state.is_(None)
            for t in tasks)))
    if fenced:
        statement = statement.where(sa.exists().where(
            operations.c.id == sa.bindparam("b_operation"),
            operations.c.owner == sa.bindparam("b_owner")))
    if finishing:
        # PostgreSQL: WITH finished AS (DELETE FROM operations WHERE id = :b_operation
        # AND owner = :b_owner) UPDATE servers ...: the fence above reads the
        # statement's snapshot, from before the delete.
        statement = statement.add_cte(operations.delete().where(
            operations.c.id == sa.bindparam("b_operation"),
            operations.c.owner == sa.bindparam("b_owner")).cte("finished"))
    return Statement(statement)


# --- migrations ------------------------------------------------------------------


def _migration_from_row(row: RowMapping) -> MigrationRecord:
    return MigrationRecord(
        id=row["id"], uuid=row["uuid"], server_uuid=row["server_uuid"],
        kind=MigrationKind(row["kind"]), source_host=row["source_host"],
        dest_host=row["dest_host"], status=MigrationStatus(row["status"]),
        created_at=row["created_at"], updated_at=row["updated_at"],
    )


def insert_migration(conn: Connection, record: MigrationRecord) -> MigrationRecord:
    result = conn.execute(migrations.insert().values(
        uuid=record.uuid, server_uuid=record.server_uuid, kind=str(record.kind),
        source_host=record.source_host, dest_host=record.dest_host,
        status=str(record.status), created_at=record.created_at,
        updated_at=record.updated_at,
    ))
    key = result.inserted_primary_key
    assert key is not None
    record.id = int(key[0])
    return record


def update_migration(conn: Connection, uuid: str, *, status: MigrationStatus,
                     dest_host: str | None = None) -> None:
    values: dict[str, Any] = {"status": str(status), "updated_at": utcnow()}
    if dest_host is not None:
        values["dest_host"] = dest_host
    conn.execute(migrations.update().where(migrations.c.uuid == uuid).values(**values))


def load_migration(conn: Connection, uuid: str) -> MigrationRecord | None:
    row = conn.execute(migrations.select().where(migrations.c.uuid == uuid)).mappings().first()
    return _migration_from_row(row) if row is not None else None


def list_migrations(conn: Connection, *, server_uuid: str | None = None,
                    statuses: Sequence[str] | None = None,
                    kinds: Sequence[str] | None = None,
                    source_host: str | None = None) -> list[MigrationRecord]:
    statement = migrations.select()
    if server_uuid is not None:
        statement = statement.where(migrations.c.server_uuid == server_uuid)
    if statuses is not None:
        statement = statement.where(migrations.c.status.in_([str(s) for s in statuses]))
    if kinds is not None:
        statement = statement.where(migrations.c.kind.in_([str(k) for k in kinds]))
    if source_host is not None:
        statement = statement.where(migrations.c.source_host == source_host)
    statement = statement.order_by(migrations.c.id.desc())
    return [_migration_from_row(row) for row in conn.execute(statement).mappings()]


def in_flight_migration(conn: Connection, server_uuid: str) -> MigrationRecord | None:
    """The server's unfinished move, if any (at most one at a time)."""
    found = list_migrations(conn, server_uuid=server_uuid, statuses=IN_FLIGHT)
    return found[0] if found else None


def attempts_summary(attempts: Sequence[Mapping[str, Any]]) -> str:
    """One line per failed host, for a fault message."""
    return "; ".join(
        f"{a.get('host')}: {a.get('kind')}: {a.get('message')}"
        for a in attempts if a.get("result") != "ok"
    )


# --- cleanups --------------------------------------------------------------------


def add_cleanup(conn: Connection, host: str, server_uuid: str, reason: str) -> None:
    """Ask ``host``'s agent to destroy ``server_uuid`` at its next heartbeat."""
    exists = conn.execute(sa.select(cleanups.c.host).where(
        cleanups.c.host == host, cleanups.c.server_uuid == server_uuid)).first()
    if exists is None:
        conn.execute(cleanups.insert().values(host=host, server_uuid=server_uuid,
                                              reason=reason[:255], created_at=utcnow()))


def cleanups_of(conn: Connection, hosts: Sequence[str]) -> dict[str, list[str]]:
    """host -> server uuids its agent should destroy, for the hosts given."""
    statement = sa.select(cleanups.c.host, cleanups.c.server_uuid).order_by(
        cleanups.c.created_at, cleanups.c.server_uuid)
    if len(hosts) <= 100:
        statement = statement.where(cleanups.c.host.in_(list(hosts)))
    # Otherwise (a fleet's heartbeat) read them all: the table holds only the few
    # cleanups not yet told, far fewer than a fleet's hosts.
    wanted = set(hosts)
    found: dict[str, list[str]] = {}
    for host, uuid in conn.execute(statement):
        if host in wanted:
            found.setdefault(str(host), []).append(str(uuid))
    return found


def take_cleanups(conn: Connection, hosts: Sequence[str]) -> dict[str, list[str]]:
    """host -> the guests its agent should destroy now, and forget them.

    A cleanup is due only while its server is at rest (no operation pending) and not
    placed on that host: a server rescheduled to the same host, or moving there,
    keeps its guest. A cleanup that no longer applies is forgotten."""
    due: dict[str, list[str]] = {}
    for host, uuids in cleanups_of(conn, hosts).items():
        busy = set(conn.execute(sa.select(operations.c.server_uuid)
                                .where(operations.c.server_uuid.in_(uuids))).scalars())
        answered = []
        for uuid in uuids:
            if uuid in busy:
                continue
            answered.append(uuid)
            record = load_server(conn, uuid)
            if record is None or record.host != host:
                due.setdefault(host, []).append(uuid)
        drop_cleanups(conn, host, answered)
    return due


def drop_cleanups(conn: Connection, host: str, server_uuids: Iterable[str]) -> None:
    """The agent of ``host`` has been told; forget these."""
    uuids = list(server_uuids)
    if uuids:
        conn.execute(cleanups.delete().where(cleanups.c.host == host,
                                             cleanups.c.server_uuid.in_(uuids)))
