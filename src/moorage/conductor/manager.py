"""The conductor: background workers that carry out what the compute API accepted.

The API validates a request, records the server's new state (BUILD, REBUILD,
RESIZE, deleting...) together with an *operation* (``moorage.lifecycle.operations``)
and returns 202; a conductor then does the slow part on a worker thread, with the
task of the operation's kind (``tasks/``, ``TASKS``): it asks the scheduler for a
destination, spawns through the host's compute agent, and on a late failure
(UnsupportedHardware and the like) releases the claim and tries the next alternate,
as upstream's conductor does with its host list.

Where the work comes from. A conductor inside an API process is handed the
operations that process accepted (``dispatch``), already claimed in the accepting
transaction. Every conductor also polls the operations table every
``[conductor] poll_interval`` for work nobody holds: operations accepted by an API
process without a conductor, a server's next operation waiting for the one before,
and operations whose owner stopped renewing its lease (a takeover). So any number of
API processes and ``moorage conductor serve`` processes share one database.

Leases. Each conductor renews the leases of everything it holds every third of
``[conductor] lease_seconds``; it stops renewing only when it dies, and then its work
is taken over by whichever conductor polls first after the lease ran out (at most
``[conductor] max_takeovers`` times: then the server ends in ERROR). A stopping
conductor finishes what it is doing and gives back what it has not started. A
conductor that was only paused finds its operations gone when it resumes and stops
without touching them (``tasks/base.py``, ``leases.py``).
"""

from __future__ import annotations

import functools
import logging
import os
import secrets
import socket
import threading
import time
import traceback
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress

from oslo_config import cfg

from moorage import metrics, request_context
from moorage.compute.client import AgentClient
from moorage.conductor.leases import Leases
from moorage.conductor.tasks.base import Clients, Job, OperationLost, Task
from moorage.conductor.tasks.build import BuildTask
from moorage.conductor.tasks.delete import DeleteTask
from moorage.conductor.tasks.evacuation_end import CompleteEvacuationTask
from moorage.conductor.tasks.move import MoveTask
from moorage.conductor.tasks.power import PowerTask
from moorage.conductor.tasks.rebuild import RebuildTask
from moorage.conductor.tasks.resize_end import ConfirmResizeTask, RevertResizeTask
from moorage.db.clock import utcnow_precise
from moorage.db.database import Database
from moorage.lifecycle import actions, history, operations
from moorage.lifecycle.group_commit import GroupCommit
from moorage.lifecycle.operations import Operation
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.states import OperationKind
from moorage.metrics import BootOutcome
from moorage.placement.client import PlacementClient
from moorage.scheduler.manager import Scheduler
from moorage.scheduler.types import Catalog

LOG = logging.getLogger(__name__)

# The one map from an operation kind to the task that carries it out.
TASKS: Mapping[OperationKind, type[Task]] = {
    kind: task for task in (BuildTask, DeleteTask, RebuildTask, MoveTask,
                            ConfirmResizeTask, RevertResizeTask, CompleteEvacuationTask,
                            PowerTask)
    for kind in task.kinds}
assert set(TASKS) == set(OperationKind), "every operation kind has its task"


