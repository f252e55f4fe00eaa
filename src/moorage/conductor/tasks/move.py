"""The moves: cold migration and resize (both end in VERIFY_RESIZE, to be confirmed or
reverted) and evacuation from a host that is down (ends ACTIVE on the destination).

While a move is in flight the source host's resources are held by the migration as
placement consumer, so the server itself is free to claim its destination
(upstream's allocation swap): both hosts stay accounted for until the move is
confirmed, reverted or, for an evacuation, completed when the source is back.

A move taken over from a conductor that died is rolled back rather than guessed
forward: any guest on the destination destroyed, the source's allocations handed
back to the server, the migration in error, the server ACTIVE where it was, its
scheduling record saying why.
"""

from __future__ import annotations

import logging
import uuid as uuidlib
from dataclasses import replace

from moorage import failpoints, metrics
from moorage.compute.client import AgentUnreachable, PowerAction, PowerFailed
from moorage.conductor.tasks.base import Task
from moorage.conductor.tasks.spawn import EVACUATE, RESIZE, spawn_somewhere
from moorage.db.clock import utcnow_precise
from moorage.lifecycle import history
from moorage.lifecycle.actions import Event
from moorage.lifecycle.history import Fault, ResizeRecord, SchedulingRecord
from moorage.lifecycle.records import MigrationRecord, ServerRecord
from moorage.lifecycle.specs import move_spec, scheduling_record
from moorage.lifecycle.states import MigrationKind, MigrationStatus, OperationKind
from moorage.lifecycle.store import ServerChanges
from moorage.model.codec import flavor_from_json
from moorage.scheduler.types import NoValidHost

LOG = logging.getLogger(__name__)


