"""Reading and changing servers and migrations.

Every state change of a server goes through :func:`transition`, a compare-and-set on
its status and task state (and, for the conductor, on still owning the operation it
works for), so the conductors and the API never overwrite each other: a delete that
arrives during a build wins, and the build notices at its next step.
"""

from __future__ import annotations

import copy
import datetime
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any, Final, TypeVar

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from moorage.db.clock import utcnow, utcnow_precise
from moorage.db.statements import Statement, datetime_from_driver
from moorage.lifecycle import listing, tally
from moorage.lifecycle import operations as operation_store
from moorage.lifecycle.attributes import ServerAttributes
from moorage.lifecycle.history import (
    Attempt,
    CorruptHistory,
    Fault,
    SchedulingRecord,
    attempts_from_json,
    attempts_json,
)
from moorage.lifecycle.listing import ServerQuery
from moorage.lifecycle.machine import (
    CREATED,
    MIGRATION_START,
    Actor,
    Field,
    MigrationTransition,
    Precondition,
    Transition,
)
from moorage.lifecycle.records import MigrationRecord, ServerRecord
from moorage.lifecycle.schema import cleanups, migrations, operations, server_tags, servers
from moorage.lifecycle.states import (
    IN_FLIGHT,
    MigrationKind,
    MigrationStatus,
    ServerStatus,
    TaskState,
)
from moorage.model.codec import flavor_from_json, flavor_to_json, image_from_json, image_to_json
from moorage.model.flavor import Flavor
from moorage.model.image import Image

T = TypeVar("T")


