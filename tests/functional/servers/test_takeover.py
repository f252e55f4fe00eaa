"""Work a dead conductor left half done is taken over once its lease runs out, and
reconciled with what placement and the hosts really hold.

A conductor that died is played here by an owner name that renews nothing: the
test writes the state it would have left (a claim in placement, a guest on a fake
host, a server mid-task, its operation) and the cloud's live conductor must finish
from there. The same cases with real processes killed by SIGKILL are in
test_processes_crash.py.
"""

from __future__ import annotations

import time
import uuid as uuidlib
from typing import Any

from moorage.db.clock import utcnow_precise
from moorage.lifecycle import machine, operations, schema, store
from moorage.lifecycle.records import MigrationRecord
from moorage.lifecycle.specs import request_spec
from moorage.lifecycle.states import MigrationKind, MigrationStatus, OperationKind, ServerStatus
from moorage.lifecycle.store import NO_CHANGES, Applied, Fence, ServerChanges
from moorage.virt.driver import Guest
from tests.functional.servers.conftest import Cloud, fake_host

DEAD = "dead-conductor:1:000000"
FAST = {"lease_seconds": 1.0, "poll_interval": 0.1}


def _cloud(make_cloud: Any, *hosts: str) -> Cloud:
    cloud: Cloud = make_cloud([fake_host(h) for h in hosts], conductor=FAST)
    return cloud


def _dead_operation(cloud: Cloud, uuid: str, kind: OperationKind,
                    arguments: dict[str, Any] | None = None) -> operations.Operation:
    """The operation of ``kind`` the dead conductor held for server ``uuid`` (the one
    it claimed in _new_server, or a new one), under a long lease for now."""
    with cloud.state.database.writer() as writer:
        held = operations.pending(writer.conn, [uuid])
        if held:  # the dead conductor's own, claimed in _new_server
            [op] = held
            assert op.kind == kind and op.owner == DEAD
            return op
        return operations.add(writer.conn, uuid, kind, arguments, owner=DEAD,
                              lease_seconds=600)


def _dead_apply(cloud: Cloud, uuid: str, op: operations.Operation, name: str,
                changes: ServerChanges = NO_CHANGES) -> None:
    """A transition as the API (before the operation) or the dead conductor applied it."""
    step = machine.transition(name)
    fence = Fence(op.id, DEAD) if step.actor == machine.Actor.CONDUCTOR else None
    with cloud.state.database.writer() as writer:
        assert store.apply(writer.conn, step, uuid, changes, fence=fence) is Applied.APPLIED


def _expire(cloud: Cloud, op: operations.Operation,
            progress: dict[str, Any] | None = None) -> None:
    """The dead conductor's lease ran out a moment ago (``progress``: what it had
    recorded for a successor)."""
    with cloud.state.database.writer() as writer:
        if progress:
            operations.set_progress(writer.conn, op.id, DEAD, progress)
        writer.conn.execute(schema.operations.update()
                            .where(schema.operations.c.id == op.id)
                            .values(lease_until=utcnow_precise()))


def _record(cloud: Cloud, uuid: str) -> Any:
    with cloud.state.database.reader() as conn:
        return store.load_server(conn, uuid, with_deleted=True)


def _pending(cloud: Cloud) -> list[operations.Operation]:
    with cloud.state.database.reader() as conn:
        return operations.pending(conn)


def _hosts_of(cloud: Cloud, consumer: str) -> list[str]:
    return sorted(cloud.host_of_provider(rp) for rp in cloud.allocations(consumer))


def _new_server(cloud: Cloud, flavor: str, image: str) -> str:
    """A server in BUILD/scheduling with no operation: the dead conductor's."""
    conductor = cloud.state.conductor
    assert conductor is not None
    # Stopped, so that no poll of the live conductor takes the operation before the
    # dead one does (under load one did, between the accept and the claim below).
    conductor.stop()
    cloud.state.conductor = None  # accept without running: as if nobody took it yet
    try:
        cloud.state.conf.set_override("run_in_api", False, group="conductor")
        uuid = cloud.boot(flavor, image)
        with cloud.state.database.writer() as writer:
            [op] = operations.pending(writer.conn, [uuid])
            assert operations.claim(writer.conn, op, DEAD, 600)  # the dead one got it
    finally:
        cloud.state.conf.clear_override("run_in_api", group="conductor")
        cloud.state.conductor = conductor.start()
    return uuid


