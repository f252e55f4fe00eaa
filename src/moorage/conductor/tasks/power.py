"""Stop, start and reboot: the server's host is asked to do it to the guest, and the
server moves to where that leaves it.

A failure ends as nova's does: a stop or start that the host could not do leaves
the server as it was (running, or off) with the fault recorded; a reboot that broke
puts it in ERROR. Each step is idempotent (stopping a stopped guest does nothing),
so an operation taken over is simply carried out again.
"""

from __future__ import annotations

from dataclasses import dataclass

from moorage.compute.client import AgentUnreachable, PowerAction, PowerFailed
from moorage.conductor.tasks.base import Task
from moorage.lifecycle import history, machine
from moorage.lifecycle.actions import Event
from moorage.lifecycle.history import Fault
from moorage.lifecycle.states import OperationKind, TaskState
from moorage.lifecycle.store import ServerChanges


@dataclass(frozen=True)
class PowerSteps:
    """What one power operation asks of the host, and its transitions: ``started``
    (None: none) once the host was asked, ``done`` and ``failed``."""

    action: PowerAction
    event: Event
    accepted: machine.Transition
    started: str | None
    done: str
    failed: str

    @property
    def tasks(self) -> frozenset[TaskState | None]:
        """The task states the server is in while it runs: accepted, and (a takeover
        finds it there) where ``started`` leaves it."""
        started = machine.transition(self.started).task if self.started else None
        return frozenset({self.accepted.task, *((started,) if started else ())})


STOP = PowerSteps(PowerAction.STOP, Event.STOP_INSTANCE,
                 machine.transition("stop.accepted"), None,
                  "stop.done", "stop.failed")
START = PowerSteps(PowerAction.START, Event.START_INSTANCE,
                  machine.transition("start.accepted"), None,
                   "start.done", "start.failed")
REBOOT_SOFT = PowerSteps(PowerAction.REBOOT_SOFT, Event.REBOOT_INSTANCE,
                        machine.REBOOTS["SOFT"], "reboot.started",
                         "reboot.done", "reboot.failed")
REBOOT_HARD = PowerSteps(PowerAction.REBOOT_HARD, Event.REBOOT_INSTANCE,
                        machine.REBOOTS["HARD"],
                         "reboot_hard.started", "reboot_hard.done", "reboot_hard.failed")


class PowerTask(Task):
    kinds = (OperationKind.STOP, OperationKind.START, OperationKind.REBOOT)

    @property
    def steps(self) -> PowerSteps:
        kind = self.operation.kind
        if kind == OperationKind.STOP:
            return STOP
        if kind == OperationKind.START:
            return START
        return REBOOT_HARD if self.operation.arguments.get("type") == "HARD" else REBOOT_SOFT

    def run(self) -> None:
        steps = self.steps
        record = self.load()
        # Deleted, being deleted, or (a soft reboot) overridden by a hard one accepted
        # since, which carries on after this operation: nothing to do.
        if record is None or record.host is None or record.task_state not in steps.tasks:
            return
        host = record.host
        if steps.started is not None and record.task_state == steps.accepted.task \
                and not self.apply(steps.started):
            return
        step = self.events.step(steps.event, host)
        try:
            self.ensure_owned()
            with self._fenced(host):
                self.clients.agents.power(host, self.uuid, steps.action,
                                          self.job.agent_fence)
        except PowerFailed as exc:
            step.failed(exc.message)
            self.apply(steps.failed, ServerChanges(fault=history.power_failed(
                self.operation.kind, exc.host, exc.kind, exc.message)))
            return
        except AgentUnreachable as exc:
            step.failed(str(exc))
            self.apply(steps.failed, ServerChanges(fault=history.power_failed(
                self.operation.kind, host, type(exc).__name__, str(exc))))
            return
        step.succeeded()
        self.apply(steps.done)

    def abandon(self, fault: Fault) -> None:
        """A reboot ends in ERROR through its own type's transition."""
        self.apply(self.steps.failed, ServerChanges(fault=fault))
