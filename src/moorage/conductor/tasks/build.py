"""Build: schedule, spawn on the destination or its alternates, and end ACTIVE or in
ERROR saying why.

Taken over from a conductor that died, a build first reconciles what that one may
have left half done with what placement and the hosts really hold, as nova's
``_init_instance`` does at a compute service's start: a build that was scheduling
may hold a claim (released, and scheduling starts again); a build that was spawning
on a host is ACTIVE there if its guest runs and its claim is held, and otherwise its
guest is destroyed (or, host unreachable, a cleanup left for its next heartbeat), its
claim released, and the build goes on with the next scheduling, the interrupted
attempt in its history.
"""

from __future__ import annotations

import logging
import time

from moorage import failpoints, metrics
from moorage.conductor.tasks.base import Task
from moorage.conductor.tasks.spawn import BUILD, spawn_somewhere
from moorage.db.clock import utcnow, utcnow_precise
from moorage.lifecycle import history
from moorage.lifecycle.actions import Event
from moorage.lifecycle.history import Fault
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.specs import request_spec, scheduling_record
from moorage.lifecycle.states import OperationKind, ServerStatus
from moorage.lifecycle.store import ServerChanges
from moorage.metrics import BootOutcome
from moorage.scheduler.types import NoValidHost

LOG = logging.getLogger(__name__)


class BuildTask(Task):
    kinds = (OperationKind.BUILD,)

    def run(self) -> None:
        job = self.job
        record = job.record if job.record is not None else self.load()
        if record is None or record.status != ServerStatus.BUILD \
                or record.task_state not in self.rule.tasks:
            return  # deleted (or being deleted) before a worker got to it
        if self.operation.taken_from is not None:
            recovered = self._recover(record)
            if recovered is None:
                return
            record = recovered
        spec = request_spec(record, requested_host=record.requested_host,
                            server_group=self.server_group(record))
        started, began = time.perf_counter(), utcnow_precise()
        self.ensure_owned()
        try:
            selection = self.scheduler.select_destinations(spec, confirm=self.ensure_owned)
        except NoValidHost as exc:
            metrics.no_valid_host(exc)
            metrics.boot_ended(BootOutcome.ERROR)
            fault = history.no_valid_host(exc.reason, exc.why)
            self.events.once(Event.SCHEDULE_AND_BUILD, began, error=fault.message)
            self.apply("build.no_valid_host", ServerChanges(
                fault=fault,
                scheduling=scheduling_record(spec, "build", error=exc.reason,
                                             error_for_user=exc.user_reason,
                                             seconds=time.perf_counter() - started,
                                             decisions=exc.decisions)))
            return
        self.events.once(Event.SCHEDULE_AND_BUILD, began)
        failpoints.reach("conductor.build.after_claim")
        scheduling = scheduling_record(spec, "build", selection,
                                       seconds=time.perf_counter() - started)
        outcome = spawn_somewhere(self, BUILD, record, spec,
                                        [selection.destination, *selection.alternates],
                                        scheduling=scheduling)
        if outcome.placed is not None:
            destination = outcome.placed
            failpoints.reach("conductor.build.after_spawn")
            active = self.apply("build.active", ServerChanges(
                launched_at=utcnow(), attempts=outcome.attempts,
                host=destination.host, node=destination.node))
            metrics.boot_ended(BootOutcome.ACTIVE if active else BootOutcome.DELETED)
            if not active:
                # Deleted while it was spawning (the fence held: this conductor still
                # owns the build): the delete waits for it and may have found no host
                # yet, so the guest and its claim are this build's to remove.
                LOG.info("server %s: deleted while it was spawning on %s; removing its "
                         "guest and claim", self.uuid, destination.host)
                self.destroy(destination.host, f"server {self.uuid} deleted")
                self.release(self.uuid)
        elif not outcome.interrupted:
            # No host holds it (claims released): host and node are cleared, as
            # upstream does, so nothing counts it on the last host tried.
            metrics.boot_ended(BootOutcome.ERROR)
            self.apply("build.failed", ServerChanges(
                attempts=outcome.attempts, fault=outcome.fault, host=None, node=None))

    def abandon(self, fault: Fault) -> None:
        """A build that broke holds nothing in the end: its guest (wherever its claim
        or record puts it) is destroyed, its claim released, and it is in ERROR on no
        host, as upstream leaves a failed build."""
        record = self.load()
        held = self.allocations(self.uuid)
        host, _node = self.claimed(held)
        if host is None and record is not None:
            host = record.host
        if host is not None:
            self.destroy(host, f"build of {self.uuid} failed")
        if held:
            self.release(self.uuid)
        self.apply("build.failed", ServerChanges(fault=fault, host=None, node=None))

    def _recover(self, record: ServerRecord) -> ServerRecord | None:
        """A build taken over: finish it if its guest runs, else undo the half-done
        attempt so that scheduling can start again. None when the build is over."""
        previous = self.operation.taken_from
        held = self.allocations(self.uuid)
        # Where the guest may be: the host its claim in placement is on (the record may
        # not say so yet: the spawn begins before that is written), else the host the
        # record names.
        host, node = self.claimed(held)
        if host is None:
            host, node = record.host, record.node
        attempts = list(record.attempts)
        if host is not None:
            present = self.guest_on(host)
            if present and held:
                LOG.info("server %s: build taken over from %s; its guest runs on %s",
                         self.uuid, previous, host)
                attempts.append(history.attempt_ok(host, node))
                metrics.boot_ended(BootOutcome.ACTIVE)
                self.apply("build.adopted", ServerChanges(
                    launched_at=utcnow(), attempts=attempts, host=host, node=node))
                return None
            why = f"build of {self.uuid} interrupted: conductor {previous} stopped"
            if present:
                self.destroy(host, why)
            elif present is None:
                self.cleanup(host, why)
            attempts.append(history.attempt_interrupted(host, node, previous))
        LOG.info("server %s: build taken over from %s; scheduling again", self.uuid, previous)
        self.release(self.uuid)
        if not self.apply("build.rescheduled", ServerChanges(host=None, node=None,
                                                              attempts=attempts)):
            return None
        return self.load()