def _dumps(value: object) -> str:
    """JSON text of a column (orjson: the server row is written on every transition)."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _scheduling_json(scheduling: SchedulingRecord | None,
                     requested_host: str | None) -> dict[str, Any]:
    """The scheduling column: the record, and the requested host of the first
    scheduling (no column of its own)."""
    data = scheduling.to_json() if scheduling is not None else {}
    if requested_host:
        data.setdefault("requested_host", requested_host)
    return data


def _to_row(record: ServerRecord) -> dict[str, Any]:
    return {
        "uuid": record.uuid,
        "name": record.name,
        "project_id": record.project_id,
        "user_id": record.user_id,
        "flavor_id": record.flavor_id,
        "flavor": _dumps(flavor_to_json(record.flavor)),
        "vcpus": record.flavor.vcpus,
        "memory_mb": record.flavor.memory_mb,
        "image_id": record.image_id,
        "image": _dumps(image_to_json(record.image)),
        "is_bfv": record.is_bfv,
        "availability_zone": record.availability_zone,
        "status": str(record.status),
        "task_state": str(record.task_state) if record.task_state is not None else None,
        "host": record.host,
        "node": record.node,
        "attempts": _dumps(attempts_json(record.attempts)),
        "scheduling": _dumps(_scheduling_json(record.scheduling, record.requested_host)),
        "fault": _dumps(record.fault.to_json()) if record.fault is not None else None,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "launched_at": record.launched_at,
        "deleted_at": record.deleted_at,
        "attributes": _dumps(record.attributes.to_json()),
    }


def _history(uuid: str, name: str, text: str | None, read: Callable[[str], T]) -> T | None:
    """A history column read back; CorruptHistory naming the server and the column
    when it is not what was written (a hand-edited row)."""
    if not text:
        return None
    try:
        return read(text)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise CorruptHistory(uuid, name, exc) from None


# The history columns read back, by their text. Why: the compute API lists the same
# servers again and again (a watcher's changes-since polls overlap), and turning a
# scheduling record into its typed form costs twice reading the row's other columns;
# the same text always reads the same. The values are shared: nothing mutates a
# server's history once read (a change is a transition, which writes new values).
@functools.lru_cache(maxsize=4096)
def _read_attempts(text: str) -> tuple[Attempt, ...]:
    return attempts_from_json(orjson.loads(text))


@functools.lru_cache(maxsize=4096)
def _read_scheduling(text: str) -> tuple[SchedulingRecord | None, str | None]:
    """The record (None for a server never scheduled) and the requested host."""
    data = orjson.loads(text)
    if not isinstance(data, dict):
        raise TypeError(f"an object was stored, not {type(data).__name__}")
    record = SchedulingRecord.from_json(data) if "operation" in data else None
    return record, data.get("requested_host")


@functools.lru_cache(maxsize=4096)
def _read_attributes(text: str) -> ServerAttributes:
    return ServerAttributes.from_json(orjson.loads(text))


@functools.lru_cache(maxsize=1024)
def _read_fault(text: str) -> Fault:
    return Fault.from_json(orjson.loads(text))


# A row of the servers table: SQLAlchemy's, or the driver's read by column name
# (``_mapping``).
ServerRow = RowMapping | Mapping[str, Any]


def record_from_row(row: ServerRow) -> ServerRecord:
    """A server as its row stores it (for the lifecycle's other readers)."""
    return _from_row(row)


def _from_row(row: ServerRow) -> ServerRecord:
    uuid = row["uuid"]
    scheduling, requested_host = _history(uuid, "scheduling", row["scheduling"],
                                          _read_scheduling) or (None, None)
    task = row["task_state"]
    return ServerRecord(
        uuid=uuid,
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
        attempts=_history(uuid, "attempts", row["attempts"], _read_attempts) or (),
        scheduling=scheduling,
        fault=_history(uuid, "fault", row["fault"], _read_fault),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        launched_at=row["launched_at"],
        deleted_at=row["deleted_at"],
        requested_host=requested_host,
        attributes=_history(uuid, "attributes", row["attributes"], _read_attributes)
        or ServerAttributes(),
    )


# INSERT INTO servers (uuid, name, ...) VALUES (...)
_INSERT_SERVER = Statement(servers.insert().values(
    {column.name: sa.bindparam(column.name) for column in servers.columns}))


def insert_server(conn: Connection, record: ServerRecord) -> None:
    """Record a new server, in the state the table's creating transition gives it."""
    created = CREATED
    if (record.status, record.task_state) != (created.status, created.task):
        raise IllegalTransition(f"{created.name} creates a server in {created.status}/"
                                f"{created.task}, not {record.status}/{record.task_state}")
    _INSERT_SERVER.run(conn, _to_row(record))
    tally.added(conn, record)
    if record.attributes.tags:
        _retag(conn, record.uuid, record.attributes.tags)


_LOAD_SERVER = servers.select().where(servers.c.uuid == sa.bindparam("b_uuid"))
# ... FOR UPDATE (PostgreSQL; SQLite's writers take turns anyway)
_LOAD_SERVER_FOR_UPDATE = _LOAD_SERVER.with_for_update()


def load_server(conn: Connection, uuid: str, *, with_deleted: bool = False,
                for_update: bool = False) -> ServerRecord | None:
    """The server; ``for_update``: its row locked until the transaction ends, so that
    writers of its attributes queue instead of losing their compare-and-set to each
    other round after round."""
    row = conn.execute(_LOAD_SERVER_FOR_UPDATE if for_update else _LOAD_SERVER,
                       {"b_uuid": uuid}).mappings().first()
    if row is None:
        return None
    record = _from_row(row)
    if record.deleted and not with_deleted:
        return None
    return record


def list_servers(conn: Connection, query: ServerQuery) -> list[ServerRecord]:
    """One page of servers, filtered and ordered by the query (``listing``: one
    statement, and a first one for the marker's place); LookupError when the marker
    names no server."""
    postgresql = conn.dialect.name == "postgresql"
    marker: tuple[object, ...] | None = None
    if query.marker is not None:
        found = conn.execute(listing.marker_values(query, postgresql)).first()
        if found is None:
            raise LookupError(query.marker)
        marker = tuple(found)
    if query.limit == 0:
        return []
    statement, params = listing.page(query, marker, postgresql)
    rows = statement.run(conn, params).rows
    return [_listed(conn.dialect, tuple(row)) for row in rows]


def _listed(dialect: sa.Dialect, row: tuple[object, ...]) -> ServerRecord:
    """The server of a listed row: read once per version of the row (``_read_row``),
    then copied, so that no caller holds a record another holds."""
    return copy.copy(_read_row(dialect, row))


# Listed rows read back, by their values. Why: a dashboard's changes-since polls
# overlap, so each changed server is listed again and again (the run watcher lists
# each two or three times), and reading a row (its flavor, image and history) is
# about a third of listing it.
@functools.lru_cache(maxsize=1024)
def _read_row(dialect: sa.Dialect, row: tuple[object, ...]) -> ServerRecord:
    return _from_row(_mapping(dialect, row))


# The servers table's columns in the order of its rows, and those holding a time.
_COLUMNS = tuple(column.name for column in servers.columns)
_TIMES = tuple(i for i, column in enumerate(servers.columns)
               if isinstance(column.type, sa.DateTime))


def _mapping(dialect: sa.Dialect, row: Sequence[object]) -> dict[str, object]:
    """A row of the servers table as the driver gave it, by column name, its times
    read as SQLAlchemy reads them (SQLite's text becomes a datetime)."""
    values = list(row)
    for i in _TIMES:
        values[i] = datetime_from_driver(dialect, values[i])
    return dict(zip(_COLUMNS, values, strict=True))


# UPDATE servers SET name = ?, attributes = ?, updated_at = ?
#  WHERE uuid = ? AND status <> 'DELETED' AND attributes = ?
#  [AND (status = 'A' OR ...) AND (task_state = 't' OR task_state IS NULL ...)]
@functools.lru_cache(maxsize=8)
def _describe_statement(precondition: Precondition | None) -> Statement:
    statement = servers.update().where(
        servers.c.uuid == sa.bindparam("b_uuid"),
        servers.c.status != str(ServerStatus.DELETED),
        servers.c.attributes == sa.bindparam("b_before"))
    if precondition is not None:
        statement = statement.where(
            sa.or_(*(servers.c.status == str(s) for s in sorted(precondition.statuses))),
            sa.or_(*(servers.c.task_state == str(t) if t is not None
                     else servers.c.task_state.is_(None)
                     for t in sorted(precondition.tasks, key=str))))
    return Statement(statement.values(
        name=sa.bindparam("name"), attributes=sa.bindparam("attributes"),
        updated_at=sa.bindparam("updated_at")))


def describe(conn: Connection, record: ServerRecord, name: str,
             attributes: ServerAttributes, precondition: Precondition | None = None
             ) -> bool:
    """Change what a server is called and what its owner said of it (PUT /servers/{id},
    metadata, tags): no transition, as these are not its state. Compare-and-set on the
    attributes as ``record`` read them (and, with a ``precondition``, on the server
    being in one of its states); False when they changed since, the server left those
    states, or it is gone (read again and retry, or answer 409 or 404). Its tags'
    rows follow in the same transaction."""
    changed = _describe_statement(precondition).run(conn, {
        "b_uuid": record.uuid, "b_before": _dumps(record.attributes.to_json()),
        "name": name, "attributes": _dumps(attributes.to_json()),
        "updated_at": utcnow_precise()})
    if changed.rowcount != 1:
        return False
    if attributes.tags != record.attributes.tags:
        _retag(conn, record.uuid, attributes.tags)
    return True


def _retag(conn: Connection, uuid: str, tags: Sequence[str]) -> None:
    """The server's rows of server_tags: ``tags``, and only them."""
    # DELETE FROM server_tags WHERE server_uuid = :uuid;
    # INSERT INTO server_tags (server_uuid, tag) VALUES (:uuid, :tag), ...
    conn.execute(server_tags.delete().where(server_tags.c.server_uuid == uuid))
    if tags:
        conn.execute(server_tags.insert(), [{"server_uuid": uuid, "tag": tag}
                                            for tag in dict.fromkeys(tags)])


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


class Keep(Enum):
    """The value of a field a transition leaves as it is."""

    KEEP = "keep"


KEEP: Final = Keep.KEEP


@dataclass(frozen=True)
class ServerChanges:
    """What a transition sets besides the status and task state the table gives it;
    a field left at ``KEEP`` is not written."""

    host: str | Keep | None = KEEP
    node: str | Keep | None = KEEP
    attempts: Sequence[Attempt] | Keep = KEEP
    scheduling: SchedulingRecord | Keep | None = KEEP
    fault: Fault | Keep | None = KEEP
    launched_at: datetime.datetime | Keep = KEEP
    deleted_at: datetime.datetime | Keep = KEEP
    image_id: str | Keep = KEEP
    image: Image | Keep = KEEP
    flavor_id: str | Keep = KEEP
    flavor: Flavor | Keep = KEEP

    def columns(self) -> dict[Field, object]:
        """The fields set, as their columns store them (JSON as text)."""
        found: dict[Field, object] = {}
        for name in Field:
            value = getattr(self, name.value)
            if value is KEEP:
                continue
            if name == Field.ATTEMPTS:
                value = _dumps(attempts_json(value))
            elif name == Field.SCHEDULING:
                value = _dumps(value.to_json() if value is not None else {})
            elif name == Field.FAULT:
                value = _dumps(value.to_json()) if value is not None else None
            elif name == Field.FLAVOR:
                value = _dumps(flavor_to_json(value))
            elif name == Field.IMAGE:
                value = _dumps(image_to_json(value))
            found[name] = value
        return found


NO_CHANGES = ServerChanges()


class Applied(StrEnum):
    """How a transition went."""

    APPLIED = "applied"
    # The server (or migration) is no longer where the transition starts: deleted
    # meanwhile, or a delete came first.
    STALE = "stale"
    # The fence no longer holds: another conductor took the operation over. Its owner
    # must stop at once and touch nothing more.
    LOST = "lost"


class IllegalTransition(Exception):
    """A transition the table does not allow, refused before anything is written: a
    field it does not declare, a conductor's transition without its fence, a
    precondition that cannot hold. A programming error, never a user's."""


def apply(conn: Connection, transition: Transition, uuid: str,
          changes: ServerChanges = NO_CHANGES, *, fence: Fence | None = None) -> Applied:
    """Apply ``transition`` to server ``uuid`` as one compare-and-set: only if the
    server is in a state the transition starts from and, for a conductor's
    transition, only while ``fence`` holds. A transition that ``ends`` its operation
    deletes the operation in the same transaction, and only if it applied. The
    caller's connection is in a transaction (a writer's, or a group commit's)."""
    if transition.creates:
        raise IllegalTransition(f"{transition.name} creates a server: insert_server")
    if (transition.actor == Actor.CONDUCTOR) != (fence is not None):
        raise IllegalTransition(
            f"{transition.name} is the {transition.actor}'s: "
            + ("a conductor's transition is fenced on its operation"
               if fence is None else "only a conductor's transition is fenced"))
    values = changes.columns()
    extra = set(values) - transition.fields
    if extra:
        raise IllegalTransition(f"{transition.name} may not set "
                                f"{', '.join(sorted(extra))}; it sets "
                                f"{', '.join(sorted(transition.fields)) or 'nothing else'}")
    row: dict[str, object] = {str(name): value for name, value in values.items()}
    if isinstance(changes.flavor, Flavor):  # its sizes' columns follow it (quotas)
        row["vcpus"], row["memory_mb"] = changes.flavor.vcpus, changes.flavor.memory_mb
    if _changes_usage(transition) or isinstance(changes.flavor, Flavor):
        tally.forget(conn)  # what the project's count kept in this transaction
    if transition.status is not None:
        row["status"] = str(transition.status)
    row["task_state"] = str(transition.task) if transition.task is not None else None
    row["updated_at"] = utcnow_precise()
    finishing = transition.ends and fence is not None
    statement = _apply_statement(transition, tuple(sorted(row)), finishing,
                                 conn.dialect.name == "postgresql")
    params = {f"v_{name}": value for name, value in row.items()}
    params["b_uuid"] = uuid
    if fence is not None:
        params["b_operation"], params["b_owner"] = fence.operation_id, fence.owner
    if statement.run(conn, params).rowcount:
        if finishing and conn.dialect.name != "postgresql":
            assert fence is not None
            operation_store.finish(conn, fence.operation_id, fence.owner)
        return Applied.APPLIED
    return _why_not(conn, fence)


@functools.lru_cache(maxsize=256)
def _changes_usage(transition: Transition) -> bool:
    """Whether ``transition`` may make a server count, or stop counting, in its
    project's usage (live servers are those not DELETED)."""
    return ServerStatus.DELETED in transition.statuses or \
        transition.status == ServerStatus.DELETED


def _why_not(conn: Connection, fence: Fence | None) -> Applied:
    """A compare-and-set that changed nothing: was the fence lost, or the state?"""
    if fence is not None and not operation_store.owned(conn, fence.operation_id,
                                                       fence.owner):
        return Applied.LOST
    return Applied.STALE


def _fenced() -> sa.Exists:
    """The operation is still the fence's owner's. On PostgreSQL the row is locked
    (FOR SHARE) until the transaction ends, so a successor's claim of it waits for
    this transaction and then sees what it wrote: nothing is written after a takeover
    that the successor did not see."""
    return sa.exists(sa.select(sa.literal_column("1")).where(
        operations.c.id == sa.bindparam("b_operation"),
        operations.c.owner == sa.bindparam("b_owner")).with_for_update(read=True))


@functools.lru_cache(maxsize=512)
def _apply_statement(transition: Transition, columns: tuple[str, ...], finishing: bool,
                     postgresql: bool) -> Statement:
    """The statement of a transition setting these columns, built once (building and
    hashing a statement cost more than running it; a conductor runs thousands a
    minute)."""
    # UPDATE servers SET col = :v_col, ... WHERE uuid = :b_uuid
    #   AND (status = 'A' OR status = ...) AND (task_state = 't' OR task_state IS NULL ...)
    #   [AND EXISTS (SELECT 1 FROM operations WHERE id = :b_operation
    #                AND owner = :b_owner FOR SHARE)]
    # (The states are compared one by one, not with expanding IN lists, so that
    # the statement compiles once: Statement.)
    statement = (servers.update().where(servers.c.uuid == sa.bindparam("b_uuid"))
                 .values({name: sa.bindparam(f"v_{name}") for name in columns})
                 .where(sa.or_(*(servers.c.status == str(s)
                                 for s in sorted(transition.statuses))))
                 .where(sa.or_(*(servers.c.task_state == str(t) if t is not None
                                 else servers.c.task_state.is_(None)
                                 for t in sorted(transition.tasks, key=str)))))
    if transition.actor == Actor.CONDUCTOR:
        statement = statement.where(_fenced())
    if finishing and postgresql:
        # PostgreSQL, in one statement: WITH moved AS (UPDATE servers ... RETURNING
        # uuid) DELETE FROM operations WHERE id = :b_operation AND owner = :b_owner
        # AND EXISTS (SELECT 1 FROM moved): the operation ends only if the server moved.
        moved = statement.returning(servers.c.uuid).cte("moved")
        return Statement(operations.delete().where(
            operations.c.id == sa.bindparam("b_operation"),
            operations.c.owner == sa.bindparam("b_owner"),
            sa.exists(sa.select(moved.c.uuid))).add_cte(moved))
    return Statement(statement)


# --- migrations ------------------------------------------------------------------


def _migration_from_row(row: RowMapping) -> MigrationRecord:
    return MigrationRecord(
        id=row["id"], uuid=row["uuid"], server_uuid=row["server_uuid"],
        kind=MigrationKind(row["kind"]), source_host=row["source_host"],
        dest_host=row["dest_host"], status=MigrationStatus(row["status"]),
        created_at=row["created_at"], updated_at=row["updated_at"],
        user_id=row["user_id"], project_id=row["project_id"],
    )


# INSERT INTO migrations (uuid, server_uuid, ...) SELECT :uuid, ... WHERE EXISTS
#   (SELECT 1 FROM operations WHERE id = :b_operation AND owner = :b_owner FOR SHARE)
_MIGRATION_COLUMNS = ("uuid", "server_uuid", "kind", "source_host", "dest_host", "status",
                      "user_id", "project_id", "created_at", "updated_at")
_INSERT_MIGRATION = Statement(migrations.insert().from_select(
    list(_MIGRATION_COLUMNS),
    sa.select(*(sa.bindparam(f"v_{name}", type_=migrations.c[name].type)
                for name in _MIGRATION_COLUMNS)).where(_fenced())))


def insert_migration(conn: Connection, record: MigrationRecord, *,
                     fence: Fence) -> MigrationRecord | None:
    """Record a move that starts (``MIGRATION_START``), fenced on the operation moving
    the server; None when the fence no longer holds (nothing is written)."""
    if record.status != MIGRATION_START:
        raise IllegalTransition(f"a migration starts {MIGRATION_START}, not {record.status}")
    params: dict[str, object] = {
        "v_uuid": record.uuid, "v_server_uuid": record.server_uuid,
        "v_kind": str(record.kind), "v_source_host": record.source_host,
        "v_dest_host": record.dest_host, "v_status": str(record.status),
        "v_user_id": record.user_id, "v_project_id": record.project_id,
        "v_created_at": record.created_at, "v_updated_at": record.updated_at,
        "b_operation": fence.operation_id, "b_owner": fence.owner}
    if not _INSERT_MIGRATION.run(conn, params).rowcount:
        return None
    found = load_migration(conn, record.uuid)
    assert found is not None
    return found


def apply_migration(conn: Connection, transition: MigrationTransition, uuid: str, *,
                    fence: Fence, dest_host: str | None = None) -> Applied:
    """Move migration ``uuid`` by ``transition``: a compare-and-set on its status,
    fenced on the operation moving its server (the only writer of a migration's
    status)."""
    if dest_host is not None and not transition.dest_host:
        raise IllegalTransition(f"{transition.name} does not record a destination")
    statement = _migration_statement(transition, dest_host is not None)
    params: dict[str, object] = {
        "b_uuid": uuid, "v_status": str(transition.status), "v_updated_at": utcnow(),
        "b_operation": fence.operation_id, "b_owner": fence.owner}
    if dest_host is not None:
        params["v_dest_host"] = dest_host
    if statement.run(conn, params).rowcount:
        return Applied.APPLIED
    return _why_not(conn, fence)


@functools.lru_cache(maxsize=64)
def _migration_statement(transition: MigrationTransition, dest_host: bool) -> Statement:
    # UPDATE migrations SET status = :v_status, updated_at = :v_updated_at
    #   [, dest_host = :v_dest_host] WHERE uuid = :b_uuid AND (status = 'a' OR ...)
    #   AND EXISTS (SELECT 1 FROM operations WHERE id = :b_operation
    #               AND owner = :b_owner FOR SHARE)
    columns = ["status", "updated_at", *(["dest_host"] if dest_host else [])]
    return Statement(
        migrations.update().where(migrations.c.uuid == sa.bindparam("b_uuid"))
        .where(sa.or_(*(migrations.c.status == str(s) for s in sorted(transition.statuses))))
        .where(_fenced())
        .values({name: sa.bindparam(f"v_{name}") for name in columns}))


def load_migration(conn: Connection, uuid: str) -> MigrationRecord | None:
    row = conn.execute(migrations.select().where(migrations.c.uuid == uuid)).mappings().first()
    return _migration_from_row(row) if row is not None else None


def list_migrations(conn: Connection, *, server_uuid: str | None = None,
                    statuses: Sequence[str] | None = None,
                    kinds: Sequence[str] | None = None,
                    source_host: str | None = None, host: str | None = None,
                    user_id: str | None = None, project_id: str | None = None,
                    changes_since: datetime.datetime | None = None,
                    changes_before: datetime.datetime | None = None,
                    limit: int | None = None, marker: str | None = None
                    ) -> list[MigrationRecord]:
    """Moves newest first (nova's order: created_at, then id, descending). ``host``:
    from or to that host; ``changes_since``/``changes_before``: updated at or after, at
    or before; ``marker``: the page after that migration's uuid (LookupError when
    there is none); ``limit``: at most that many, cut in the query."""
    # SELECT * FROM migrations WHERE [server_uuid = :s] [AND status IN (...)]
    #   [AND kind IN (...)] [AND source_host = :h] [AND (source_host = :h OR
    #   dest_host = :h)] [AND user_id = :u] [AND project_id = :p]
    #   [AND updated_at >= :since] [AND updated_at <= :before]
    #   [AND (created_at < :mc OR (created_at = :mc AND id < :mid))]
    #   ORDER BY created_at DESC, id DESC [LIMIT :limit]
    # (ix_migrations_created_at_id serves the order, so a page reads a page of rows.)
    c = migrations.c
    statement = migrations.select()
    if server_uuid is not None:
        statement = statement.where(c.server_uuid == server_uuid)
    if statuses is not None:
        statement = statement.where(c.status.in_([str(s) for s in statuses]))
    if kinds is not None:
        statement = statement.where(c.kind.in_([str(k) for k in kinds]))
    if source_host is not None:
        statement = statement.where(c.source_host == source_host)
    if host is not None:
        statement = statement.where(sa.or_(c.source_host == host, c.dest_host == host))
    if user_id is not None:
        statement = statement.where(c.user_id == user_id)
    if project_id is not None:
        statement = statement.where(c.project_id == project_id)
    if changes_since is not None:
        statement = statement.where(c.updated_at >= changes_since)
    if changes_before is not None:
        statement = statement.where(c.updated_at <= changes_before)
    after = None
    if marker is not None:
        found = conn.execute(sa.select(c.created_at, c.id).where(c.uuid == marker)).first()
        if found is None:
            raise LookupError(marker)
        after = (found.created_at, found.id)
    statement = listing.newest_first_page(statement, c.created_at, c.id, after, limit)
    return [_migration_from_row(row) for row in conn.execute(statement).mappings()]


def in_flight_migration(conn: Connection, server_uuid: str) -> MigrationRecord | None:
    """The server's unfinished move, if any (at most one at a time)."""
    found = list_migrations(conn, server_uuid=server_uuid, statuses=IN_FLIGHT)
    return found[0] if found else None


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
