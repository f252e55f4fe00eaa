"""Durable work: who may claim an operation and when, in which order a server's
operations run, and what fencing keeps a slow former owner from doing."""

from __future__ import annotations

import time

import pytest

from moorage.db.database import Database
from moorage.lifecycle import machine, operations, schema, store
from moorage.lifecycle.states import OperationKind, ServerStatus, TaskState
from moorage.lifecycle.store import Applied, Fence, ServerChanges
from tests.lifecycle_paths import OWNER, bring, insert


def _server(db: Database, uuid: str) -> None:
    insert(db, uuid)


def test_an_operation_accepted_with_an_owner_is_not_claimable_until_its_lease_runs_out(
        db: Database) -> None:
    with db.writer() as writer:
        held = operations.add(writer.conn, "s1", OperationKind.BUILD, owner="c1",
                              lease_seconds=0.3)
    assert held.owner == "c1"
    with db.reader() as conn:
        assert operations.claimable(conn, 10) == []
    time.sleep(0.4)
    with db.reader() as conn:
        [expired] = operations.claimable(conn, 10)
    with db.writer() as writer:
        taken = operations.claim(writer.conn, expired, "c2", 30)
    assert taken is not None and taken.owner == "c2"
    assert taken.taken_from == "c1" and taken.takeovers == 1
    # Nobody else gets it while c2 holds it.
    with db.reader() as conn:
        assert operations.claimable(conn, 10) == []
    with db.writer() as writer:
        assert operations.claim(writer.conn, expired, "c3", 30) is None


def test_renewal_keeps_an_operation_its_owners(db: Database) -> None:
    with db.writer() as writer:
        op = operations.add(writer.conn, "s1", OperationKind.BUILD, owner="c1",
                            lease_seconds=0.3)
    for _ in range(3):
        time.sleep(0.15)
        with db.writer() as writer:
            assert operations.renew(writer.conn, "c1", 0.3) == {op.id}
    with db.reader() as conn:
        assert operations.claimable(conn, 10) == []


def test_a_servers_operations_run_one_at_a_time_oldest_first(db: Database) -> None:
    with db.writer() as writer:
        build = operations.add(writer.conn, "s1", OperationKind.BUILD, owner="c1",
                               lease_seconds=30)
        # Accepted while the build is there: it waits, unowned, even for its owner.
        delete = operations.add(writer.conn, "s1", OperationKind.DELETE, owner="c1",
                                lease_seconds=30)
        other = operations.add(writer.conn, "s2", OperationKind.DELETE)
    assert delete.owner is None
    with db.reader() as conn:
        assert [op.id for op in operations.claimable(conn, 10)] == [other.id]
    with db.writer() as writer:
        assert operations.finish(writer.conn, build.id, "c1")
    with db.reader() as conn:
        assert [op.id for op in operations.claimable(conn, 10)] == [delete.id, other.id]
        assert [op.id for op in operations.claimable(conn, 10, server_uuid="s1")] == [
            delete.id]


def test_only_the_owner_finishes_or_records_progress(db: Database) -> None:
    with db.writer() as writer:
        op = operations.add(writer.conn, "s1", OperationKind.MIGRATE, {"host": None},
                            owner="c1", lease_seconds=30)
        assert not operations.set_progress(writer.conn, op.id, "c2", {"dest_host": "h"})
        assert operations.set_progress(writer.conn, op.id, "c1", {"dest_host": "h"})
        assert not operations.finish(writer.conn, op.id, "c2")
    with db.reader() as conn:
        [found] = operations.pending(conn)
    assert found.progress == {"dest_host": "h"} and found.arguments == {"host": None}


def test_a_transition_fenced_on_a_lost_operation_changes_nothing(db: Database) -> None:
    _server(db, "s1")
    with db.writer() as writer:
        op = operations.add(writer.conn, "s1", OperationKind.BUILD, owner="c1",
                            lease_seconds=0.1)
    time.sleep(0.2)
    with db.reader() as conn:
        [expired] = operations.claimable(conn, 1)
    spawning = machine.transition("build.spawning")
    with db.writer() as writer:
        assert operations.claim(writer.conn, expired, "c2", 30) is not None
        # c1 was slow, not dead: its change must not land, and it learns why.
        assert store.apply(writer.conn, spawning, "s1", ServerChanges(host="h9"),
                           fence=Fence(op.id, "c1")) is Applied.LOST
        assert store.apply(writer.conn, spawning, "s1", ServerChanges(host="h2"),
                           fence=Fence(op.id, "c2")) is Applied.APPLIED
    with db.reader() as conn:
        record = store.load_server(conn, "s1")
    assert record is not None
    assert (record.status, record.task_state) == (ServerStatus.BUILD, TaskState.SPAWNING)
    assert record.host == "h2"


