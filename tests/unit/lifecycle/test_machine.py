"""The lifecycle's table, walked: every transition from every state the table reaches,
legal and illegal, on both backends; what the table refuses before writing; the
migration's table; and the diagram docs/architecture.md shows."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from moorage.db.database import Database
from moorage.lifecycle import machine, operations, schema, store
from moorage.lifecycle.history import attempt_ok
from moorage.lifecycle.machine import Actor, Field, Transition
from moorage.lifecycle.records import MigrationRecord
from moorage.lifecycle.states import (
    MigrationKind,
    MigrationStatus,
    OperationKind,
    ServerStatus,
    TaskState,
)
from moorage.lifecycle.store import Applied, Fence, IllegalTransition, ServerChanges
from tests.lifecycle_paths import OWNER, State, bring, hold, insert, new_record, paths

S, T = ServerStatus, TaskState
Named = Callable[[str], str]
REACHED = paths()
DOCS = Path(__file__).parents[3] / "docs" / "architecture.md"


def _state(db: Database, uuid: str) -> State:
    with db.reader() as conn:
        record = store.load_server(conn, uuid, with_deleted=True)
    assert record is not None
    return record.status, record.task_state


# -- the table itself ---------------------------------------------------------------
def test_every_status_is_reached_and_every_operation_can_end() -> None:
    assert {status for status, _task in REACHED} == set(ServerStatus)
    for rule in machine.OPERATIONS.values():
        if rule.accepted is None:
            continue
        ends = [machine.transition(n) for n in rule.applies if machine.transition(n).ends]
        assert ends, f"{rule.kind} never ends"
        # A failure ends in ERROR, or (a stop, a start: nova reverts the task state)
        # leaves the status as it was, with the fault.
        assert rule.failed is not None and rule.failed.status in (S.ERROR, None)
        assert rule.failed.status == S.ERROR or Field.FAULT in rule.failed.fields


def test_at_rest_is_where_operations_end() -> None:
    assert {S.ACTIVE, S.ERROR, S.VERIFY_RESIZE, S.SHUTOFF, S.DELETED} == machine.AT_REST
    assert {S.BUILD, S.REBUILD, S.RESIZE, S.REVERT_RESIZE, S.REBOOT,
            S.HARD_REBOOT} == machine.IN_PROGRESS
    assert machine.at_rest("ACTIVE", None) and not machine.at_rest("ACTIVE", "deleting")
    assert not machine.at_rest("BUILD", None)


def test_every_task_state_a_server_rests_in_is_none() -> None:
    """A server at rest has no task; one with a task is some operation's."""
    tasks = {task for rule in machine.OPERATIONS.values() for task in rule.tasks}
    for status, task in REACHED:
        assert task is None or task in tasks, (status, task)


def test_each_operation_drives_only_its_own_task_states() -> None:
    for rule in machine.OPERATIONS.values():
        for name in rule.applies:
            step = machine.transition(name)
            assert step.actor == Actor.CONDUCTOR
            assert step.tasks <= rule.tasks, name


def test_every_action_is_accepted_from_rest_only() -> None:
    for action, accepted in machine.ACTIONS.items():
        assert accepted.actor == Actor.API, action
        assert accepted.tasks == {None}, action
        assert accepted.statuses <= machine.AT_REST, action


@pytest.mark.parametrize(("name", "needs"), [
    ("resize.accepted", "status ACTIVE or SHUTOFF and no task state"),
    ("rebuild.accepted", "status ACTIVE or ERROR or SHUTOFF and no task state"),
    ("delete.accepted", "any status but DELETED and any task state but deleting"),
    ("delete.done", "any status but DELETED and task state deleting"),
    ("build.spawning", "status BUILD and task state scheduling or spawning"),
])
def test_a_transition_says_what_it_needs(name: str, needs: str) -> None:
    assert machine.transition(name).needs() == needs


# -- every transition from every reached state, on the database -------------------------
@pytest.mark.parametrize("step", [t for t in machine.TRANSITIONS if not t.creates],
                         ids=lambda t: t.name)
def test_a_transition_applies_from_the_states_it_needs_and_no_other(
        shared_db: Database, unique: Named, step: Transition) -> None:
    db = shared_db
    for number, (state, _path) in enumerate(sorted(REACHED.items(), key=str)):
        uuid = unique(f"s{number}")
        bring(db, uuid, state)
        fence = None
        with db.writer() as writer:
            if step.actor == Actor.CONDUCTOR:
                fence = Fence(hold(writer.conn, uuid, OperationKind.BUILD).id, OWNER)
            outcome = store.apply(writer.conn, step, uuid, fence=fence)
        legal = step.allows(*state)
        assert outcome is (Applied.APPLIED if legal else Applied.STALE), (step.name, state)
        expected = (step.target(state[0]), step.task) if legal else state
        assert _state(db, uuid) == expected, (step.name, state)
        if fence is not None:
            with db.reader() as conn:
                pending = [op.id for op in operations.pending(conn, [uuid])]
            # A conductor's transition ends its operation when it ends one and applied.
            assert (fence.operation_id not in pending) is (legal and step.ends), (
                step.name, state)