def test_a_build_whose_guest_runs_becomes_active_where_it_is(make_cloud: Any) -> None:
    cloud = _cloud(make_cloud, "h1", "h2")
    uuid = _new_server(cloud, cloud.flavor("small"), cloud.image("raw", "raw"))
    record = _record(cloud, uuid)
    # What the dead conductor did: scheduled (claimed h1), recorded SPAWNING, spawned.
    selection = cloud.state.scheduler.select_destinations(request_spec(record))
    host = selection.destination.host
    cloud.agents[host].agent.driver.spawn(Guest(
        uuid=uuid, name="vm", node=selection.destination.node, flavor=record.flavor,
        image=record.image, allocations=selection.destination.allocation_request))
    op = _dead_operation(cloud, uuid, OperationKind.BUILD)
    _dead_apply(cloud, uuid, op, "build.spawning",
                ServerChanges(host=host, node=selection.destination.node))
    _expire(cloud, op)
    server = cloud.wait(uuid, timeout=30)
    assert server["status"] == "ACTIVE"
    assert server["OS-EXT-SRV-ATTR:host"] == host
    assert _hosts_of(cloud, uuid) == [host]
    assert cloud.guests(host) == [uuid]
    assert _pending(cloud) == []


def test_a_build_interrupted_before_its_guest_started_is_scheduled_again(
        make_cloud: Any) -> None:
    cloud = _cloud(make_cloud, "h1", "h2")
    uuid = _new_server(cloud, cloud.flavor("small"), cloud.image("raw", "raw"))
    record = _record(cloud, uuid)
    selection = cloud.state.scheduler.select_destinations(request_spec(record))
    first = selection.destination.host
    op = _dead_operation(cloud, uuid, OperationKind.BUILD)
    _dead_apply(cloud, uuid, op, "build.spawning",
                ServerChanges(host=first, node=selection.destination.node))
    _expire(cloud, op)
    server = cloud.wait(uuid, timeout=30)
    assert server["status"] == "ACTIVE"
    attempts = server["moorage:scheduling"]["attempts"]
    assert attempts[0]["host"] == first and attempts[0]["result"] == "interrupted"
    assert attempts[0]["conductor"] == DEAD  # the admin reads which conductor stopped
    assert attempts[-1]["result"] == "ok"
    # Exactly one claim, on the host that runs it, and one guest in the cloud.
    where = server["OS-EXT-SRV-ATTR:host"]
    assert _hosts_of(cloud, uuid) == [where]
    assert sorted(cloud.guests("h1") + cloud.guests("h2")) == [uuid]


def test_a_build_that_held_a_claim_while_scheduling_releases_it(make_cloud: Any) -> None:
    cloud = _cloud(make_cloud, "h1")
    # The only host fits one such server: a leaked claim would make the build fail.
    flavor = cloud.flavor("most", vcpus=12, ram=24576)
    uuid = _new_server(cloud, flavor, cloud.image("raw", "raw"))
    record = _record(cloud, uuid)
    cloud.state.scheduler.select_destinations(request_spec(record))
    assert _hosts_of(cloud, uuid) == ["h1"]
    _expire(cloud, _dead_operation(cloud, uuid, OperationKind.BUILD))
    server = cloud.wait(uuid, timeout=30)
    assert server["status"] == "ACTIVE", server.get("fault")
    assert _hosts_of(cloud, uuid) == ["h1"]


