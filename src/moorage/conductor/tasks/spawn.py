"""Spawning on the scheduler's destination, then on each alternate whose claim still
fits, until one succeeds or a failure says another host would fail the same way:
the late checks of the drivers, and the reschedule that follows them (upstream's
conductor does the same with its host list).

A build and a move spawn the same way and differ in what they record, which
``SpawnMode`` says outright (a mode, not a guess from the server's status):
a build records each host it tries on the server (it is the server's host while
the guest starts there) without waiting for the write, keeps its attempts in the
server's history, and moves a failed host's claim to the next alternate in one
request; a move records its destination on its operation, for a successor, and
waits for that write.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from moorage import metrics
from moorage.compute.client import AgentUnreachable, SpawnFailed
from moorage.conductor.tasks.base import Task
from moorage.lifecycle import history, server_groups
from moorage.lifecycle.actions import Event
from moorage.lifecycle.history import Attempt, Fault, SchedulingRecord
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.store import KEEP, ServerChanges
from moorage.model.flavor import Flavor
from moorage.scheduler.types import Destination, RequestSpec
from moorage.virt.driver import Guest

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class SpawnMode:
    """How an operation records the destinations it tries."""

    # The transition that records each destination tried.
    spawning: str
    # The destination becomes the server's host while the guest starts (a build).
    records_host: bool
    # A build writes that transition without waiting (a successor finds the host from
    # the claim in placement); a move waits, recording the destination on its operation.
    waits: bool
    # The event each destination tried is recorded as, on that host.
    event: Event

    @property
    def building(self) -> bool:
        return self.records_host


BUILD = SpawnMode("build.spawning", records_host=True, waits=False,
                  event=Event.BUILD_AND_RUN)
RESIZE = SpawnMode("resize.migrating", records_host=False, waits=True,
                   event=Event.PREP_RESIZE)
EVACUATE = SpawnMode("evacuate.spawning", records_host=False, waits=True,
                     event=Event.REBUILD_INSTANCE)


@dataclass
class Outcome:
    """How a series of spawn attempts ended."""

    attempts: list[Attempt]
    placed: Destination | None = None
    fault: Fault | None = None
    # A move's transition found its server changed meanwhile (deleted).
    interrupted: bool = False


def spawn_somewhere(task: Task, mode: SpawnMode, record: ServerRecord, spec: RequestSpec,
                    destinations: Sequence[Destination], *, flavor: Flavor | None = None,
                    scheduling: SchedulingRecord | None = None) -> Outcome:
    """Spawn on the first destination (already claimed), then on each alternate whose
    claim still fits. Claims of failed hosts are released.

    A build moves a failed host's claim to the next alternate in one request
    (``Scheduler.move_claim``) instead of a release and a claim: a burst that
    reschedules thousands of builds saves a placement write for each. It counts the
    consumer's generation from 1, where placement starts a new consumer; should
    placement say otherwise, the claim is released and made afresh."""
    attempts = list(record.attempts) if mode.building else []
    retries = task.conf.scheduler.max_attempts > 1 and spec.requested_host is None
    # The consumer generation of the claim this build holds (None: not known),
    # and that of a failed host's claim kept for the next alternate.
    generation: int | None = 1 if mode.building else None
    held: int | None = None
    try:
        for index, destination in enumerate(destinations):
            if index > 0:
                if not retries:
                    break
                metrics.rescheduled()
                task.ensure_owned()
                claimed, generation, held = _claim_alternate(task, spec, destination, held)
                if not claimed:
                    attempts.append(history.attempt_claim_lost(destination.host,
                                                              destination.node))
                    continue
            refused = _group_refusal(task, mode, spec, destination)
            if refused is not None:
                attempt = history.attempt_group_refused(destination.host, destination.node,
                                                        refused)
                attempts.append(attempt)
                # As nova's compute refuses it in the build's own step.
                task.events.step(mode.event, destination.host).failed(attempt.describe())
                LOG.info("server %s: %s refused by the late check of its group: %s",
                         record.uuid, destination.host, refused)
                if generation is None:
                    task.release(record.uuid)
                else:
                    held, generation = generation, None  # kept for the next one
                continue
            changes = ServerChanges(
                host=destination.host if mode.records_host else KEEP,
                node=destination.node if mode.records_host else KEEP,
                scheduling=scheduling if index == 0 and scheduling is not None else KEEP)
            if not mode.waits:
                # A successor finds the host from the claim in placement, and the
                # build's last transition expects SPAWNING, so a delete that came
                # first makes it fail there (committed in order).
                task.apply_later(mode.spawning, changes)
            elif not task.apply(mode.spawning, changes,
                                progress={"dest_host": destination.host,
                                          "dest_node": destination.node}):
                return Outcome(attempts=attempts, interrupted=True)
            step = task.events.step(mode.event, destination.host)
            guest = Guest(uuid=record.uuid, name=record.name, node=destination.node,
                          flavor=flavor or record.flavor, image=spec.image,
                          allocations=destination.allocation_request,
                          volume_backed=record.is_bfv)
            try:
                task.spawn(destination.host, guest)
            except SpawnFailed as exc:
                attempt = history.attempt_failed(destination.host, destination.node,
                                                 exc.kind, exc.message, exc.feature)
                attempts.append(attempt)
                step.failed(attempt.describe())
                LOG.info("server %s: spawn on %s failed (%s: %s)%s", record.uuid,
                         destination.host, exc.kind, exc.message,
                         "" if exc.reschedule else "; not rescheduling")
                if not exc.reschedule:
                    task.release(record.uuid)
                    return Outcome(attempts=attempts,
                                   fault=history.build_aborted(record.uuid, attempt))
                if generation is None:
                    task.release(record.uuid)
                else:
                    held, generation = generation, None  # kept for the next one
                continue
            except AgentUnreachable as exc:
                task.release(record.uuid)
                generation = None
                # The spawn may have happened before the answer was lost.
                task.cleanup(destination.host, f"spawn answer lost: {exc}")
                attempt = history.attempt_unreachable(destination.host, destination.node,
                                                      str(exc))
                attempts.append(attempt)
                step.failed(attempt.describe())
                continue
            step.succeeded()
            attempts.append(history.attempt_ok(destination.host, destination.node))
            # Deleted while spawning? The caller's next transition expects the task
            # this one set, so it fails then, and the delete destroys and releases.
            return Outcome(attempts=attempts, placed=destination)
        return Outcome(attempts=attempts,
                       fault=history.build_failed(record.uuid, attempts, retries=retries))
    finally:
        if held is not None:
            # No alternate took the failed host's claim over.
            task.release(record.uuid)


def _group_refusal(task: Task, mode: SpawnMode, spec: RequestSpec,
                   destination: Destination) -> str | None:
    """The late check of a build in a group with a hard policy: reserve the claimed
    host in the group, under the group's lock, unless members placed there since the
    scheduler looked (a concurrent build's reservation included) make the policy
    refuse it; then the refusal's reason, and the build goes on to the next alternate,
    as after a failed spawn. A move is checked by its scheduling only."""
    group = spec.server_group
    if group is None or not group.policy.hard or not mode.building:
        return None
    task.ensure_owned()
    with task.clients.database.writer() as writer:
        return server_groups.reserve(writer.conn, group.uuid, spec.instance_uuid,
                                     destination.host)


def _claim_alternate(task: Task, spec: RequestSpec, destination: Destination,
                     held: int | None) -> tuple[bool, int | None, int | None]:
    """Claim an alternate, moving the failed host's claim still ``held`` (at that
    consumer generation) when there is one: (claimed, the generation of the new
    claim when known, that of a failed host's claim still held)."""
    scheduler = task.scheduler
    if held is not None:
        moved = scheduler.move_claim(spec, destination, held, confirm=task.ensure_owned)
        if moved:
            return True, held + 1, None
        if moved is False:
            return False, None, held  # no room there: the old claim stays held
        task.release(spec.instance_uuid)  # not at that generation
    return scheduler.claim(spec, destination, confirm=task.ensure_owned), None, None