def test_a_transition_sets_the_fields_it_declares(shared_db: Database, unique: Named) -> None:
    db, s1 = shared_db, unique("s1")
    bring(db, s1, (S.BUILD, T.SPAWNING))
    with db.writer() as writer:
        fence = Fence(hold(writer.conn, s1, OperationKind.BUILD).id, OWNER)
        store.apply(writer.conn, machine.transition("build.active"), s1,
                    ServerChanges(host="h7", node="h7-node",
                                  attempts=[attempt_ok("h7", "h7-node")]),
                    fence=fence)
    with db.reader() as conn:
        record = store.load_server(conn, s1)
    assert record is not None
    assert (record.host, record.node, record.attempts) == (
        "h7", "h7-node", (attempt_ok("h7", "h7-node"),))


# -- what the table refuses before writing ------------------------------------------------
def test_a_field_the_transition_does_not_declare_is_refused(
        shared_db: Database, unique: Named) -> None:
    db, s1 = shared_db, unique("s1")
    bring(db, s1, (S.ACTIVE, None))
    resize = machine.transition("resize.accepted")
    assert Field.HOST not in resize.fields
    with pytest.raises(IllegalTransition, match=r"resize\.accepted may not set host"), \
            db.writer() as writer:
        store.apply(writer.conn, resize, s1, ServerChanges(host="elsewhere"))
    assert _state(db, s1) == (S.ACTIVE, None)


def test_a_conductors_transition_needs_its_fence_and_the_apis_takes_none(
        shared_db: Database, unique: Named) -> None:
    db, s1 = shared_db, unique("s1")
    bring(db, s1, (S.BUILD, T.SPAWNING))
    with pytest.raises(IllegalTransition, match="fenced"), db.writer() as writer:
        store.apply(writer.conn, machine.transition("build.active"), s1)
    with pytest.raises(IllegalTransition, match="only a conductor"), db.writer() as writer:
        store.apply(writer.conn, machine.transition("delete.accepted"), s1,
                    fence=Fence(1, OWNER))
    assert _state(db, s1) == (S.BUILD, T.SPAWNING)


def test_a_server_is_created_only_as_the_table_creates_it(
        shared_db: Database, unique: Named) -> None:
    db, s1 = shared_db, unique("s1")
    record = new_record(s1)
    record.status = S.ACTIVE
    with pytest.raises(IllegalTransition, match=r"build\.accepted creates"), \
            db.writer() as writer:
        store.insert_server(writer.conn, record)
    with pytest.raises(IllegalTransition, match="creates a server"), db.writer() as writer:
        store.apply(writer.conn, machine.CREATED, s1)
    with db.reader() as conn:
        assert store.load_server(conn, s1) is None


def test_a_name_the_table_lacks_is_refused() -> None:
    with pytest.raises(KeyError):
        machine.transition("build.teleported")


# -- the migration's table ----------------------------------------------------------------
def _migration_in(db: Database, status: MigrationStatus, fence: Fence,
                  unique: Named) -> str:
    """A migration brought to ``status`` by its table's transitions."""
    route = {
        MigrationStatus.MIGRATING: [],
        MigrationStatus.FINISHED: ["migration.finished"],
        MigrationStatus.DONE: ["migration.evacuated"],
        MigrationStatus.ERROR: ["migration.failed"],
        MigrationStatus.CONFIRMED: ["migration.finished", "migration.confirmed"],
        MigrationStatus.REVERTED: ["migration.finished", "migration.reverted"],
        MigrationStatus.DELETED: ["migration.deleted"],
        MigrationStatus.COMPLETED: ["migration.evacuated", "migration.completed"],
    }[status]
    with db.writer() as writer:
        found = store.insert_migration(writer.conn, MigrationRecord(
            uuid=unique(f"m-{status}"), server_uuid=unique("s1"),
            kind=MigrationKind.MIGRATION,
            source_host="h1"), fence=fence)
        assert found is not None
        for name in route:
            assert store.apply_migration(writer.conn, machine.migration_transition(name),
                                         found.uuid, fence=fence) is Applied.APPLIED
    return found.uuid


