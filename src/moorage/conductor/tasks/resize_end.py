"""The end of a resize or cold migration: confirmed (the source's guest and the
migration's hold on it go) or reverted (back on the source with the old flavor, the
destination's guest and claim gone). Each step is idempotent, so either is simply
carried out again when taken over."""

from __future__ import annotations

from dataclasses import replace

from moorage.conductor.tasks.base import Task
from moorage.conductor.tasks.move import give_back
from moorage.lifecycle.actions import Event
from moorage.lifecycle.states import OperationKind
from moorage.lifecycle.store import ServerChanges


class ConfirmResizeTask(Task):
    kinds = (OperationKind.CONFIRM_RESIZE,)

    def run(self) -> None:
        record = self.load()
        if record is None or record.task_state not in self.rule.tasks:
            return  # deleted, or being deleted
        migration = self.in_flight_migration()
        step = self.events.step(Event.CONFIRM_RESIZE, migration.source_host
                                if migration is not None else record.host)
        if migration is not None:
            self.destroy(migration.source_host, f"resize of {self.uuid} confirmed")
            self.release(migration.uuid)
            self.migration("migration.confirmed", migration.uuid)
        scheduling = (replace(record.scheduling, resize=None)
                      if record.scheduling is not None else None)
        step.succeeded()
        resize = record.scheduling.resize if record.scheduling is not None else None
        self.apply("confirm_resize.stopped" if resize is not None and resize.stopped
                   else "confirm_resize.done", ServerChanges(scheduling=scheduling))


class RevertResizeTask(Task):
    kinds = (OperationKind.REVERT_RESIZE,)

    def run(self) -> None:
        record = self.load()
        if record is None or record.task_state not in self.rule.tasks:
            return  # deleted, or being deleted
        migration = self.in_flight_migration()
        resize = record.scheduling.resize if record.scheduling is not None else None
        step = self.events.step(Event.REVERT_RESIZE, record.host)
        done = ("revert_resize.stopped" if resize is not None and resize.stopped
                else "revert_resize.done")
        if migration is None or record.host is None:
            step.succeeded()
            self.apply(done)
            return
        if record.host != migration.source_host:
            self.destroy(record.host, f"resize of {self.uuid} reverted")
        give_back(self, record, migration)
        self.migration("migration.reverted", migration.uuid)
        scheduling = (replace(record.scheduling, resize=None)
                      if record.scheduling is not None else None)
        step.succeeded()
        self.apply(done, ServerChanges(
            host=migration.source_host, node=resize.old_node if resize else None,
            flavor_id=resize.old_flavor_id if resize else record.flavor_id,
            flavor=resize.old_flavor if resize else record.flavor, scheduling=scheduling))