def _dead_migration(cloud: Cloud, uuid: str, source: str
                    ) -> tuple[operations.Operation, MigrationRecord]:
    """A cold migration the API accepted and the dead conductor began: the server
    MIGRATING, its migration recorded (nothing swapped, claimed or spawned yet)."""
    op = _dead_operation(cloud, uuid, OperationKind.MIGRATE, {"host": None})
    _dead_apply(cloud, uuid, op, "migrate.accepted")
    _dead_apply(cloud, uuid, op, "resize.migrating")
    migration = MigrationRecord(uuid=str(uuidlib.uuid4()), server_uuid=uuid,
                                kind=MigrationKind.MIGRATION, source_host=source,
                                status=MigrationStatus.MIGRATING)
    with cloud.state.database.writer() as writer:
        assert store.insert_migration(writer.conn, migration, fence=Fence(op.id, DEAD))
    return op, migration


def test_an_interrupted_migration_is_rolled_back(make_cloud: Any) -> None:
    cloud = _cloud(make_cloud, "h1", "h2")
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"))
    uuid, source = server["id"], server["OS-EXT-SRV-ATTR:host"]
    dest = "h2" if source == "h1" else "h1"
    record = _record(cloud, uuid)
    # The API accepted the migration; the dead conductor recorded the migration,
    # swapped the allocations to it, claimed the destination and started its guest;
    # then it died.
    op, migration = _dead_migration(cloud, uuid, source)
    cloud.state.placement.move_allocations(uuid, migration.uuid, record.project_id,
                                           record.user_id)
    spec = request_spec(record, ignore_hosts=(source,))
    selection = cloud.state.scheduler.select_destinations(spec)
    assert selection.destination.host == dest
    cloud.agents[dest].agent.driver.spawn(Guest(
        uuid=uuid, name="vm", node=selection.destination.node, flavor=record.flavor,
        image=record.image, allocations=selection.destination.allocation_request))
    _expire(cloud, op, progress={"dest_host": dest})
    moved = cloud.wait(uuid, timeout=30)
    assert moved["status"] == "ACTIVE"
    assert moved["OS-EXT-SRV-ATTR:host"] == source
    assert "rolled back" in moved["moorage:scheduling"]["error"]
    assert _hosts_of(cloud, uuid) == [source]
    assert cloud.allocations(migration.uuid) == {}
    assert uuid not in cloud.guests(dest) and uuid in cloud.guests(source)
    found = cloud.ok("GET", f"/os-migrations?instance_uuid={uuid}")["migrations"]
    assert found[0]["status"] == "error"


def test_a_swap_read_before_the_rollback_is_refused_after_it(make_cloud: Any) -> None:
    """The paused conductor: it recorded the migration, read both consumers'
    generations for the swap and confirmed it still owned the move, then stopped.
    The successor rolls the move back (no swap to undo); the swap, sent when the
    paused one resumes, must fail instead of handing the server's resources to a
    migration that has failed."""
    cloud = _cloud(make_cloud, "h1", "h2")
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"))
    uuid, source = server["id"], server["OS-EXT-SRV-ATTR:host"]
    record = _record(cloud, uuid)
    op, migration = _dead_migration(cloud, uuid, source)

    def paused_past_its_lease() -> None:
        _expire(cloud, op)
        rolled_back = cloud.wait(uuid, timeout=30)
        assert rolled_back["status"] == "ACTIVE", rolled_back
        assert _pending(cloud) == []

    swapped = cloud.state.placement.move_allocations(
        uuid, migration.uuid, record.project_id, record.user_id,
        confirm=paused_past_its_lease)
    assert swapped is False
    assert _hosts_of(cloud, uuid) == [source]
    assert cloud.allocations(migration.uuid) == {}
    found = cloud.ok("GET", f"/os-migrations?instance_uuid={uuid}")["migrations"]
    assert found[0]["status"] == "error"


def test_an_abandoned_delete_is_carried_out(make_cloud: Any) -> None:
    cloud = _cloud(make_cloud, "h1")
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"))
    uuid = server["id"]
    op = _dead_operation(cloud, uuid, OperationKind.DELETE)
    _dead_apply(cloud, uuid, op, "delete.accepted")
    _expire(cloud, op)
    deadline = time.monotonic() + 30
    while _record(cloud, uuid).status != ServerStatus.DELETED:
        assert time.monotonic() < deadline, "the delete was not taken over"
        time.sleep(0.05)
    assert cloud.allocations(uuid) == {}
    assert cloud.guests("h1") == []
    assert _pending(cloud) == []
