"""Delete: destroy the guest wherever it may run, release what the server holds, and
mark it DELETED. Every step is idempotent, so a delete taken over is simply carried
out again."""

from __future__ import annotations

from moorage import failpoints
from moorage.conductor.tasks.base import Task
from moorage.db.clock import utcnow
from moorage.lifecycle import server_groups
from moorage.lifecycle.actions import Event
from moorage.lifecycle.states import OperationKind
from moorage.lifecycle.store import ServerChanges


class DeleteTask(Task):
    kinds = (OperationKind.DELETE,)

    def run(self) -> None:
        uuid = self.uuid
        record = self.load()
        if record is None:
            return
        step = self.events.step(Event.TERMINATE, record.host)
        hosts = {record.host} if record.host else set()
        # A build interrupted before it recorded its host left a claim that names it.
        claimed, _node = self.claimed(self.allocations(uuid))
        if claimed is not None:
            hosts.add(claimed)
        moving = self.in_flight_migration()
        if moving is not None:
            hosts.add(moving.source_host)
            if moving.dest_host:
                hosts.add(moving.dest_host)
        for host in sorted(hosts):
            self.destroy(host, f"server {uuid} deleted")
        failpoints.reach("conductor.delete.after_destroy")
        self.release(uuid)
        failpoints.reach("conductor.delete.after_release")
        if moving is not None:
            self.release(moving.uuid)
            self.migration("migration.deleted", moving.uuid)
        # A deleted server leaves its group, in the transaction that deletes it.
        grouped = server_groups.hinted(record) is not None
        step.succeeded()
        self.apply("delete.done", ServerChanges(deleted_at=utcnow()),
                   also=(lambda conn: server_groups.forget_member(conn, uuid))
                   if grouped else None)