@pytest.mark.parametrize("step", machine.MIGRATION_TRANSITIONS, ids=lambda t: t.name)
def test_a_migration_moves_only_from_the_statuses_its_transition_needs(
        shared_db: Database, unique: Named, step: machine.MigrationTransition) -> None:
    db = shared_db
    with db.writer() as writer:
        op = operations.add(writer.conn, unique("s1"), OperationKind.MIGRATE, owner=OWNER,
                            lease_seconds=600)
    fence = Fence(op.id, OWNER)
    for status in MigrationStatus:
        if status == MigrationStatus.PRE_MIGRATING:
            continue  # no transition leads there: a move starts MIGRATING
        uuid = _migration_in(db, status, fence, unique)
        with db.writer() as writer:
            outcome = store.apply_migration(writer.conn, step, uuid, fence=fence)
            found = store.load_migration(writer.conn, uuid)
        assert found is not None
        legal = step.allows(status)
        assert outcome is (Applied.APPLIED if legal else Applied.STALE), (step.name, status)
        assert found.status == (step.status if legal else status)


def test_a_migration_is_written_only_while_its_operation_is_owned(
        shared_db: Database, unique: Named) -> None:
    db, s1 = shared_db, unique("s1")
    with db.writer() as writer:
        op = operations.add(writer.conn, s1, OperationKind.MIGRATE, owner=OWNER,
                            lease_seconds=600)
    uuid = _migration_in(db, MigrationStatus.MIGRATING, Fence(op.id, OWNER), unique)
    lost = Fence(op.id, "paused-conductor")
    with db.writer() as writer:
        assert store.apply_migration(writer.conn, machine.migration_transition(
            "migration.finished"), uuid, fence=lost, dest_host="h2") is Applied.LOST
        assert store.insert_migration(writer.conn, MigrationRecord(
            uuid=unique("m-late"), server_uuid=s1, kind=MigrationKind.MIGRATION,
            source_host="h1"), fence=lost) is None
        assert store.load_migration(writer.conn, unique("m-late")) is None
        found = store.load_migration(writer.conn, uuid)
    assert found is not None and found.status == MigrationStatus.MIGRATING
    assert found.dest_host is None
    with pytest.raises(IllegalTransition, match="does not record a destination"), \
            db.writer() as writer:
        store.apply_migration(writer.conn, machine.migration_transition("migration.failed"),
                              uuid, fence=Fence(op.id, OWNER), dest_host="h2")


def test_a_lost_fence_is_told_apart_from_a_changed_state(
        shared_db: Database, unique: Named) -> None:
    db, s1 = shared_db, unique("s1")
    bring(db, s1, (S.BUILD, T.SPAWNING))
    active = machine.transition("build.active")
    with db.writer() as writer:
        [op] = operations.pending(writer.conn, [s1])
        writer.conn.execute(schema.operations.update().where(schema.operations.c.id == op.id)
                            .values(owner="successor"))
        assert store.apply(writer.conn, active, s1, fence=Fence(op.id, OWNER)
                           ) is Applied.LOST
        assert store.apply(writer.conn, active, s1, fence=Fence(op.id, "successor")
                           ) is Applied.APPLIED
        assert store.apply(writer.conn, active, s1, fence=Fence(op.id, "successor")
                           ) is Applied.LOST  # it ended: nobody holds it now


# -- the diagram ---------------------------------------------------------------------------
def _block(after: str) -> str:
    text = DOCS.read_text()
    found = re.search(re.escape(after) + r"\s*```mermaid\n(.*?)```", text, re.S)
    assert found, f"docs/architecture.md has no mermaid block after {after!r}"
    return found.group(1)


def test_the_documented_diagrams_are_the_tables() -> None:
    """Regenerate with ``python -m moorage.lifecycle.machine`` when this fails."""
    assert _block("<!-- server states: generated -->") == machine.mermaid()
    assert _block("<!-- migration states: generated -->") == machine.migration_mermaid()


def test_the_diagram_has_an_arrow_per_transition_and_source() -> None:
    arrows = [line for line in machine.mermaid().splitlines() if "-->" in line]
    everywhere = len(ServerStatus) - 1  # the delete's, drawn once from "live"
    expected = sum(1 if len(t.statuses) in (0, everywhere) else len(t.statuses)
                   for t in machine.TRANSITIONS) + 1
    assert len(arrows) == expected
    for t in machine.TRANSITIONS:
        assert any(line.endswith(f": {t.name}") for line in arrows), t.name


def test_new_server_insert_is_the_created_state(shared_db: Database, unique: Named) -> None:
    db, s1 = shared_db, unique("s1")
    insert(db, s1)
    assert _state(db, s1) == (machine.CREATED.status, machine.CREATED.task)
