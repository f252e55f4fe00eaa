"""Rebuild: the same server, on the same host, with a new image; the host is checked
for the new image first (upstream's short-cut: no candidates query, no claim)."""

from __future__ import annotations

import logging

from moorage import metrics
from moorage.compute.client import AgentUnreachable, PowerAction, PowerFailed, SpawnFailed
from moorage.conductor.tasks.base import Task
from moorage.db.clock import utcnow_precise
from moorage.lifecycle import history
from moorage.lifecycle.actions import Event
from moorage.lifecycle.specs import request_spec, scheduling_record
from moorage.lifecycle.states import OperationKind
from moorage.lifecycle.store import ServerChanges
from moorage.model.codec import image_from_json
from moorage.scheduler.types import NoValidHost
from moorage.virt.driver import Guest

LOG = logging.getLogger(__name__)


class RebuildTask(Task):
    kinds = (OperationKind.REBUILD,)

    def run(self) -> None:
        record = self.load()
        if record is None or record.task_state not in self.rule.tasks or record.host is None:
            return  # deleted, or being deleted: the delete waits for this to end
        arguments = self.operation.arguments
        image_id = str(arguments["image_id"])
        image = image_from_json(arguments["image"])
        host, node = record.host, record.node
        spec = request_spec(record, image=image, requested_host=host, rebuild=True)
        began = utcnow_precise()
        if image_id != record.image_id:
            try:
                self.scheduler.verify_rebuild(spec, host)
            except NoValidHost as exc:
                metrics.no_valid_host(exc)
                fault = history.no_valid_host(exc.reason, exc.why)
                self.events.once(Event.REBUILD_SERVER, began, error=fault.message)
                # The image stays what it was (upstream rolls image_ref back).
                self.apply("rebuild.no_valid_host", ServerChanges(
                    fault=fault,
                    scheduling=scheduling_record(spec, "rebuild", error=exc.reason,
                                                 error_for_user=exc.user_reason)))
                return
        self.events.once(Event.REBUILD_SERVER, began)
        allocations = self.allocations(self.uuid)
        guest = Guest(uuid=self.uuid, name=record.name, node=node or host,
                      flavor=record.flavor, image=image, allocations=allocations,
                      volume_backed=record.is_bfv)
        step = self.events.step(Event.REBUILD_INSTANCE, host)
        try:
            self.ensure_owned()
            with self._fenced(host):
                self.clients.agents.destroy(host, self.uuid, self.job.agent_fence)
            self.spawn(host, guest)
        except SpawnFailed as exc:
            fault = history.rebuild_failed(exc.host, exc.kind, exc.message, exc.feature)
            step.failed(fault.message)
            self.apply("rebuild.failed", ServerChanges(fault=fault))
            return
        except AgentUnreachable as exc:
            fault = history.internal_error("rebuild", exc)
            step.failed(fault.message)
            self.apply("rebuild.failed", ServerChanges(fault=fault))
            return
        step.succeeded()
        done = "rebuild.active"
        if arguments.get("stopped"):
            # nova leaves a server rebuilt from SHUTOFF stopped: the new guest is
            # powered off before the server says so.
            try:
                with self._fenced(host):
                    self.clients.agents.power(host, self.uuid, PowerAction.STOP,
                                              self.job.agent_fence)
                done = "rebuild.stopped"
            except (PowerFailed, AgentUnreachable) as exc:
                LOG.warning("server %s: rebuilt, but its guest did not stop (%s): it "
                            "runs, and the server is ACTIVE", self.uuid, exc)
        self.apply(done, ServerChanges(
            image_id=image_id, image=image, fault=None,
            scheduling=scheduling_record(spec, "rebuild")))
