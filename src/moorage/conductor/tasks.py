"""What the conductor does for each kind of operation: build, delete, rebuild, the moves
(cold migrate, resize, evacuate) and their confirm and revert.

Each task reads the server as it is now and carries the operation from there, so the
same code serves a fresh operation and one taken over from a conductor that died
(``job.operation.taken_from``). A takeover first reconciles what the dead owner may
have left half done with what placement and the hosts really hold, as nova's
``_init_instance`` does at a compute service's start:

- a build that was scheduling may hold a claim: it is released and scheduling starts
  again;
- a build that was spawning on a host: if the guest runs there and the claim is held,
  the server is ACTIVE; otherwise the guest is destroyed (or, host unreachable, a
  cleanup is left for its next heartbeat), the claim released, and the build goes on
  with the next scheduling, the interrupted attempt in its history;
- a move in flight is rolled back: any guest on the destination destroyed, the
  source's allocations handed back to the server from the migration, the migration in
  error, the server ACTIVE where it was, its scheduling record saying why;
- delete, rebuild, confirm and revert are carried out again: each step is idempotent.

Every change to the server is fenced on still owning the operation, and the last one
finishes the operation in the same transaction.
"""

from __future__ import annotations

import logging
import time
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from oslo_config import cfg
from sqlalchemy.engine import Connection

from moorage import failpoints, metrics
from moorage.compute.client import AgentClient, AgentUnreachable, SpawnFailed
from moorage.conductor import faults
from moorage.conductor.specs import move_spec, request_spec, scheduling_record
from moorage.db.clock import utcnow
from moorage.db.database import Database
from moorage.lifecycle import operations, store
from moorage.lifecycle.group_commit import GroupCommit
from moorage.lifecycle.operations import Operation, OperationKind
from moorage.lifecycle.records import MigrationRecord, ServerRecord
from moorage.lifecycle.states import MigrationKind, MigrationStatus, ServerStatus, TaskState
from moorage.lifecycle.store import Fence
from moorage.metrics import BootOutcome
from moorage.model.codec import flavor_from_json, flavor_to_json, image_from_json
from moorage.model.flavor import Flavor
from moorage.placement.client import PlacementClient, PlacementError
from moorage.scheduler.manager import Scheduler
from moorage.scheduler.types import Catalog, Destination, NoValidHost, RequestSpec
from moorage.virt.driver import Guest

LOG = logging.getLogger(__name__)

BUILD, ACTIVE, ERROR = ServerStatus.BUILD, ServerStatus.ACTIVE, ServerStatus.ERROR
REBUILD, RESIZE = ServerStatus.REBUILD, ServerStatus.RESIZE
T = TaskState


@dataclass
class Job:
    """One operation being carried out by this conductor."""

    operation: Operation
    owner: str
    # The server as the API recorded it with the operation, when handed over in
    # process; read again otherwise.
    record: ServerRecord | None = None
    finished: bool = False
    # Another operation of the server waits for this one (a delete during a build).
    next_waiting: bool = True

    @property
    def uuid(self) -> str:
        return self.operation.server_uuid

    @property
    def fence(self) -> Fence:
        return Fence(self.operation.id, self.owner)


@dataclass
class Outcome:
    """How a series of spawn attempts ended."""

    attempts: list[dict[str, Any]]
    placed: Destination | None = None
    fault: dict[str, Any] | None = None
    interrupted: bool = False