class MoveTask(Task):
    kinds = (OperationKind.MIGRATE, OperationKind.RESIZE, OperationKind.EVACUATE)

    @property
    def evacuating(self) -> bool:
        return self.operation.kind == OperationKind.EVACUATE

    @property
    def phase(self) -> str:
        """The transitions' prefix: an evacuation's, or a resize's (a cold migration
        is carried out as a resize to the same flavor, as in nova)."""
        return "evacuate" if self.evacuating else "resize"

    def run(self) -> None:
        kind = self.operation.kind
        record = self.load()
        if record is None or record.task_state not in self.rule.tasks or record.host is None:
            return
        in_flight = self.in_flight_migration()
        if self.operation.taken_from is not None or in_flight is not None:
            self._undo(record, in_flight, SchedulingRecord(
                str(kind), conductor=self.operation.taken_from,
                error=f"interrupted: the conductor carrying out this {kind} stopped; the "
                      "move was rolled back and the server left where it was"))
            return
        arguments = self.operation.arguments
        flavor = (flavor_from_json(arguments["flavor"]) if arguments.get("flavor")
                  else None)
        target = arguments.get("host")
        migration = self.new_migration(MigrationRecord(
            uuid=str(uuidlib.uuid4()), server_uuid=record.uuid,
            kind=MigrationKind.EVACUATION if self.evacuating
            else MigrationKind.RESIZE if flavor else MigrationKind.MIGRATION,
            source_host=record.host, status=MigrationStatus.MIGRATING,
            user_id=self.operation.user_id, project_id=self.operation.project_id))
        failpoints.reach("conductor.move.after_migration")
        # The source host's resources move to the migration as consumer, so the
        # instance consumer is free to claim the destination (upstream's swap).
        self.move_allocations(self.uuid, migration.uuid, record.project_id, record.user_id)
        failpoints.reach("conductor.move.after_swap")
        new_flavor = flavor or record.flavor
        spec = move_spec(record, new_flavor, target, self.server_group(record))
        operation = str(kind)
        scheduling_step = Event.REBUILD_SERVER if self.evacuating else Event.MIGRATE_SERVER
        began = utcnow_precise()
        self.ensure_owned()
        try:
            selection = self.scheduler.select_destinations(spec, confirm=self.ensure_owned)
        except NoValidHost as exc:
            metrics.no_valid_host(exc)
            self.events.once(scheduling_step, began,
                             error=history.no_valid_host(exc.reason, exc.why).message)
            self._undo(record, migration, scheduling_record(
                spec, operation, error=exc.reason, error_for_user=exc.user_reason,
                decisions=exc.decisions))
            return
        self.events.once(scheduling_step, began)
        outcome = spawn_somewhere(
            self, EVACUATE if self.evacuating else RESIZE, record, spec,
            [selection.destination, *selection.alternates], flavor=new_flavor)
        if outcome.placed is None:
            fault = outcome.fault
            self._undo(record, migration, replace(
                scheduling_record(spec, operation, selection),
                error=fault.message if fault else "interrupted",
                error_for_user=fault.user_message if fault else "interrupted",
                attempts=tuple(outcome.attempts)))
            return
        destination = outcome.placed
        failpoints.reach("conductor.move.after_spawn")
        scheduling = replace(scheduling_record(spec, operation, selection),
                             attempts=tuple(outcome.attempts))
        if self.evacuating:
            # DONE: the source still holds the guest and the migration its resources,
            # until the source is back (CompleteEvacuationTask).
            self.migration("migration.evacuated", migration.uuid, destination.host)
            self.apply("evacuate.done", ServerChanges(
                host=destination.host, node=destination.node, scheduling=scheduling))
            return
        self.migration("migration.finished", migration.uuid, destination.host)
        stopped = bool(arguments.get("stopped")) and self._power_off(destination.host)
        scheduling = replace(scheduling, resize=ResizeRecord(
            record.flavor_id, record.flavor, record.node, migration.uuid, stopped))
        if flavor is not None:
            changes = ServerChanges(host=destination.host, node=destination.node,
                                    scheduling=scheduling,
                                    flavor_id=str(arguments["flavor_id"]), flavor=flavor)
        else:
            changes = ServerChanges(host=destination.host, node=destination.node,
                                    scheduling=scheduling)
        self.apply("resize.finished", changes)

    def _power_off(self, host: str) -> bool:
        """A server moved while stopped stays stopped (nova powers the destination's
        guest off): True once its guest there is off. If it cannot be, the server is
        shown as it is, running (False)."""
        try:
            with self._fenced(host):
                self.clients.agents.power(host, self.uuid, PowerAction.STOP,
                                          self.job.agent_fence)
        except (PowerFailed, AgentUnreachable) as exc:
            LOG.warning("server %s: moved while stopped, but its guest on %s did not "
                        "stop (%s): it runs, and the server is shown so", self.uuid, host,
                        exc)
            return False
        return True

    def abandon(self, fault: Fault) -> None:
        """A move that broke, or kept killing its conductors, keeps nothing it took:
        the destination's guest is destroyed, the source's resources go back to the
        server and its migration fails; the server ends in ERROR on its source."""
        record = self.load()
        if record is not None:
            self._release_move(record, self.in_flight_migration())
        super().abandon(fault)

    def _release_move(self, record: ServerRecord, migration: MigrationRecord | None) -> None:
        """Undo what the move took: its guest on the destination, and its claims."""
        destination = self.operation.progress.get("dest_host")
        if destination and destination != record.host:
            self.destroy(str(destination),
                         f"{self.operation.kind} of {self.uuid} rolled back")
        if migration is not None:
            give_back(self, record, migration)
            self.migration("migration.failed", migration.uuid)

    def _undo(self, record: ServerRecord, migration: MigrationRecord | None,
              scheduling: SchedulingRecord) -> None:
        """No destination worked (or the move was interrupted): the server stays where
        it was, ACTIVE (SHUTOFF when it was moved stopped), with what happened in its
        scheduling record."""
        self._release_move(record, migration)
        stopped = not self.evacuating and bool(self.operation.arguments.get("stopped"))
        self.apply("resize.rolled_back_stopped" if stopped else f"{self.phase}.rolled_back",
                   ServerChanges(
            host=record.host, node=record.node, scheduling=scheduling))


def give_back(task: Task, record: ServerRecord, migration: MigrationRecord) -> None:
    """The source host's allocations go back from the migration to the server, and
    whatever the server claimed elsewhere meanwhile is released. Placement is asked,
    not assumed: a successor may find the swap done or not yet done. Not yet done,
    the server's generation is moved on: a predecessor paused with the swap read and
    about to be sent (its ownership checked just before the pause) then fails on it,
    instead of handing the server's resources to a migration that has failed."""
    if not task.allocations(migration.uuid):
        task.seal(record.uuid)  # the server holds its own
        return
    task.release(record.uuid)
    task.move_allocations(migration.uuid, record.uuid, record.project_id, record.user_id)