def conductor_identity() -> str:
    """A name for this conductor that no other, and no earlier incarnation, shares."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Conductor:
    """Runs server operations on a bounded pool of worker threads."""

    def __init__(self, conf: cfg.ConfigOpts, database: Database, scheduler: Scheduler,
                 placement: PlacementClient, agents: AgentClient, catalog: Catalog, *,
                 identity: str | None = None) -> None:
        self.conf = conf
        self.database = database
        self.scheduler = scheduler
        self.identity = identity or conductor_identity()
        options = conf.conductor
        self.workers: int = options.workers
        self.lease_seconds: float = options.lease_seconds
        self.poll_interval: float = options.poll_interval
        self.max_takeovers: int = options.max_takeovers
        self.leases = Leases(self.lease_seconds)
        self.clients = Clients(conf, database, scheduler, placement, agents, catalog,
                               self.leases)
        self._committer: GroupCommit | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._locks: dict[str, _ServerLock] = {}
        self._guard = threading.Lock()
        self._pending: dict[int, Future[None]] = {}  # operation id -> its run
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._housekeeper: threading.Thread | None = None

    @property
    def committer(self) -> GroupCommit | None:
        """This conductor's group committer while it runs: the API process it lives in
        writes its new servers with it too, so that they share commits."""
        return self._committer

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> Conductor:
        if self._executor is None:
            self._stopping.clear()
            self._committer = self.clients.committer = GroupCommit(
                self.database, name=f"conductor-commit-{self.identity}")
            self._executor = ThreadPoolExecutor(max_workers=self.workers,
                                                thread_name_prefix="conductor")
            self._housekeeper = threading.Thread(target=self._housekeeping, daemon=True,
                                                 name=f"conductor-leases-{self.identity}")
            self._housekeeper.start()
            LOG.info("conductor %s started: %d workers, leases of %gs", self.identity,
                     self.workers, self.lease_seconds)
        return self

    def stop(self) -> None:
        """Finish the operations under way, give back those not started."""
        self._stopping.set()
        self._wake.set()
        if self._housekeeper is not None:
            self._housekeeper.join(timeout=10)
            self._housekeeper = None
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        committer, self._committer = self._committer, None
        self.clients.committer = None
        if committer is not None:
            committer.stop()
        try:
            with self.database.writer() as writer:
                released = operations.release_all(writer.conn, self.identity)
        except Exception as exc:  # the database may be gone first at shutdown
            LOG.warning("conductor %s could not give back its operations: %s",
                        self.identity, exc)
        else:
            if released:
                LOG.info("conductor %s gave back %d operations it had not started",
                         self.identity, released)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every operation this conductor holds has finished; False on
        timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._guard:
                pending = list(self._pending.values())
            if not pending:
                return True
            for future in pending:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    future.result(timeout=left)
                except TimeoutError:
                    return False
                except Exception:
                    pass

    # -- where work comes from ---------------------------------------------------------
    def dispatch(self, operation: Operation, record: ServerRecord | None = None) -> None:
        """Run an operation the API just accepted: at once if it was claimed for this
        conductor, otherwise (waiting for an older one of its server) at its turn.
        ``record``: the server as the accepting transaction left it (saves a read)."""
        if operation.owner == self.identity:
            if operation.lease_until is not None:
                self.leases.granted_until(operation.id, operation.lease_until,
                                          utcnow_precise())
            self._submit(operation, record)
        else:
            self._wake.set()

    def _submit(self, operation: Operation, record: ServerRecord | None = None) -> None:
        if self._executor is None:
            self.start()
        assert self._executor is not None
        with self._guard:
            if operation.id in self._pending:
                return
            future = self._executor.submit(self.carry_out, operation, record)
            self._pending[operation.id] = future
        future.add_done_callback(functools.partial(self._forget, operation.id))

    def _forget(self, operation_id: int, _future: Future[None]) -> None:
        with self._guard:
            self._pending.pop(operation_id, None)

    def _housekeeping(self) -> None:
        """Renew leases every third of a lease; poll for unowned or abandoned work."""
        renewed = time.monotonic()
        while not self._stopping.is_set():
            try:
                if time.monotonic() - renewed >= self.lease_seconds / 3:
                    since = time.monotonic()
                    with self.database.writer() as writer:
                        held = operations.renew(writer.conn, self.identity,
                                                self.lease_seconds)
                    self.leases.granted(held, since)
                    renewed = since
                found = self.poll()
            except Exception:
                LOG.exception("conductor %s: housekeeping failed; trying again", self.identity)
                found = 0
            if not found:
                self._wake.wait(min(self.poll_interval, self.lease_seconds / 3))
                self._wake.clear()

    def poll(self, server_uuid: str | None = None) -> int:
        """Claim what nobody holds, up to what the workers can take; how many."""
        with self._guard:
            room = 2 * self.workers - len(self._pending)
            busy = set(self._pending)
        if room <= 0 or self._stopping.is_set():
            return 0
        with self.database.reader() as conn:
            found = [op for op in operations.claimable(conn, room, server_uuid=server_uuid)
                     if op.id not in busy]
        claimed = 0
        for candidate in found:
            with self.database.writer() as writer:
                operation = operations.claim(writer.conn, candidate, self.identity,
                                             self.lease_seconds)
            if operation is None:
                continue
            if operation.lease_until is not None:
                self.leases.granted_until(operation.id, operation.lease_until,
                                          utcnow_precise())
            if operation.taken_from is not None:
                LOG.warning("conductor %s takes over %s of server %s from %s, whose lease "
                            "ran out", self.identity, operation.kind, operation.server_uuid,
                            operation.taken_from)
            self._submit(operation)
            claimed += 1
        return claimed

    # -- running -------------------------------------------------------------------------
    def carry_out(self, operation: Operation, record: ServerRecord | None = None) -> None:
        """Carry out one operation this conductor holds, on the calling thread (a
        worker's; a test's)."""
        job = Job(operation, self.identity, record=record)
        task = TASKS[operation.kind](self.clients, job)
        # The work logs, and calls placement and the agents, as the request that recorded it.
        context = request_context.new_context(request_id=operation.request_id,
                                              global_request_id=operation.global_request_id)
        with request_context.active(context), self._server_lock(operation.server_uuid):
            try:
                self._run_task(task)
            except OperationLost as exc:
                # A successor holds it now: whatever this conductor would still do
                # could undo the successor's work. Nothing more is touched.
                LOG.warning("conductor %s: %s; stopping", self.identity, exc)
                self.leases.forget(operation.id)
                return
            if not job.finished:
                with self.database.writer() as writer:
                    operations.finish(writer.conn, operation.id, self.identity)
                    job.next_waiting = operations.waiting(writer.conn, operation.server_uuid)
        self.leases.forget(operation.id)
        # The server's next operation (a delete accepted during a build) waited for
        # this one: take it now rather than at the next poll (a conductor that runs
        # workers; one used on a caller's thread only carries out what it is given).
        if job.next_waiting and self._executor is not None and not self._stopping.is_set():
            try:
                self.poll(operation.server_uuid)
            except Exception:
                LOG.exception("could not claim the next operation of server %s",
                              operation.server_uuid)

    def _run_task(self, task: Task) -> None:
        """Run the task; a server must never stay mid-task: an unexpected failure ends
        it in ERROR, and so does an operation taken over more than
        ``[conductor] max_takeovers`` times (it keeps killing its conductors)."""
        operation = task.operation
        first = actions.FIRST_STEP.get(operation.kind)
        if operation.taken_from is not None:
            task.events.interrupted(f"interrupted: conductor {operation.taken_from} "
                                    "stopped during this step")
        if operation.takeovers > self.max_takeovers:
            LOG.error("conductor %s: %s of server %s was taken over %d times; ending it "
                      "in ERROR", self.identity, operation.kind, operation.server_uuid,
                      operation.takeovers)
            if operation.kind == OperationKind.BUILD:
                metrics.boot_ended(BootOutcome.ERROR)
            fault = history.abandoned(operation.kind, operation.takeovers)
            if first is not None:
                task.events.fail_open(first, fault.message)
            task.abandon(fault)
            return
        try:
            task.run()
        except OperationLost:
            raise
        except Exception as exc:
            LOG.exception("%s of server %s failed", operation.kind, operation.server_uuid)
            if operation.kind == OperationKind.BUILD:
                metrics.boot_ended(BootOutcome.ERROR)
            fault = history.internal_error(operation.kind, exc)
            try:
                if first is not None:
                    task.events.fail_open(first, fault.message, traceback.format_exc())
                task.abandon(fault)
            except OperationLost:
                raise
            except Exception:
                LOG.exception("could not record the failure of %s of server %s; giving "
                              "it back to be claimed again", operation.kind,
                              operation.server_uuid)
                with suppress(Exception), self.database.writer() as writer:
                    operations.release(writer.conn, operation.id, self.identity)
                raise OperationLost("its failure could not be recorded") from None

    @contextmanager
    def _server_lock(self, uuid: str) -> Iterator[None]:
        with self._guard:
            entry = self._locks.setdefault(uuid, _ServerLock())
            entry.users += 1
        try:
            with entry.lock:
                yield
        finally:
            with self._guard:
                entry.users -= 1
                if not entry.users:
                    del self._locks[uuid]


class _ServerLock:
    """One server's lock and how many workers hold or wait for it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0


__all__ = ["Conductor", "conductor_identity"]