@dataclass
class ServerTasks:
    """The operations, carried out with the conductor's clients."""

    conf: cfg.ConfigOpts
    database: Database
    scheduler: Scheduler
    placement: PlacementClient
    agents: AgentClient
    catalog: Catalog
    # When set, the servers' transitions are committed together (group_commit.py).
    committer: GroupCommit | None = None
    _handlers: dict[OperationKind, Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._handlers = {
            OperationKind.BUILD: self.build,
            OperationKind.DELETE: self.delete,
            OperationKind.REBUILD: self.rebuild,
            OperationKind.MIGRATE: self.move,
            OperationKind.RESIZE: self.move,
            OperationKind.EVACUATE: self.move,
            OperationKind.CONFIRM_RESIZE: self.confirm_resize,
            OperationKind.REVERT_RESIZE: self.revert_resize,
        }

    def run(self, job: Job) -> None:
        self._handlers[job.operation.kind](job)

    # -- helpers ---------------------------------------------------------------------
    def _load(self, uuid: str) -> ServerRecord | None:
        with self.database.reader() as conn:
            return store.load_server(conn, uuid)

    def update(self, job: Job, *, expect_status: tuple[ServerStatus, ...] | None,
               expect_task: tuple[TaskState | None, ...] | None = None,
               finish: bool = False, progress: Mapping[str, Any] | None = None,
               **changes: Any) -> bool:
        """A fenced transition of the job's server; ``finish`` ends the operation in the
        same transaction (whether or not the server was still as expected). Written
        with other workers' changes in one commit when a group committer is set."""
        operation_id, owner, uuid = job.operation.id, job.owner, job.uuid

        def change(conn: Connection) -> tuple[bool, bool]:
            changed = store.transition(conn, uuid, expect_status=expect_status,
                                       expect_task=expect_task, fence=job.fence,
                                       finish=finish, **changes)
            if changed and progress is not None and not finish:
                operations.set_progress(conn, operation_id, owner, progress)
            # Only a delete is accepted while an operation runs, and it changes the
            # task state, so that a transition that still applied leaves nobody
            # waiting behind this operation.
            waiting = finish and not changed and operations.waiting(conn, uuid)
            return changed, waiting

        if self.committer is not None:
            changed, waiting = self.committer.write(change)
        else:
            with self.database.writer() as writer:
                changed, waiting = change(writer.conn)
        if finish:
            job.finished = True
            job.next_waiting = waiting
        return changed

    def update_later(self, job: Job, *, expect_status: tuple[ServerStatus, ...],
                     expect_task: tuple[TaskState | None, ...], **changes: Any) -> None:
        """A fenced transition whose outcome nobody waits for: queued before whatever
        the job writes next (with a group committer), or written now (without)."""
        uuid, fence = job.uuid, job.fence

        def change(conn: Connection) -> bool:
            return store.transition(conn, uuid, expect_status=expect_status,
                                    expect_task=expect_task, fence=fence, **changes)

        if self.committer is not None:
            self.committer.write_later(change)
        else:
            with self.database.writer() as writer:
                change(writer.conn)

    def fail(self, job: Job, exc: BaseException) -> None:
        """Something unexpected: the server must not stay mid-task."""
        if job.operation.kind == OperationKind.BUILD:
            metrics.boot_ended(BootOutcome.ERROR)
        self.update(job, expect_status=None, finish=True, status=ERROR, task_state=None,
                    fault=faults.internal_error(job.operation.kind, exc))

    def _retries(self, spec: RequestSpec) -> bool:
        """Upstream's populate_retry: no alternates with max_attempts 1 or a forced host."""
        return self.conf.scheduler.max_attempts > 1 and spec.requested_host is None

    def _host_up(self, host: str) -> bool:
        info = self.catalog.hosts().get(host)
        return info is not None and info.up

    def _cleanup(self, host: str, uuid: str, reason: str) -> None:
        with self.database.writer() as writer:
            store.add_cleanup(writer.conn, host, uuid, reason)

    def _destroy(self, host: str, uuid: str, why: str) -> None:
        """Destroy a guest now, or, the host down or unreachable, at its next heartbeat."""
        if not self._host_up(host):
            LOG.info("server %s: host %s is down; its agent destroys the guest when it "
                     "is back", uuid, host)
            self._cleanup(host, uuid, why)
            return
        try:
            self.agents.destroy(host, uuid)
        except AgentUnreachable as exc:
            LOG.warning("server %s: could not destroy on %s (%s); its agent is told at "
                        "its next heartbeat", uuid, host, exc)
            self._cleanup(host, uuid, why)

    def _guest_on(self, host: str, uuid: str) -> bool | None:
        """Does ``host`` run the guest? None when its agent cannot say."""
        if not self._host_up(host):
            return None
        try:
            return self.agents.has_guest(host, uuid)
        except AgentUnreachable as exc:
            LOG.warning("server %s: cannot ask %s about its guest: %s", uuid, host, exc)
            return None

    def _allocations(self, consumer: str) -> dict[str, dict[str, int]]:
        try:
            found, _generation = self.placement.allocations(consumer)
        except PlacementError as exc:
            LOG.warning("could not read the allocations of %s: %s", consumer, exc)
            return {}
        return found

    # -- build -----------------------------------------------------------------------
    def build(self, job: Job) -> None:
        record = job.record if job.record is not None else self._load(job.uuid)
        if record is None or record.status != BUILD or record.task_state not in (
                T.SCHEDULING, T.SPAWNING):
            return  # deleted (or being deleted) before a worker got to it
        if job.operation.taken_from is not None:
            recovered = self._recover_build(job, record)
            if recovered is None:
                return
            record = recovered
        spec = request_spec(record, requested_host=record.requested_host)
        started = time.perf_counter()
        try:
            selection = self.scheduler.select_destinations(spec)
        except NoValidHost as exc:
            metrics.no_valid_host(exc)
            metrics.boot_ended(BootOutcome.ERROR)
            self.update(job, expect_status=(BUILD,), expect_task=(T.SCHEDULING,), finish=True,
                        status=ERROR, task_state=None, fault=faults.no_valid_host(exc),
                        scheduling=scheduling_record(spec, "build", error=exc.reason,
                                                     error_for_user=faults.reason_for_user(exc),
                                                     seconds=time.perf_counter() - started,
                                                     decisions=_decisions(exc)))
            return
        failpoints.reach("conductor.build.after_claim")
        scheduling = scheduling_record(spec, "build", selection,
                                       seconds=time.perf_counter() - started)
        outcome = self._spawn_somewhere(job, record, spec,
                                        [selection.destination, *selection.alternates],
                                        expect_status=(BUILD,), scheduling=scheduling)
        if outcome.placed is not None:
            destination = outcome.placed
            failpoints.reach("conductor.build.after_spawn")
            active = self.update(job, expect_status=(BUILD,), expect_task=(T.SPAWNING,),
                                 finish=True, status=ACTIVE, task_state=None,
                                 launched_at=utcnow(), attempts=outcome.attempts,
                                 host=destination.host, node=destination.node)
            metrics.boot_ended(BootOutcome.ACTIVE if active else BootOutcome.DELETED)
            if not active:
                # Deleted while it was spawning: the delete found no host yet (or
                # another), so the guest and its claim are this build's to remove.
                LOG.info("server %s: deleted while it was spawning on %s; removing its "
                         "guest and claim", job.uuid, destination.host)
                self._destroy(destination.host, job.uuid, f"server {job.uuid} deleted")
                self.scheduler.release(job.uuid)
        elif not outcome.interrupted:
            # No host holds it (claims released): host and node are cleared, as
            # upstream does, so nothing counts it on the last host tried.
            metrics.boot_ended(BootOutcome.ERROR)
            self.update(job, expect_status=(BUILD,), expect_task=(T.SPAWNING, T.SCHEDULING),
                        finish=True, status=ERROR, task_state=None,
                        attempts=outcome.attempts, fault=outcome.fault, host=None, node=None)

    def _recover_build(self, job: Job, record: ServerRecord) -> ServerRecord | None:
        """A build taken over: finish it if its guest runs, else undo the half-done
        attempt so that scheduling can start again. None when the build is over."""
        previous = job.operation.taken_from
        held = self._allocations(job.uuid)
        # Where the guest may be: the host its claim in placement is on (the record may
        # not say so yet: the spawn begins before that is written), else the host the
        # record names.
        host, node = self._claimed(held)
        if host is None:
            host, node = record.host, record.node
        attempts = list(record.attempts)
        if host is not None:
            present = self._guest_on(host, job.uuid)
            if present and held:
                LOG.info("server %s: build taken over from %s; its guest runs on %s",
                         job.uuid, previous, host)
                attempts.append(faults.attempt_ok(host, node))
                metrics.boot_ended(BootOutcome.ACTIVE)
                self.update(job, expect_status=(BUILD,), expect_task=(T.SPAWNING, T.SCHEDULING),
                            finish=True, status=ACTIVE, task_state=None,
                            launched_at=utcnow(), attempts=attempts, host=host, node=node)
                return None
            why = f"build of {job.uuid} interrupted: conductor {previous} stopped"
            if present:
                self._destroy(host, job.uuid, why)
            elif present is None:
                self._cleanup(host, job.uuid, why)
            attempts.append(faults.attempt_interrupted(host, node, previous))
        LOG.info("server %s: build taken over from %s; scheduling again", job.uuid, previous)
        self.scheduler.release(job.uuid)
        if not self.update(job, expect_status=(BUILD,), expect_task=(T.SCHEDULING, T.SPAWNING),
                           task_state=T.SCHEDULING, host=None, node=None, attempts=attempts):
            return None
        return self._load(job.uuid)

    def _claimed(self, held: Mapping[str, Mapping[str, int]]
                 ) -> tuple[str | None, str | None]:
        """(host, node) of the providers a claim is on, when a compute node owns them."""
        self.catalog.hosts()
        for provider in held:
            found = self.catalog.node_of_provider(provider)
            if found is not None:
                return found
        return None, None

    def _spawn_somewhere(self, job: Job, record: ServerRecord, spec: RequestSpec,
                         destinations: list[Destination], *,
                         expect_status: tuple[ServerStatus, ...],
                         flavor: Flavor | None = None,
                         scheduling: Mapping[str, Any] | None = None) -> Outcome:
        """Spawn on the first destination (already claimed), then on each alternate
        whose claim still fits, until one succeeds or a failure says another host
        would fail the same way. Claims of failed hosts are released.

        A build moves a failed host's claim to the next alternate in one request
        (``Scheduler.move_claim``) instead of a release and a claim: a burst that
        reschedules thousands of builds saves a placement write for each. It counts
        the consumer's generation from 1, where placement starts a new consumer;
        should placement say otherwise, the claim is released and made afresh."""
        building = expect_status == (BUILD,)
        attempts = list(record.attempts) if building else []
        retries = self._retries(spec)
        task = (T.SPAWNING if building else T.RESIZE_MIGRATING
                if expect_status == (RESIZE,) else T.REBUILD_SPAWNING)
        # The consumer generation of the claim this build holds (None: not known),
        # and that of a failed host's claim kept for the next alternate.
        generation: int | None = 1 if building else None
        held: int | None = None
        try:
            for index, destination in enumerate(destinations):
                if index > 0:
                    if not retries:
                        break
                    metrics.rescheduled()
                    claimed, generation, held = self._claim_alternate(spec, destination,
                                                                      held)
                    if not claimed:
                        attempts.append(faults.attempt_claim_lost(destination.host,
                                                                  destination.node))
                        continue
                changes: dict[str, Any] = {"task_state": task}
                if building:
                    changes.update(host=destination.host, node=destination.node)
                if index == 0 and scheduling is not None:
                    changes["scheduling"] = scheduling
                expect_task = (T.SCHEDULING, T.SPAWNING, T.RESIZE_PREP, T.RESIZE_MIGRATING,
                               T.REBUILDING, T.REBUILD_SPAWNING)
                if building:
                    # Not waited for: a successor finds the host from the claim in
                    # placement, and the build's last transition expects SPAWNING, so
                    # a delete that came first makes it fail there (committed in
                    # order).
                    self.update_later(job, expect_status=expect_status,
                                      expect_task=expect_task, **changes)
                elif not self.update(job, expect_status=expect_status,
                                     expect_task=expect_task,
                                     progress={"dest_host": destination.host,
                                               "dest_node": destination.node}, **changes):
                    # A move records its destination on the operation, for a successor.
                    return Outcome(attempts=attempts, interrupted=True)
                guest = Guest(uuid=record.uuid, name=record.name, node=destination.node,
                              flavor=flavor or record.flavor, image=spec.image,
                              allocations=destination.allocation_request,
                              volume_backed=record.is_bfv)
                try:
                    self.agents.spawn(destination.host, guest)
                except SpawnFailed as exc:
                    attempt = faults.attempt_failed(destination.host, destination.node, exc)
                    attempts.append(attempt)
                    LOG.info("server %s: spawn on %s failed (%s: %s)%s", record.uuid,
                             destination.host, exc.kind, exc.message,
                             "" if exc.reschedule else "; not rescheduling")
                    if not exc.reschedule:
                        self.scheduler.release(record.uuid)
                        return Outcome(attempts=attempts,
                                       fault=faults.build_aborted(record.uuid, attempt))
                    if generation is None:
                        self.scheduler.release(record.uuid)
                    else:
                        held, generation = generation, None  # kept for the next one
                    continue
                except AgentUnreachable as exc:
                    self.scheduler.release(record.uuid)
                    generation = None
                    # The spawn may have happened before the answer was lost.
                    self._cleanup(destination.host, record.uuid, f"spawn answer lost: {exc}")
                    attempts.append(faults.attempt_unreachable(destination.host,
                                                               destination.node, str(exc)))
                    continue
                attempts.append(faults.attempt_ok(destination.host, destination.node))
                # Deleted while spawning? The caller's next transition expects the task
                # this one set, so it fails then, and the delete destroys and releases.
                return Outcome(attempts=attempts, placed=destination)
            return Outcome(attempts=attempts,
                           fault=faults.build_failed(record.uuid, attempts, retries=retries))
        finally:
            if held is not None:
                # No alternate took the failed host's claim over.
                self.scheduler.release(record.uuid)

    def _claim_alternate(self, spec: RequestSpec, destination: Destination,
                         held: int | None) -> tuple[bool, int | None, int | None]:
        """Claim an alternate, moving the failed host's claim still ``held`` (at that
        consumer generation) when there is one: (claimed, the generation of the new
        claim when known, that of a failed host's claim still held)."""
        if held is not None:
            moved = self.scheduler.move_claim(spec, destination, held)
            if moved:
                return True, held + 1, None
            if moved is False:
                return False, None, held  # no room there: the old claim stays held
            self.scheduler.release(spec.instance_uuid)  # not at that generation
        return self.scheduler.claim(spec, destination), None, None

    # -- delete ----------------------------------------------------------------------
    def delete(self, job: Job) -> None:
        uuid = job.uuid
        record = self._load(uuid)
        if record is None:
            return
        hosts = {record.host} if record.host else set()
        # A build interrupted before it recorded its host left a claim that names it.
        claimed, _node = self._claimed(self._allocations(uuid))
        if claimed is not None:
            hosts.add(claimed)
        with self.database.reader() as conn:
            moving = store.in_flight_migration(conn, uuid)
        if moving is not None:
            hosts.add(moving.source_host)
            if moving.dest_host:
                hosts.add(moving.dest_host)
        for host in sorted(hosts):
            self._destroy(host, uuid, f"server {uuid} deleted")
        failpoints.reach("conductor.delete.after_destroy")
        self.scheduler.release(uuid)
        failpoints.reach("conductor.delete.after_release")
        if moving is not None:
            self.scheduler.release(moving.uuid)
            self._set_migration(moving.uuid, MigrationStatus.DELETED)
        self.update(job, expect_status=None, finish=True, status=ServerStatus.DELETED,
                    task_state=None, deleted_at=utcnow())

    # -- rebuild ---------------------------------------------------------------------
    def rebuild(self, job: Job) -> None:
        record = self._load(job.uuid)
        if record is None or record.status != REBUILD or record.host is None:
            return
        image_id = str(job.operation.arguments["image_id"])
        image = image_from_json(job.operation.arguments["image"])
        host, node = record.host, record.node
        spec = request_spec(record, image=image, requested_host=host, rebuild=True)
        if image_id != record.image_id:
            try:
                self.scheduler.verify_rebuild(spec, host)
            except NoValidHost as exc:
                metrics.no_valid_host(exc)
                # The image stays what it was (upstream rolls image_ref back).
                self.update(job, expect_status=(REBUILD,), finish=True, status=ERROR,
                            task_state=None, fault=faults.no_valid_host(exc),
                            scheduling=scheduling_record(
                                spec, "rebuild", error=exc.reason,
                                error_for_user=faults.reason_for_user(exc)))
                return
        allocations = self._allocations(job.uuid)
        guest = Guest(uuid=job.uuid, name=record.name, node=node or host, flavor=record.flavor,
                      image=image, allocations=allocations, volume_backed=record.is_bfv)
        try:
            self.agents.destroy(host, job.uuid)
            self.agents.spawn(host, guest)
        except SpawnFailed as exc:
            self.update(job, expect_status=(REBUILD,), finish=True, status=ERROR,
                        task_state=None, fault=faults.rebuild_failed(exc))
            return
        except AgentUnreachable as exc:
            self.update(job, expect_status=(REBUILD,), finish=True, status=ERROR,
                        task_state=None, fault=faults.internal_error("rebuild", exc))
            return
        self.update(job, expect_status=(REBUILD,), finish=True, status=ACTIVE,
                    task_state=None, image_id=image_id, image=image, fault=None,
                    scheduling=scheduling_record(spec, "rebuild"))

    # -- cold migrate, resize, evacuate ----------------------------------------------
    def move(self, job: Job) -> None:
        kind = job.operation.kind
        evacuate = kind == OperationKind.EVACUATE
        status = REBUILD if evacuate else RESIZE
        record = self._load(job.uuid)
        if record is None or record.status != status or record.host is None:
            return
        with self.database.reader() as conn:
            in_flight = store.in_flight_migration(conn, job.uuid)
        if job.operation.taken_from is not None or in_flight is not None:
            self._undo_move(job, record, in_flight, status, {
                "operation": str(kind),
                "error": f"interrupted: the conductor carrying out this {kind} stopped; "
                         "the move was rolled back and the server left where it was",
                "conductor": job.operation.taken_from})
            return
        arguments = job.operation.arguments
        flavor = (flavor_from_json(arguments["flavor"]) if arguments.get("flavor")
                  else None)
        target = arguments.get("host")
        migration = self._new_migration(record, MigrationKind.EVACUATION if evacuate
                                        else MigrationKind.RESIZE if flavor
                                        else MigrationKind.MIGRATION)
        failpoints.reach("conductor.move.after_migration")
        # The source host's resources move to the migration as consumer, so the
        # instance consumer is free to claim the destination (upstream's swap).
        self.placement.move_allocations(job.uuid, migration.uuid, record.project_id,
                                        record.user_id)
        failpoints.reach("conductor.move.after_swap")
        new_flavor = flavor or record.flavor
        spec = move_spec(record, new_flavor, target)
        operation = str(kind)
        try:
            selection = self.scheduler.select_destinations(spec)
        except NoValidHost as exc:
            metrics.no_valid_host(exc)
            self._undo_move(job, record, migration, status,
                            scheduling_record(spec, operation, error=exc.reason,
                                              error_for_user=faults.reason_for_user(exc),
                                              decisions=_decisions(exc)))
            return
        outcome = self._spawn_somewhere(job, record, spec,
                                        [selection.destination, *selection.alternates],
                                        expect_status=(status,), flavor=new_flavor)
        if outcome.placed is None:
            self._undo_move(job, record, migration, status, {
                **scheduling_record(spec, operation, selection),
                "error": outcome.fault["message"] if outcome.fault else "interrupted",
                "error_for_user": (faults.for_user(outcome.fault)["message"]
                                   if outcome.fault else "interrupted"),
                "attempts": outcome.attempts})
            return
        destination = outcome.placed
        failpoints.reach("conductor.move.after_spawn")
        scheduling = scheduling_record(spec, operation, selection)
        scheduling["attempts"] = outcome.attempts
        if evacuate:
            # DONE: the source still holds the guest; its agent destroys it, and the API
            # frees the migration's allocations, when the host registers again.
            self._set_migration(migration.uuid, MigrationStatus.DONE, destination.host)
            self.update(job, expect_status=(REBUILD,), finish=True, status=ACTIVE,
                        task_state=None, host=destination.host, node=destination.node,
                        scheduling=scheduling)
            return
        self._set_migration(migration.uuid, MigrationStatus.FINISHED, destination.host)
        scheduling["resize"] = {"old_flavor_id": record.flavor_id,
                                "old_flavor": flavor_to_json(record.flavor),
                                "old_node": record.node, "migration": migration.uuid}
        changes: dict[str, Any] = {}
        if flavor is not None:
            changes = {"flavor_id": str(arguments["flavor_id"]), "flavor": flavor}
        self.update(job, expect_status=(RESIZE,), finish=True,
                    status=ServerStatus.VERIFY_RESIZE, task_state=None,
                    host=destination.host, node=destination.node, scheduling=scheduling,
                    **changes)

    def _new_migration(self, record: ServerRecord, kind: MigrationKind) -> MigrationRecord:
        assert record.host is not None
        migration = MigrationRecord(uuid=str(uuidlib.uuid4()), server_uuid=record.uuid,
                                    kind=kind, source_host=record.host,
                                    status=MigrationStatus.MIGRATING)
        with self.database.writer() as writer:
            return store.insert_migration(writer.conn, migration)

    def _set_migration(self, uuid: str, status: MigrationStatus,
                       dest_host: str | None = None) -> None:
        with self.database.writer() as writer:
            store.update_migration(writer.conn, uuid, status=status, dest_host=dest_host)

    def _give_back(self, record: ServerRecord, migration: MigrationRecord) -> None:
        """The source host's allocations go back from the migration to the server, and
        whatever the server claimed elsewhere meanwhile is released. Placement is
        asked, not assumed: a successor may find the swap done or not yet done."""
        if not self._allocations(migration.uuid):
            return  # the swap never happened, or was undone: the server holds its own
        self.scheduler.release(record.uuid)
        self.placement.move_allocations(migration.uuid, record.uuid, record.project_id,
                                        record.user_id)

    def _undo_move(self, job: Job, record: ServerRecord,
                   migration: MigrationRecord | None, status: ServerStatus,
                   scheduling: Mapping[str, Any]) -> None:
        """No destination worked (or the move was interrupted): the server stays where
        it was, ACTIVE, with what happened in its scheduling record."""
        destination = job.operation.progress.get("dest_host")
        if destination and destination != record.host:
            self._destroy(str(destination), job.uuid,
                          f"{job.operation.kind} of {job.uuid} rolled back")
        if migration is not None:
            self._give_back(record, migration)
            self._set_migration(migration.uuid, MigrationStatus.ERROR)
        self.update(job, expect_status=(status,), finish=True, status=ACTIVE,
                    task_state=None, host=record.host, node=record.node,
                    scheduling=dict(scheduling))

    def confirm_resize(self, job: Job) -> None:
        record = self._load(job.uuid)
        if record is None or record.status != ServerStatus.VERIFY_RESIZE:
            return
        migration = self._resize_migration(record)
        if migration is not None:
            self._destroy(migration.source_host, job.uuid,
                          f"resize of {job.uuid} confirmed")
            self.scheduler.release(migration.uuid)
            self._set_migration(migration.uuid, MigrationStatus.CONFIRMED)
        scheduling = dict(record.scheduling)
        scheduling.pop("resize", None)
        self.update(job, expect_status=(ServerStatus.VERIFY_RESIZE,), finish=True,
                    status=ACTIVE, task_state=None, scheduling=scheduling)

    def revert_resize(self, job: Job) -> None:
        record = self._load(job.uuid)
        if record is None or record.status != ServerStatus.REVERT_RESIZE:
            return
        migration = self._resize_migration(record)
        resize = record.scheduling.get("resize") or {}
        if migration is None or record.host is None:
            self.update(job, expect_status=(ServerStatus.REVERT_RESIZE,), finish=True,
                        status=ACTIVE, task_state=None)
            return
        if record.host != migration.source_host:
            self._destroy(record.host, job.uuid, f"resize of {job.uuid} reverted")
        self._give_back(record, migration)
        self._set_migration(migration.uuid, MigrationStatus.REVERTED)
        old_flavor = (flavor_from_json(resize["old_flavor"]) if resize.get("old_flavor")
                      else record.flavor)
        scheduling = dict(record.scheduling)
        scheduling.pop("resize", None)
        self.update(job, expect_status=(ServerStatus.REVERT_RESIZE,), finish=True,
                    status=ACTIVE, task_state=None, host=migration.source_host,
                    node=resize.get("old_node"),
                    flavor_id=resize.get("old_flavor_id", record.flavor_id),
                    flavor=old_flavor, scheduling=scheduling)

    def _resize_migration(self, record: ServerRecord) -> MigrationRecord | None:
        with self.database.reader() as conn:
            return store.in_flight_migration(conn, record.uuid)


def _decisions(exc: NoValidHost) -> Mapping[str, object] | None:
    """The scheduler's record of a failed scheduling, as its NoValidHost carries it."""
    found = exc.details.get("decisions")
    return found if isinstance(found, Mapping) else None