def test_release_all_hands_work_back_at_once(db: Database) -> None:
    with db.writer() as writer:
        op = operations.add(writer.conn, "s1", OperationKind.BUILD, owner="c1",
                            lease_seconds=30)
        assert operations.release_all(writer.conn, "c1") == 1
    with db.reader() as conn:
        [free] = operations.claimable(conn, 10)
    assert free.id == op.id and free.owner is None
    with db.writer() as writer:
        claimed = operations.claim(writer.conn, free, "c2", 30)
    assert claimed is not None and claimed.taken_from is None and claimed.takeovers == 0


def test_cleanups_are_due_only_for_servers_at_rest_elsewhere(db: Database) -> None:
    bring(db, "gone", (ServerStatus.DELETED, None))
    bring(db, "back-here", (ServerStatus.ACTIVE, None))  # on h1
    _server(db, "busy")
    with db.writer() as writer:
        operations.add(writer.conn, "busy", OperationKind.BUILD)
        for uuid in ("gone", "back-here", "busy"):
            store.add_cleanup(writer.conn, "h1", uuid, "test")
        store.add_cleanup(writer.conn, "h1", "gone", "twice is once")
    with db.writer() as writer:
        assert store.take_cleanups(writer.conn, ["h1", "h2"]) == {"h1": ["gone"]}
    with db.writer() as writer:
        # Answered ones are forgotten; the busy server's waits for it to come to rest.
        assert store.take_cleanups(writer.conn, ["h1"]) == {}
        assert store.cleanups_of(writer.conn, ["h1"]) == {"h1": ["busy"]}


@pytest.mark.parametrize("applies", [True, False])
def test_a_transition_that_ends_its_operation_ends_it_only_if_it_applied(
        db: Database, applies: bool) -> None:
    """A delete that came meanwhile moved the task state on: the build's last
    transition then does not apply, and the build, still owning its operation, cleans
    up before it ends it."""
    bring(db, "s1", (ServerStatus.BUILD, TaskState.SPAWNING))
    if not applies:
        with db.writer() as writer:
            assert store.apply(writer.conn, machine.transition("delete.accepted"), "s1"
                               ) is Applied.APPLIED
    with db.writer() as writer:
        [op] = operations.pending(writer.conn, ["s1"])
        outcome = store.apply(writer.conn, machine.transition("build.active"), "s1",
                              fence=Fence(op.id, OWNER))
    assert outcome is (Applied.APPLIED if applies else Applied.STALE)
    with db.reader() as conn:
        assert [o.id for o in operations.pending(conn)] == ([] if applies else [op.id])
        record = store.load_server(conn, "s1")
    assert record is not None
    assert (record.status, record.task_state) == (
        (ServerStatus.ACTIVE, None) if applies else (ServerStatus.BUILD, TaskState.DELETING))


def test_a_finishing_transition_of_a_lost_operation_changes_nothing(db: Database) -> None:
    bring(db, "s1", (ServerStatus.BUILD, TaskState.SPAWNING))
    with db.writer() as writer:
        [op] = operations.pending(writer.conn, ["s1"])
        writer.conn.execute(schema.operations.update().values(owner="c2"))
        assert store.apply(writer.conn, machine.transition("build.active"), "s1",
                           fence=Fence(op.id, OWNER)) is Applied.LOST
    with db.reader() as conn:
        [still] = operations.pending(conn)
        record = store.load_server(conn, "s1")
    assert still.owner == "c2"
    assert record is not None and record.status == ServerStatus.BUILD


def test_an_operation_carries_the_ids_of_the_request_that_recorded_it(db: Database) -> None:
    """Whoever claims it (a takeover in another process too) works under the request's
    ids; the handler's arguments never show them."""
    local, caller = ("req-11111111-2222-3333-4444-555555555555",
                     "req-66666666-7777-8888-9999-000000000000")
    with db.writer() as writer:
        added = operations.add(writer.conn, "s1", OperationKind.REBUILD, {"image_id": "i"},
                               request_id=local, global_request_id=caller)
        operations.add(writer.conn, "s2", OperationKind.DELETE)
    assert (added.request_id, added.global_request_id) == (local, caller)
    with db.reader() as conn:
        first, second = operations.pending(conn)
    assert (first.request_id, first.global_request_id) == (local, caller)
    assert first.arguments == {"image_id": "i"}
    assert (second.request_id, second.global_request_id, second.arguments) == (None, None, {})
