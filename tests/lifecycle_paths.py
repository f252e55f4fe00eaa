"""Servers brought into any state of the lifecycle's table by the table's own
transitions (never by writing the row by hand), for tests of anything that reads
servers."""

from __future__ import annotations

import collections

from sqlalchemy.engine import Connection

from moorage.db.database import Database
from moorage.lifecycle import machine, operations, store
from moorage.lifecycle.machine import Actor, Transition
from moorage.lifecycle.records import MigrationRecord, ServerRecord
from moorage.lifecycle.states import OperationKind, ServerStatus, TaskState
from moorage.lifecycle.store import Applied, Fence
from moorage.model.flavor import Flavor
from moorage.model.image import Image

State = tuple[ServerStatus, TaskState | None]
OWNER = "conductor-under-test"


def new_record(uuid: str) -> ServerRecord:
    return ServerRecord(uuid=uuid, name=uuid, project_id="p", user_id="u", flavor_id="f",
                        flavor=Flavor("f", 1, 512, 1), image_id="i",
                        image=Image(id="i", name="i", disk_format="raw"))


def insert(db: Database, uuid: str) -> None:
    """A new server, as POST /servers records it (no operation)."""
    with db.writer() as writer:
        store.insert_server(writer.conn, new_record(uuid))


def operation_of(step: Transition) -> OperationKind:
    """The operation kind whose rule applies (or accepts) ``step``: an accepting
    transition of no rule (the hard reboot) is the one whose task states it enters."""
    for rule in machine.OPERATIONS.values():
        if step.name in rule.applies or rule.accepted == step:
            return rule.kind
    for rule in machine.OPERATIONS.values():
        if step.actor == Actor.API and step.task in rule.tasks:
            return rule.kind
    raise LookupError(step.name)


def records_no_operation(step: Transition) -> bool:
    """An admin's reset: the API moves the server and leaves nothing to carry out."""
    return step.actor == Actor.API and step.task is None and not step.creates


def paths() -> dict[State, list[Transition]]:
    """The shortest sequence of transitions from a new server to every state the table
    reaches (breadth first over the table)."""
    start: State = (machine.CREATED.status or ServerStatus.BUILD, machine.CREATED.task)
    found: dict[State, list[Transition]] = {start: []}
    queue = collections.deque([start])
    while queue:
        state = queue.popleft()
        for step in machine.TRANSITIONS:
            # (An admin's reset would be a short cut to everywhere, placing nothing.)
            if step.creates or records_no_operation(step) or not step.allows(*state):
                continue
            reached: State = (step.target(state[0]), step.task)
            if reached not in found:
                found[reached] = [*found[state], step]
                queue.append(reached)
    return found


def flavor_change() -> tuple[Transition, State]:
    """The conductor's transition that sets a server's flavor (a resize's end), and a
    state it applies from."""
    step = next(t for t in machine.TRANSITIONS
                if machine.Field.FLAVOR in t.fields and t.actor == Actor.CONDUCTOR)
    return step, next(s for s in paths() if step.allows(*s))


def drive(db: Database, uuid: str, steps: list[Transition], host: str = "h1") -> None:
    """Apply ``steps`` to server ``uuid`` as the API and a conductor would: an accept
    records its operation; a conductor's step is fenced on an operation of its kind
    held by ``OWNER`` (made when none is pending)."""
    for step in steps:
        with db.writer() as writer:
            if step.actor == Actor.API:
                assert store.apply(writer.conn, step, uuid) is Applied.APPLIED, step.name
                operations.add(writer.conn, uuid, operation_of(step), owner=OWNER,
                               lease_seconds=600)
                continue
            op = hold(writer.conn, uuid, operation_of(step))
            outcome = store.apply(writer.conn, step, uuid, _changes_for(step, host),
                                  fence=Fence(op.id, OWNER))
            assert outcome is Applied.APPLIED, step.name


def hold(conn: Connection, uuid: str, kind: OperationKind) -> operations.Operation:
    """The server's pending operation, held by ``OWNER`` (a new one of ``kind`` if none
    is pending)."""
    pending = operations.pending(conn, [uuid])
    if pending:
        return pending[0]
    return operations.add(conn, uuid, kind, owner=OWNER, lease_seconds=600, first=True)


def _changes_for(step: Transition, host: str) -> store.ServerChanges:
    """Plausible values of the fields a step sets (a host when it places the server)."""
    if machine.Field.HOST in step.fields and step.status != ServerStatus.ERROR:
        return store.ServerChanges(host=host, node=host)
    return store.NO_CHANGES


def bring(db: Database, uuid: str, state: State, host: str = "h1") -> None:
    """A new server ``uuid`` brought to ``state`` by the table's transitions (placed on
    ``host`` where a transition places it)."""
    insert(db, uuid)
    drive(db, uuid, paths()[state], host)


def record_move(db: Database, move: MigrationRecord, *, destination: str | None = None,
                kind: OperationKind = OperationKind.MIGRATE) -> MigrationRecord:
    """A move recorded as the conductor records it: under its operation's fence, with
    the times and requester of ``move``; with ``destination``, finished there (by the
    table's ``migration.finished``). The operation is then done, so the next move of
    the same server can be recorded."""
    with db.writer() as writer:
        operation = operations.add(writer.conn, move.server_uuid, kind, owner=OWNER,
                                   lease_seconds=600)
        fence = Fence(operation.id, OWNER)
        found = store.insert_migration(writer.conn, move, fence=fence)
        assert found is not None
        if destination is not None:
            assert store.apply_migration(
                writer.conn, machine.migration_transition("migration.finished"),
                found.uuid, fence=fence, dest_host=destination) is Applied.APPLIED
            found = store.load_migration(writer.conn, found.uuid)
            assert found is not None
        assert operations.finish(writer.conn, operation.id, OWNER)
    return found
