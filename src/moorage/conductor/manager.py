"""The conductor: background workers that carry out what the compute API accepted.

The API validates a request, records the server's new state (BUILD, REBUILD,
RESIZE, deleting...) and returns 202; the conductor then does the slow part on a
worker thread: it asks the scheduler for a destination, spawns through the host's
compute agent, and on a late failure (UnsupportedHardware and the like) releases the
claim and tries the next alternate, as upstream's conductor does with its host list.

Operations on one server run one at a time (a lock per server). Every state change
is a compare-and-set (``transition``), so a delete that arrives during a build wins:
the build notices at its next step and leaves the cleanup to the delete.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from oslo_config import cfg

from moorage.api.storage import servers as store
from moorage.api.storage.servers import (
    ACTIVE,
    BUILD,
    DELETED,
    ERROR,
    EVACUATION,
    MIGRATION,
    REBUILD,
    RESIZE,
    RESIZE_KIND,
    REVERT_RESIZE,
    VERIFY_RESIZE,
    MigrationRecord,
    ServerRecord,
    utcnow,
)
from moorage.compute.client import AgentClient, AgentUnreachable, SpawnFailed
from moorage.conductor import faults
from moorage.conductor.specs import request_spec, scheduling_record
from moorage.model.codec import flavor_from_json, flavor_to_json
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.placement.client import PlacementClient, PlacementError
from moorage.placement.storage.database import Database
from moorage.scheduler.manager import Scheduler
from moorage.scheduler.types import Catalog, Destination, NoValidHost, RequestSpec
from moorage.virt.driver import Guest

LOG = logging.getLogger(__name__)

# Task states of the server while the conductor works on it (nova's names).
SCHEDULING = "scheduling"
SPAWNING = "spawning"
DELETING = "deleting"
REBUILDING = "rebuilding"
RESIZE_PREP = "resize_prep"
RESIZE_MIGRATING = "resize_migrating"
RESIZE_CONFIRMING = "resize_confirming"
RESIZE_REVERTING = "resize_reverting"
REBUILD_SPAWNING = "rebuild_spawning"


class Conductor:
    """Runs server operations on a pool of worker threads."""

    def __init__(self, conf: cfg.ConfigOpts, database: Database, scheduler: Scheduler,
                 placement: PlacementClient, agents: AgentClient, catalog: Catalog) -> None:
        self.conf = conf
        self.database = database
        self.scheduler = scheduler
        self.placement = placement
        self.agents = agents
        self.catalog = catalog
        self._executor: ThreadPoolExecutor | None = None
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._pending: set[Future[None]] = set()
        self._pending_guard = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=self.conf.conductor.workers, thread_name_prefix="conductor")

    def stop(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=False)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every accepted operation has finished; False on timeout."""
        with self._pending_guard:
            pending = list(self._pending)
        for future in pending:
            try:
                future.result(timeout=timeout)
            except TimeoutError:
                return False
        return True

    # -- what the API calls (each returns at once) ----------------------------------
    def build(self, uuid: str) -> Future[None]:
        return self._submit(uuid, "build", self._build)

    def delete(self, uuid: str) -> Future[None]:
        return self._submit(uuid, "delete", self._delete)

    def rebuild(self, uuid: str, image_id: str, image: Image) -> Future[None]:
        return self._submit(uuid, "rebuild", lambda u: self._rebuild(u, image_id, image))

    def migrate(self, uuid: str, flavor_id: str | None = None, flavor: Flavor | None = None,
                host: str | None = None) -> Future[None]:
        return self._submit(uuid, "resize" if flavor else "migrate",
                            lambda u: self._migrate(u, flavor_id, flavor, host))

    def confirm_resize(self, uuid: str) -> Future[None]:
        return self._submit(uuid, "confirmResize", self._confirm_resize)

    def revert_resize(self, uuid: str) -> Future[None]:
        return self._submit(uuid, "revertResize", self._revert_resize)

    def evacuate(self, uuid: str, host: str | None = None) -> Future[None]:
        return self._submit(uuid, "evacuate", lambda u: self._evacuate(u, host))

    # -- machinery -----------------------------------------------------------------
    def _submit(self, uuid: str, operation: str, work: Callable[[str], None]) -> Future[None]:
        if self._executor is None:
            self.start()
        assert self._executor is not None
        future = self._executor.submit(self._run, uuid, operation, work)
        with self._pending_guard:
            self._pending.add(future)
        future.add_done_callback(self._forget)
        return future

    def _forget(self, future: Future[None]) -> None:
        with self._pending_guard:
            self._pending.discard(future)

    def _run(self, uuid: str, operation: str, work: Callable[[str], None]) -> None:
        with self._server_lock(uuid):
            try:
                work(uuid)
            except Exception as exc:  # a server must never stay mid-task
                LOG.exception("%s of server %s failed", operation, uuid)
                self._update(uuid, expect_status=None, status=ERROR, task_state=None,
                             fault=faults.internal_error(operation, exc))

    @contextmanager
    def _server_lock(self, uuid: str) -> Iterator[None]:
        with self._locks_guard:
            lock = self._locks.setdefault(uuid, threading.Lock())
        with lock:
            yield

    def _load(self, uuid: str) -> ServerRecord | None:
        with self.database.reader() as conn:
            return store.load_server(conn, uuid)

    def _update(self, uuid: str, *, expect_status: tuple[str, ...] | None,
                expect_task: tuple[str | None, ...] | None = None, **changes: Any) -> bool:
        with self.database.writer() as writer:
            return store.transition(writer.conn, uuid, expect_status=expect_status,
                                    expect_task=expect_task, **changes)

    def _retries(self, spec: RequestSpec) -> bool:
        """Upstream's populate_retry: no alternates with max_attempts 1 or a forced host."""
        return self.conf.scheduler.max_attempts > 1 and spec.requested_host is None

    def _host_up(self, host: str) -> bool:
        info = self.catalog.hosts().get(host)
        return info is not None and info.up

    # -- build -----------------------------------------------------------------------
    def _build(self, uuid: str) -> None:
        record = self._load(uuid)
        if record is None or record.status != BUILD or record.task_state != SCHEDULING:
            return  # deleted (or being deleted) before a worker got to it
        spec = request_spec(record, requested_host=record.requested_host)
        started = time.perf_counter()
        try:
            selection = self.scheduler.select_destinations(spec)
        except NoValidHost as exc:
            self._update(uuid, expect_status=(BUILD,), expect_task=(SCHEDULING,),
                         status=ERROR, task_state=None, fault=faults.no_valid_host(exc),
                         scheduling=scheduling_record(
                             spec, "build", error=exc.reason,
                             seconds=time.perf_counter() - started))
            return
        scheduling = scheduling_record(spec, "build", selection,
                                       seconds=time.perf_counter() - started)
        if not self._update(uuid, expect_status=(BUILD,), expect_task=(SCHEDULING,),
                            scheduling=scheduling):
            self.scheduler.release(uuid)  # deleted while we scheduled
            return
        outcome = self._spawn_somewhere(record, spec, [selection.destination,
                                                       *selection.alternates],
                                        expect_status=(BUILD,))
        if outcome.placed is not None:
            destination = outcome.placed
            self._update(uuid, expect_status=(BUILD,), expect_task=(SPAWNING,),
                         status=ACTIVE, task_state=None, launched_at=utcnow(),
                         attempts=outcome.attempts, host=destination.host,
                         node=destination.node)
        elif not outcome.interrupted:
            # No host holds it (claims released): host and node are cleared, as
            # upstream does, so nothing counts it on the last host tried.
            self._update(uuid, expect_status=(BUILD,), expect_task=(SPAWNING, SCHEDULING),
                         status=ERROR, task_state=None, attempts=outcome.attempts,
                         fault=outcome.fault, host=None, node=None)

    def _spawn_somewhere(self, record: ServerRecord, spec: RequestSpec,
                         destinations: list[Destination], *, expect_status: tuple[str, ...],
                         flavor: Flavor | None = None) -> _Outcome:
        """Spawn on the first destination (already claimed), then on each alternate
        whose claim still fits, until one succeeds or a failure says another host
        would fail the same way. Claims of failed hosts are released."""
        attempts = list(record.attempts) if expect_status == (BUILD,) else []
        retries = self._retries(spec)
        for index, destination in enumerate(destinations):
            if index > 0:
                if not retries:
                    break
                if not self.scheduler.claim(spec, destination):
                    attempts.append(faults.attempt_claim_lost(destination.host,
                                                              destination.node))
                    continue
            if not self._update(record.uuid, expect_status=expect_status,
                                expect_task=(SCHEDULING, SPAWNING, RESIZE_PREP,
                                             RESIZE_MIGRATING, REBUILDING,
                                             REBUILD_SPAWNING),
                                task_state=SPAWNING if expect_status == (BUILD,)
                                else RESIZE_MIGRATING if expect_status == (RESIZE,)
                                else REBUILD_SPAWNING,
                                host=destination.host if expect_status == (BUILD,)
                                else record.host,
                                node=destination.node if expect_status == (BUILD,)
                                else record.node):
                return _Outcome(attempts=attempts, interrupted=True)
            guest = Guest(uuid=record.uuid, name=record.name, node=destination.node,
                          flavor=flavor or record.flavor, image=spec.image,
                          allocations=destination.allocation_request,
                          volume_backed=record.is_bfv)
            try:
                self.agents.spawn(destination.host, guest)
            except SpawnFailed as exc:
                self.scheduler.release(record.uuid)
                attempt = faults.attempt_failed(destination.host, destination.node, exc)
                attempts.append(attempt)
                LOG.info("server %s: spawn on %s failed (%s: %s)%s", record.uuid,
                         destination.host, exc.kind, exc.message,
                         "" if exc.reschedule else "; not rescheduling")
                if not exc.reschedule:
                    return _Outcome(attempts=attempts,
                                    fault=faults.build_aborted(record.uuid, attempt))
                continue
            except AgentUnreachable as exc:
                self.scheduler.release(record.uuid)
                attempts.append(faults.attempt_unreachable(destination.host,
                                                           destination.node, str(exc)))
                continue
            attempts.append(faults.attempt_ok(destination.host, destination.node))
            if expect_status == (BUILD,):
                current = self._load(record.uuid)
                if current is None or current.task_state != SPAWNING:
                    # Deleted while spawning: the delete destroys and releases.
                    return _Outcome(attempts=attempts, interrupted=True)
            return _Outcome(attempts=attempts, placed=destination)
        return _Outcome(attempts=attempts,
                        fault=faults.build_failed(record.uuid, attempts, retries=retries))

    # -- delete ----------------------------------------------------------------------
    def _delete(self, uuid: str) -> None:
        record = self._load(uuid)
        if record is None:
            return
        hosts = {record.host} if record.host else set()
        with self.database.reader() as conn:
            moving = store.in_flight_migration(conn, uuid)
        if moving is not None:
            hosts.add(moving.source_host)
            if moving.dest_host:
                hosts.add(moving.dest_host)
        for host in sorted(hosts):
            if not self._host_up(host):
                LOG.info("server %s: host %s is down, deleting locally", uuid, host)
                continue
            try:
                self.agents.destroy(host, uuid)
            except AgentUnreachable as exc:
                LOG.warning("server %s: could not destroy on %s: %s", uuid, host, exc)
        self.scheduler.release(uuid)
        if moving is not None:
            self.scheduler.release(moving.uuid)
            self._set_migration(moving.uuid, status="deleted")
        self._update(uuid, expect_status=None, status=DELETED, task_state=None,
                     deleted_at=utcnow())

    # -- rebuild ---------------------------------------------------------------------
    def _rebuild(self, uuid: str, image_id: str, image: Image) -> None:
        record = self._load(uuid)
        if record is None or record.status != REBUILD or record.host is None:
            return
        host, node = record.host, record.node
        spec = request_spec(record, image=image, requested_host=host, rebuild=True)
        if image_id != record.image_id:
            try:
                self.scheduler.verify_rebuild(spec, host)
            except NoValidHost as exc:
                # The image stays what it was (upstream rolls image_ref back).
                self._update(uuid, expect_status=(REBUILD,), status=ERROR, task_state=None,
                             fault=faults.no_valid_host(exc),
                             scheduling=scheduling_record(spec, "rebuild", error=exc.reason))
                return
        allocations = self._allocations(uuid)
        guest = Guest(uuid=uuid, name=record.name, node=node or host, flavor=record.flavor,
                      image=image, allocations=allocations, volume_backed=record.is_bfv)
        try:
            self.agents.destroy(host, uuid)
            self.agents.spawn(host, guest)
        except SpawnFailed as exc:
            self._update(uuid, expect_status=(REBUILD,), status=ERROR, task_state=None,
                         fault=faults.rebuild_failed(exc))
            return
        except AgentUnreachable as exc:
            self._update(uuid, expect_status=(REBUILD,), status=ERROR, task_state=None,
                         fault=faults.internal_error("rebuild", exc))
            return
        self._update(uuid, expect_status=(REBUILD,), status=ACTIVE, task_state=None,
                     image_id=image_id, image=image, fault=None,
                     scheduling=scheduling_record(spec, "rebuild"))

    def _allocations(self, consumer: str) -> Mapping[str, Mapping[str, int]]:
        try:
            found, _generation = self.placement.allocations(consumer)
        except PlacementError as exc:
            LOG.warning("could not read the allocations of %s: %s", consumer, exc)
            return {}
        return found

    # -- cold migrate and resize -----------------------------------------------------
    def _migrate(self, uuid: str, flavor_id: str | None, flavor: Flavor | None,
                 host: str | None) -> None:
        record = self._load(uuid)
        if record is None or record.status != RESIZE or record.host is None:
            return
        source = record.host
        migration = self._new_migration(record, RESIZE_KIND if flavor else MIGRATION)
        # The source host's resources move to the migration as consumer, so the
        # instance consumer is free to claim the destination (upstream's swap).
        self.placement.move_allocations(uuid, migration.uuid, record.project_id,
                                        record.user_id)
        new_flavor = flavor or record.flavor
        spec = request_spec(record, flavor=new_flavor, ignore_hosts=(source,),
                            requested_host=host)
        operation = "resize" if flavor else "migrate"
        try:
            selection = self.scheduler.select_destinations(spec)
        except NoValidHost as exc:
            self._undo_move(record, migration, scheduling_record(spec, operation,
                                                                 error=exc.reason))
            return
        outcome = self._spawn_somewhere(record, spec,
                                        [selection.destination, *selection.alternates],
                                        expect_status=(RESIZE,), flavor=new_flavor)
        if outcome.placed is None:
            self._undo_move(record, migration, {
                **scheduling_record(spec, operation, selection),
                "error": outcome.fault["message"] if outcome.fault else "interrupted",
                "attempts": outcome.attempts})
            return
        destination = outcome.placed
        self._set_migration(migration.uuid, status="finished", dest_host=destination.host)
        scheduling = scheduling_record(spec, operation, selection)
        scheduling["attempts"] = outcome.attempts
        scheduling["resize"] = {"old_flavor_id": record.flavor_id,
                                "old_flavor": flavor_to_json(record.flavor),
                                "old_node": record.node, "migration": migration.uuid}
        changes: dict[str, Any] = {}
        if flavor is not None and flavor_id is not None:
            changes = {"flavor_id": flavor_id, "flavor": flavor}
        self._update(uuid, expect_status=(RESIZE,), status=VERIFY_RESIZE, task_state=None,
                     host=destination.host, node=destination.node, scheduling=scheduling,
                     **changes)

    def _new_migration(self, record: ServerRecord, kind: str) -> MigrationRecord:
        assert record.host is not None
        migration = MigrationRecord(uuid=str(uuidlib.uuid4()), server_uuid=record.uuid,
                                    kind=kind, source_host=record.host, status="migrating")
        with self.database.writer() as writer:
            return store.insert_migration(writer.conn, migration)

    def _set_migration(self, uuid: str, **changes: Any) -> None:
        with self.database.writer() as writer:
            store.update_migration(writer.conn, uuid, **changes)

    def _undo_move(self, record: ServerRecord, migration: MigrationRecord,
                   scheduling: dict[str, Any]) -> None:
        """No destination worked: the source allocations go back to the server, which
        stays where it was, ACTIVE, with what scheduling said in its record."""
        self.scheduler.release(record.uuid)
        self.placement.move_allocations(migration.uuid, record.uuid, record.project_id,
                                        record.user_id)
        self._set_migration(migration.uuid, status="error")
        self._update(record.uuid, expect_status=(RESIZE, REBUILD), status=ACTIVE,
                     task_state=None, host=record.host, node=record.node,
                     scheduling=scheduling)

    def _confirm_resize(self, uuid: str) -> None:
        record = self._load(uuid)
        if record is None or record.status != VERIFY_RESIZE:
            return
        migration = self._resize_migration(record)
        if migration is not None:
            if self._host_up(migration.source_host):
                try:
                    self.agents.destroy(migration.source_host, uuid)
                except AgentUnreachable as exc:
                    LOG.warning("server %s: could not destroy the source guest on %s: %s",
                                uuid, migration.source_host, exc)
            self.scheduler.release(migration.uuid)
            self._set_migration(migration.uuid, status="confirmed")
        scheduling = dict(record.scheduling)
        scheduling.pop("resize", None)
        self._update(uuid, expect_status=(VERIFY_RESIZE,), status=ACTIVE, task_state=None,
                     scheduling=scheduling)

    def _revert_resize(self, uuid: str) -> None:
        record = self._load(uuid)
        if record is None or record.status != REVERT_RESIZE:
            return
        migration = self._resize_migration(record)
        resize = record.scheduling.get("resize") or {}
        if migration is None or record.host is None:
            self._update(uuid, expect_status=(REVERT_RESIZE,), status=ACTIVE,
                         task_state=None)
            return
        try:
            self.agents.destroy(record.host, uuid)
        except AgentUnreachable as exc:
            LOG.warning("server %s: could not destroy the new guest on %s: %s", uuid,
                        record.host, exc)
        self.scheduler.release(uuid)
        self.placement.move_allocations(migration.uuid, uuid, record.project_id,
                                        record.user_id)
        self._set_migration(migration.uuid, status="reverted")
        old_flavor = (flavor_from_json(resize["old_flavor"]) if resize.get("old_flavor")
                      else record.flavor)
        scheduling = dict(record.scheduling)
        scheduling.pop("resize", None)
        self._update(uuid, expect_status=(REVERT_RESIZE,), status=ACTIVE, task_state=None,
                     host=migration.source_host, node=resize.get("old_node"),
                     flavor_id=resize.get("old_flavor_id", record.flavor_id),
                     flavor=old_flavor, scheduling=scheduling)

    def _resize_migration(self, record: ServerRecord) -> MigrationRecord | None:
        with self.database.reader() as conn:
            return store.in_flight_migration(conn, record.uuid)

    # -- evacuate --------------------------------------------------------------------
    def _evacuate(self, uuid: str, host: str | None) -> None:
        record = self._load(uuid)
        if record is None or record.status != REBUILD or record.host is None:
            return
        source = record.host
        migration = self._new_migration(record, EVACUATION)
        self.placement.move_allocations(uuid, migration.uuid, record.project_id,
                                        record.user_id)
        spec = request_spec(record, ignore_hosts=(source,), requested_host=host)
        try:
            selection = self.scheduler.select_destinations(spec)
        except NoValidHost as exc:
            self._undo_move(record, migration,
                            scheduling_record(spec, "evacuate", error=exc.reason))
            return
        outcome = self._spawn_somewhere(record, spec,
                                        [selection.destination, *selection.alternates],
                                        expect_status=(REBUILD,))
        if outcome.placed is None:
            self._undo_move(record, migration, {
                **scheduling_record(spec, "evacuate", selection),
                "error": outcome.fault["message"] if outcome.fault else "interrupted",
                "attempts": outcome.attempts})
            return
        destination = outcome.placed
        # "done": the source still holds the guest; its agent destroys it, and the API
        # frees the migration's allocations, when the host registers again.
        self._set_migration(migration.uuid, status="done", dest_host=destination.host)
        scheduling = scheduling_record(spec, "evacuate", selection)
        scheduling["attempts"] = outcome.attempts
        self._update(uuid, expect_status=(REBUILD,), status=ACTIVE, task_state=None,
                     host=destination.host, node=destination.node, scheduling=scheduling)


class _Outcome:
    """How a series of spawn attempts ended."""

    def __init__(self, attempts: list[dict[str, Any]], placed: Destination | None = None,
                 fault: dict[str, Any] | None = None, interrupted: bool = False) -> None:
        self.attempts = attempts
        self.placed = placed
        self.fault = fault
        self.interrupted = interrupted


__all__ = ["Conductor"]
