"""A compute API's lifecycle on a real database, two conductors (A and B) and the
simulated cloud they work on (``fakes.py``): what the tasks' tests and the
lifecycle's stateful test drive. The API's side is what its handlers do after
validation: the action's transition and its operation in one transaction."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from moorage.api.storage import migration
from moorage.conductor.manager import Conductor
from moorage.conf import load_config
from moorage.db.clock import utcnow_precise
from moorage.db.database import Database
from moorage.lifecycle import machine, operations, schema, store
from moorage.lifecycle.records import MigrationRecord, ServerRecord
from moorage.lifecycle.states import OperationKind
from moorage.lifecycle.store import Applied
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from tests.unit.conductor.fakes import (
    FakeAgents,
    FakeCatalog,
    FakeCloud,
    FakePlacement,
    FakeScheduler,
    Trip,
)

SMALL = Flavor("small", 1, 512, 1)
BIG = Flavor("big", 2, 1024, 1)
RAW = Image(id="raw", name="raw", disk_format="raw")
OTHER = Image(id="other", name="other", disk_format="raw")

ACTION_KINDS: Mapping[str, OperationKind] = {
    "rebuild": OperationKind.REBUILD, "resize": OperationKind.RESIZE,
    "migrate": OperationKind.MIGRATE, "confirmResize": OperationKind.CONFIRM_RESIZE,
    "revertResize": OperationKind.REVERT_RESIZE, "evacuate": OperationKind.EVACUATE,
    "os-stop": OperationKind.STOP, "os-start": OperationKind.START}


def new_database(path: Path) -> Database:
    database = Database(f"sqlite:///{path}")
    migration.upgrade(database)
    return database


class World:
    """The lifecycle, conductors A and B, and the simulated cloud."""

    def __init__(self, database: Database, hosts: Mapping[str, int], *,
                 max_attempts: int = 3, max_takeovers: int = 3) -> None:
        self.db = database
        self.cloud = FakeCloud(hosts)
        self.conf = load_config([], [("scheduler", "max_attempts", max_attempts),
                                     ("conductor", "max_takeovers", max_takeovers),
                                     ("conductor", "lease_seconds", 30.0)])
        self.conductors: list[Conductor] = []
        self.a = self.conductor("conductor-a")
        self.b = self.conductor("conductor-b")

    def conductor(self, identity: str) -> Conductor:
        cloud = self.cloud
        conductor = Conductor(self.conf, self.db, FakeScheduler(cloud),  # type: ignore[arg-type]
                              FakePlacement(cloud), FakeAgents(cloud),  # type: ignore[arg-type]
                              FakeCatalog(cloud), identity=identity)  # type: ignore[arg-type]
        self.conductors.append(conductor)
        return conductor

    # -- what the compute API records ---------------------------------------------------
    def boot(self, uuid: str, flavor: Flavor = SMALL) -> None:
        record = ServerRecord(uuid=uuid, name=uuid, project_id="p", user_id="u",
                              flavor_id=flavor.name, flavor=flavor, image_id=RAW.id,
                              image=RAW)
        with self.db.writer() as writer:
            store.insert_server(writer.conn, record)
            operations.add(writer.conn, uuid, OperationKind.BUILD, first=True)

    def accept(self, uuid: str, action: str, arguments: Mapping[str, Any] | None = None
               ) -> bool:
        """An action the API accepts (its transition and operation), or False when the
        table refuses it in the server's state (the API's 409)."""
        with self.db.writer() as writer:
            if store.apply(writer.conn, machine.ACTIONS[action], uuid) is not Applied.APPLIED:
                return False
            operations.add(writer.conn, uuid, ACTION_KINDS[action], arguments)
        return True

    def delete(self, uuid: str) -> bool:
        with self.db.writer() as writer:
            if store.apply(writer.conn, machine.transition("delete.accepted"), uuid
                           ) is not Applied.APPLIED:
                return False
            operations.add(writer.conn, uuid, OperationKind.DELETE)
        return True

    def source_back(self, host: str) -> list[str]:
        """The heartbeat of ``host`` come back: an end-of-evacuation operation for each
        evacuation from it (as the API's heartbeat handler records them)."""
        with self.db.writer() as writer:
            done = [m for m in store.list_migrations(writer.conn, statuses=["done"])
                    if m.source_host == host]
            queued = {str(op.arguments.get("migration")) for op in operations.pending(
                writer.conn) if op.kind == OperationKind.COMPLETE_EVACUATION}
            for m in done:
                if m.uuid not in queued:
                    operations.add(writer.conn, m.server_uuid,
                                   OperationKind.COMPLETE_EVACUATION, {"migration": m.uuid})
        return [m.server_uuid for m in done]

    # -- what the conductors do ------------------------------------------------------------
    def claim(self, conductor: Conductor, uuid: str) -> operations.Operation | None:
        with self.db.reader() as conn:
            found = operations.claimable(conn, 1, server_uuid=uuid)
        if not found:
            return None
        with self.db.writer() as writer:
            operation = operations.claim(writer.conn, found[0], conductor.identity,
                                         conductor.lease_seconds)
        if operation is not None and operation.lease_until is not None:
            conductor.leases.granted_until(operation.id, operation.lease_until,
                                           utcnow_precise())
        return operation

    def run(self, conductor: Conductor, uuid: str) -> bool:
        """Claim and carry out the server's next operation on this thread; False when
        none is claimable."""
        operation = self.claim(conductor, uuid)
        if operation is None:
            return False
        conductor.carry_out(operation)
        return True

    def settle(self, uuid: str, conductor: Conductor | None = None) -> None:
        """Carry out every operation of the server, in order."""
        while self.run(conductor or self.a, uuid):
            pass

    def expire(self, uuid: str) -> None:
        """The leases on the server's operations ran out (their owner died or paused);
        their owners' clocks jumped past them too."""
        with self.db.writer() as writer:
            writer.conn.execute(schema.operations.update()
                                .where(schema.operations.c.server_uuid == uuid)
                                .values(lease_until=utcnow_precise()))
            held = operations.pending(writer.conn, [uuid])
        for conductor in self.conductors:
            for op in held:
                conductor.leases.forget(op.id)

    def paused(self, conductor: Conductor, uuid: str, at: int, *, after: bool = True
               ) -> tuple[Trip, threading.Thread]:
        """Run the server's next operation on ``conductor`` in a thread that pauses at
        the ``at``-th call into the cloud from now, once it took effect (``after``) or
        before it went out."""
        trip = Trip(self.cloud.calls + at, pause=True, after=after)
        self.cloud.trip = trip
        thread = threading.Thread(target=self.run, args=(conductor, uuid), daemon=True)
        thread.start()
        return trip, thread

    # -- what is there ------------------------------------------------------------------------
    def server(self, uuid: str) -> ServerRecord:
        with self.db.reader() as conn:
            record = store.load_server(conn, uuid, with_deleted=True)
        assert record is not None
        return record

    def migrations(self, uuid: str) -> list[MigrationRecord]:
        with self.db.reader() as conn:
            return store.list_migrations(conn, server_uuid=uuid)

    def pending(self, uuid: str | None = None) -> list[operations.Operation]:
        with self.db.reader() as conn:
            return operations.pending(conn, [uuid] if uuid is not None else None)

    def cleanups(self) -> dict[str, list[str]]:
        with self.db.reader() as conn:
            return store.cleanups_of(conn, sorted(self.cloud.slots))

    def holdings(self, uuid: str) -> dict[str, object]:
        """Where the server is, runs and is claimed, and its migrations' claims."""
        record = self.server(uuid)
        return {
            "state": (record.status, record.task_state, record.host),
            "runs": self.cloud.hosts_running(uuid),
            "claim": self.cloud.claims.get(uuid, (None,))[0],
            "migrations": [(m.status, m.source_host, m.dest_host,
                            self.cloud.claims.get(m.uuid, (None,))[0])
                           for m in self.migrations(uuid)]}
