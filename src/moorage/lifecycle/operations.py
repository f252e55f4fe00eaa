"""Durable work: every request the compute API accepts becomes an operation row, written
in the transaction that records the server's new state, and a conductor carries it out.

Ownership. An operation has at most one owner, a conductor, whose claim holds until
``lease_until``; the owner renews the leases of everything it holds well before they
run out. A conductor that dies stops renewing, and once the lease has run out any
conductor may claim the operation again: a *takeover*, which reconciles what the dead
owner may have left half done (a claim in placement, a guest on a host) before going
on. Every change the owner makes to the server is fenced on still owning the
operation (``store.Fence``), so an owner that was only slow, not dead, cannot undo
its successor's work.

Order. A server's operations run one at a time, oldest first: an operation is
claimable only when no older operation of the same server is left. So a delete
accepted while a build runs waits for the build to notice it and stop.

Clocks. Leases are compared against each process's own UTC clock: the conductors
of one cloud need synchronised clocks (NTP), as nova's service liveness does.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from moorage.db.clock import utcnow_precise as now
from moorage.db.statements import Statement
from moorage.lifecycle.schema import operations
from moorage.lifecycle.states import OperationKind


@dataclass(frozen=True)
class Operation:
    """One accepted request and who is carrying it out."""

    id: int
    server_uuid: str
    kind: OperationKind
    arguments: Mapping[str, Any] = field(default_factory=dict)
    owner: str | None = None
    lease_until: datetime.datetime | None = None
    takeovers: int = 0
    progress: Mapping[str, Any] = field(default_factory=dict)
    # The owner whose lease ran out, when this claim took the operation over.
    taken_from: str | None = None
    # The ids of the request that recorded it: its work logs under them and passes them
    # on to the services it calls, as the request itself would have.
    request_id: str | None = None
    global_request_id: str | None = None
    # Who made that request: a migration records them as the user and project that
    # asked for the move (GET /os-migrations, 2.80), as nova does.
    user_id: str | None = None
    project_id: str | None = None


# The request's ids and its caller ride in the arguments' JSON under this key (no
# column of their own: never queried); ``arguments`` never shows it.
_REQUEST_KEY = "_request"


def _operation(row: RowMapping, *, taken_from: str | None = None) -> Operation:
    arguments = json.loads(row["arguments"])
    request = arguments.pop(_REQUEST_KEY, None) or {}
    return Operation(
        id=int(row["id"]), server_uuid=row["server_uuid"], kind=OperationKind(row["kind"]),
        arguments=arguments, owner=row["owner"],
        lease_until=row["lease_until"], takeovers=int(row["takeovers"]),
        progress=json.loads(row["progress"]), taken_from=taken_from,
        request_id=request.get("id"), global_request_id=request.get("global_id"),
        user_id=request.get("user_id"), project_id=request.get("project_id"))


def _older_exists(server_uuid: Any, operation_id: Any) -> sa.Exists:
    older = operations.alias("older")
    return sa.exists().where(older.c.server_uuid == server_uuid, older.c.id < operation_id)


# INSERT INTO operations (server_uuid, kind, ...) VALUES (...) RETURNING id
_INSERT = Statement(operations.insert().values(
    {column.name: sa.bindparam(column.name) for column in operations.columns
     if column.name != "id"}).returning(operations.c.id))


def add(conn: Connection, server_uuid: str, kind: OperationKind,
        arguments: Mapping[str, Any] | None = None, *, owner: str | None = None,
        lease_seconds: float = 0.0, first: bool = False, request_id: str | None = None,
        global_request_id: str | None = None, user_id: str | None = None,
        project_id: str | None = None) -> Operation:
    """Record an operation. ``owner`` claims it at once, unless an older operation of the
    same server is still there (it then waits, unowned, for its turn); ``first``: the
    caller knows there is none (a server created in this transaction). ``request_id``,
    ``global_request_id``: the ids of the request that asked for it; ``user_id``,
    ``project_id``: its caller."""
    stamp = now()
    if owner is not None and not first and conn.execute(
            sa.select(operations.c.id).where(operations.c.server_uuid == server_uuid)
            .limit(1)).first() is not None:
        owner = None
    lease = stamp + datetime.timedelta(seconds=lease_seconds) if owner else None
    stored = dict(arguments or {})
    request = {key: value for key, value in (
        ("id", request_id), ("global_id", global_request_id), ("user_id", user_id),
        ("project_id", project_id)) if value is not None}
    if request:
        stored[_REQUEST_KEY] = request
    values = {"server_uuid": server_uuid, "kind": str(kind),
              "arguments": json.dumps(stored), "owner": owner,
              "lease_until": lease, "takeovers": 0, "progress": "{}",
              "created_at": stamp.replace(microsecond=0),
              "updated_at": stamp.replace(microsecond=0)}
    row = _INSERT.run(conn, values).first()
    assert row is not None
    return Operation(id=int(row[0]), server_uuid=server_uuid, kind=kind,
                     arguments=dict(arguments or {}), owner=owner, lease_until=lease,
                     request_id=request_id, global_request_id=global_request_id,
                     user_id=user_id, project_id=project_id)


def claimable(conn: Connection, limit: int, *, server_uuid: str | None = None
              ) -> list[Operation]:
    """Operations nobody holds (or whose owner's lease ran out), each the oldest of its
    server, oldest first."""
    # SELECT * FROM operations o WHERE (owner IS NULL OR lease_until < :now)
    #   AND NOT EXISTS (SELECT 1 FROM operations older
    #                   WHERE older.server_uuid = o.server_uuid AND older.id < o.id)
    #   ORDER BY id LIMIT :limit
    statement = (operations.select()
                 .where(sa.or_(operations.c.owner.is_(None),
                               operations.c.lease_until < now()),
                        ~_older_exists(operations.c.server_uuid, operations.c.id))
                 .order_by(operations.c.id).limit(limit))
    if server_uuid is not None:
        statement = statement.where(operations.c.server_uuid == server_uuid)
    return [_operation(row) for row in conn.execute(statement).mappings()]


def claim(conn: Connection, operation: Operation, owner: str, lease_seconds: float
          ) -> Operation | None:
    """Take ``operation`` (as read by ``claimable``) for ``owner``; None if someone else
    got it first."""
    stamp = now()
    taken_over = operation.owner is not None and operation.owner != owner
    # UPDATE operations SET owner = :owner, lease_until = :lease, takeovers = ...
    # WHERE id = :id AND (owner IS NULL OR lease_until < :now)
    result = conn.execute(
        operations.update()
        .where(operations.c.id == operation.id,
               sa.or_(operations.c.owner.is_(None), operations.c.lease_until < stamp))
        .values(owner=owner,
                lease_until=stamp + datetime.timedelta(seconds=lease_seconds),
                takeovers=operations.c.takeovers + (1 if taken_over else 0),
                updated_at=stamp.replace(microsecond=0)))
    if not result.rowcount:
        return None
    row = conn.execute(operations.select().where(operations.c.id == operation.id)
                       ).mappings().one()
    return _operation(row, taken_from=operation.owner if taken_over else None)


def renew(conn: Connection, owner: str, lease_seconds: float) -> set[int]:
    """Extend the lease of everything ``owner`` holds; the ids of those operations."""
    # UPDATE operations SET lease_until = :lease WHERE owner = :owner RETURNING id
    return {int(row[0]) for row in conn.execute(
        operations.update().where(operations.c.owner == owner)
        .values(lease_until=now() + datetime.timedelta(seconds=lease_seconds))
        .returning(operations.c.id))}


def renew_one(conn: Connection, operation_id: int, owner: str, lease_seconds: float) -> bool:
    """Extend the lease of one operation, if ``owner`` still holds it."""
    # UPDATE operations SET lease_until = :lease WHERE id = :id AND owner = :owner
    return bool(conn.execute(
        operations.update().where(operations.c.id == operation_id,
                                  operations.c.owner == owner)
        .values(lease_until=now() + datetime.timedelta(seconds=lease_seconds))).rowcount)


# SELECT 1 FROM operations WHERE id = :b_id AND owner = :b_owner [FOR SHARE]
_OWNED_NOW = Statement(sa.select(operations.c.id).where(
    operations.c.id == sa.bindparam("b_id"), operations.c.owner == sa.bindparam("b_owner")))
_OWNED_HELD = Statement(sa.select(operations.c.id).where(
    operations.c.id == sa.bindparam("b_id"), operations.c.owner == sa.bindparam("b_owner"))
    .with_for_update(read=True))


def owned(conn: Connection, operation_id: int, owner: str, *, hold: bool = False) -> bool:
    """Does ``owner`` still hold the operation (whatever its lease says)? ``hold``: and
    keep it so until the transaction ends (PostgreSQL locks the row: a successor's
    claim waits for this transaction)."""
    statement = _OWNED_HELD if hold else _OWNED_NOW
    return statement.run(conn, {"b_id": operation_id, "b_owner": owner}).first() is not None


def release_all(conn: Connection, owner: str) -> int:
    """Give up everything ``owner`` holds, so others may claim it at once (a conductor
    stopping with work it has not started)."""
    return int(conn.execute(
        operations.update().where(operations.c.owner == owner)
        .values(owner=None, lease_until=None)).rowcount)


def release(conn: Connection, operation_id: int, owner: str) -> bool:
    """Give one operation back, to be claimed again (by anyone)."""
    return bool(conn.execute(
        operations.update().where(operations.c.id == operation_id,
                                  operations.c.owner == owner)
        .values(owner=None, lease_until=None)).rowcount)


def set_progress(conn: Connection, operation_id: int, owner: str,
                 progress: Mapping[str, Any]) -> bool:
    """Record what a successor must know; False if ``owner`` no longer holds it."""
    return bool(conn.execute(
        operations.update().where(operations.c.id == operation_id,
                                  operations.c.owner == owner)
        .values(progress=json.dumps(dict(progress)))).rowcount)


# DELETE FROM operations WHERE id = :b_id AND owner = :b_owner
_FINISH = Statement(operations.delete().where(operations.c.id == sa.bindparam("b_id"),
                                              operations.c.owner == sa.bindparam("b_owner")))
# SELECT id FROM operations WHERE server_uuid = :b_uuid LIMIT 1
_WAITING = Statement(sa.select(operations.c.id)
                     .where(operations.c.server_uuid == sa.bindparam("b_uuid"))
                     .limit(sa.literal_column("1")))


def finish(conn: Connection, operation_id: int, owner: str) -> bool:
    """The operation is done: forget it. False if ``owner`` no longer held it."""
    return bool(_FINISH.run(conn, {"b_id": operation_id, "b_owner": owner}).rowcount)


def waiting(conn: Connection, server_uuid: str) -> bool:
    """Is any operation of ``server_uuid`` left?"""
    return _WAITING.run(conn, {"b_uuid": server_uuid}).first() is not None


def pending(conn: Connection, server_uuids: Sequence[str] | None = None) -> list[Operation]:
    """Every operation not finished (of these servers), oldest first."""
    statement = operations.select().order_by(operations.c.id)
    if server_uuids is not None:
        statement = statement.where(operations.c.server_uuid.in_(list(server_uuids)))
    return [_operation(row) for row in conn.execute(statement).mappings()]
