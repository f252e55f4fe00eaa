"""What every conductor task stands on: the job it carries out, the clients it calls,
and the steps the tasks share.

Two rules hold for every step here:

- The job's server changes only through the transitions of its operation's rule in
  ``lifecycle.machine`` (``Task.apply``), each a fenced compare-and-set. A transition
  that finds the fence lost raises ``OperationLost``: a successor owns the operation
  now, and this conductor stops without touching anything more.
- A side effect that destroys or takes (a guest destroyed, a claim released or made,
  a cleanup left for a host, a spawn) first checks that the operation is still this
  conductor's (``ensure_owned``), at that moment: a conductor that was paused past
  its lease finds out there, before it undoes its successor's work.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from oslo_config import cfg
from sqlalchemy.engine import Connection

from moorage.compute.client import AgentClient, AgentUnreachable, Fenced
from moorage.compute.client import Fence as AgentFence
from moorage.conductor.leases import Leases
from moorage.db.database import Database
from moorage.lifecycle import actions, machine, operations, server_groups, store
from moorage.lifecycle.group_commit import GroupCommit
from moorage.lifecycle.history import Fault
from moorage.lifecycle.operations import Operation
from moorage.lifecycle.records import MigrationRecord, ServerRecord
from moorage.lifecycle.states import OperationKind
from moorage.lifecycle.store import NO_CHANGES, Applied, Fence, ServerChanges
from moorage.placement.client import PlacementClient, PlacementError
from moorage.scheduler.manager import Scheduler
from moorage.scheduler.server_groups import GroupPlacement
from moorage.scheduler.types import Catalog
from moorage.virt.driver import Guest

LOG = logging.getLogger(__name__)

R = TypeVar("R")
# A consumer whose generation moves between each read and write, while this conductor
# owns its operation, is changing under someone else's hands: give up after this many.
RELEASE_TRIES = 5


class OperationLost(Exception):
    """The operation is no longer this conductor's: another took it over after its
    lease ran out. Whoever catches this touches nothing of the server."""


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

    @property
    def agent_fence(self) -> AgentFence:
        """The fence the agents check this job's calls against: a successor's (one more
        takeover) orders after it."""
        return AgentFence(self.operation.id, self.operation.takeovers)


@dataclass
class Clients:
    """What the tasks call: the configuration, the database, the scheduler, placement,
    the compute agents and the compute API's view of the hosts."""

    conf: cfg.ConfigOpts
    database: Database
    scheduler: Scheduler
    placement: PlacementClient
    agents: AgentClient
    catalog: Catalog
    leases: Leases
    # When set, the servers' transitions are committed together (group_commit.py).
    committer: GroupCommit | None = None

    def write(self, change: Callable[[Connection], R]) -> R:
        """Run ``change`` in a committed transaction: the group committer's, if any."""
        if self.committer is not None:
            return self.committer.write(change)
        with self.database.writer() as writer:
            return change(writer.conn)

    def write_later(self, change: Callable[[Connection], object]) -> None:
        """Queue ``change`` before whatever is written next (with a group committer),
        or write it now (without)."""
        if self.committer is not None:
            self.committer.write_later(change)
        else:
            with self.database.writer() as writer:
                change(writer.conn)


class Task:
    """One operation carried out: a subclass per operation (``kinds``), reading the
    server as it is now, so the same code serves a fresh operation and one taken over
    from a conductor that died (``operation.taken_from``)."""

    kinds: ClassVar[tuple[OperationKind, ...]] = ()

    def __init__(self, clients: Clients, job: Job) -> None:
        self.clients = clients
        self.job = job
        self.rule = machine.OPERATIONS[job.operation.kind]
        operation = job.operation
        # The steps of the action the request recorded, written with the job's
        # transitions (nothing when no action was recorded: the end of an evacuation).
        self.events = actions.EventRecorder(
            clients.write_later, operation.server_uuid,
            operation.request_id if actions.ACTIONS[operation.kind] else None,
            clients.conf.host)

    def run(self) -> None:
        raise NotImplementedError

    def abandon(self, fault: Fault) -> None:
        """End the operation in ERROR with ``fault``: it broke, or kept killing its
        conductors. An operation that moves no server (the end of an evacuation) just
        ends; its source's next heartbeat records it again."""
        if self.rule.failed is not None:
            self.apply(self.rule.failed.name, ServerChanges(fault=fault))

    # -- shorthands ------------------------------------------------------------------
    @property
    def uuid(self) -> str:
        return self.job.uuid

    @property
    def operation(self) -> Operation:
        return self.job.operation

    @property
    def scheduler(self) -> Scheduler:
        return self.clients.scheduler

    @property
    def conf(self) -> cfg.ConfigOpts:
        return self.clients.conf

    def load(self) -> ServerRecord | None:
        with self.clients.database.reader() as conn:
            return store.load_server(conn, self.uuid)

    def server_group(self, record: ServerRecord) -> GroupPlacement | None:
        """The server's group as a scheduling reads it (one statement), when its
        create named one (``os:scheduler_hints`` group); None for every other server,
        at no cost."""
        if server_groups.hinted(record) is None:
            return None
        with self.clients.database.reader() as conn:
            return server_groups.placement_of(conn, record)

    def in_flight_migration(self) -> MigrationRecord | None:
        with self.clients.database.reader() as conn:
            return store.in_flight_migration(conn, self.uuid)

    # -- transitions -----------------------------------------------------------------
    def _step(self, name: str) -> machine.Transition:
        """A transition of this operation's rule; a task drives only its own."""
        if name not in self.rule.applies:
            raise store.IllegalTransition(
                f"{self.operation.kind} does not apply {name}; it applies "
                f"{', '.join(sorted(self.rule.applies))}")
        return machine.transition(name)

    def apply(self, name: str, changes: ServerChanges = NO_CHANGES, *,
              progress: Mapping[str, object] | None = None,
              also: Callable[[Connection], object] | None = None) -> bool:
        """Apply transition ``name`` to the job's server, fenced on its operation
        (``progress``: what a successor must know, recorded with it; ``also``: what
        else to write in the same transaction if it applied); True when it applied,
        False when the server was no longer where it starts (a delete came first). A
        transition that ends the operation ends it in the same transaction."""
        step = self._step(name)
        uuid, fence = self.uuid, self.job.fence

        def change(conn: Connection) -> Applied:
            outcome = store.apply(conn, step, uuid, changes, fence=fence)
            if outcome is Applied.APPLIED and progress is not None and not step.ends:
                operations.set_progress(conn, fence.operation_id, fence.owner, progress)
            if outcome is Applied.APPLIED and also is not None:
                also(conn)
            return outcome

        outcome = self.clients.write(change)
        if outcome is Applied.LOST:
            raise OperationLost(f"{self.operation.kind} of server {uuid}: {name} refused, "
                                "the operation was taken over")
        if outcome is Applied.APPLIED and step.ends:
            # Only a delete is accepted while an operation runs, and it changes the
            # task state: a transition that still applied leaves nobody waiting.
            self.job.finished, self.job.next_waiting = True, False
        return outcome is Applied.APPLIED

    def apply_later(self, name: str, changes: ServerChanges = NO_CHANGES) -> None:
        """Apply transition ``name`` without waiting for it: committed before whatever
        the job writes next. Its outcome shows in the next transition's."""
        step = self._step(name)
        uuid, fence = self.uuid, self.job.fence
        self.clients.write_later(
            lambda conn: store.apply(conn, step, uuid, changes, fence=fence))

    def migration(self, name: str, migration_uuid: str, dest_host: str | None = None
                  ) -> bool:
        """Move a migration of the job's server by transition ``name``, fenced."""
        step = machine.migration_transition(name)
        fence = self.job.fence
        with self.clients.database.writer() as writer:
            outcome = store.apply_migration(writer.conn, step, migration_uuid, fence=fence,
                                            dest_host=dest_host)
        if outcome is Applied.LOST:
            raise OperationLost(f"migration {migration_uuid}: {name} refused, the "
                                "operation was taken over")
        return outcome is Applied.APPLIED

    def new_migration(self, record: MigrationRecord) -> MigrationRecord:
        """Record a move that starts, fenced."""
        with self.clients.database.writer() as writer:
            found = store.insert_migration(writer.conn, record, fence=self.job.fence)
        if found is None:
            raise OperationLost(f"{self.operation.kind} of server {self.uuid}: its "
                                "migration was not recorded, the operation was taken over")
        return found

    # -- ownership -------------------------------------------------------------------
    def ensure_owned(self) -> None:
        """Raise OperationLost unless the operation is still this conductor's now.
        Free while the lease is surely held; a statement when in doubt."""
        leases, operation = self.clients.leases, self.operation
        if leases.held(operation.id):
            return
        since = time.monotonic()
        with self.clients.database.writer() as writer:
            renewed = operations.renew_one(writer.conn, operation.id, self.job.owner,
                                           leases.lease_seconds)
        if not renewed:
            raise OperationLost(f"{operation.kind} of server {self.uuid} was taken over "
                                "while this conductor was away")
        leases.granted((operation.id,), since)

    # -- side effects, each only while the operation is owned --------------------------
    def release(self, consumer_uuid: str) -> None:
        """Give back everything ``consumer_uuid`` holds in placement: at the generation
        read before the ownership check, so a successor's claim made after that check
        is never the one given back (the write fails on the generation instead)."""
        placement = self.clients.placement
        for _ in range(RELEASE_TRIES):
            holding = placement.holding(consumer_uuid)
            if holding is None:
                return
            if placement.clear_at(consumer_uuid, holding, confirm=self.ensure_owned):
                return
        raise RuntimeError(f"the allocations of {consumer_uuid} kept changing while "
                           f"{self.operation.kind} of server {self.uuid} released them")

    def move_allocations(self, source: str, target: str, project_id: str,
                         user_id: str) -> None:
        """Hand what ``source`` holds to ``target`` (the swap of a move, and its undoing),
        at the generations read before the ownership check; read again while they
        move under it (the next check finds out whether a successor moved them)."""
        placement = self.clients.placement
        for _ in range(RELEASE_TRIES):
            if placement.move_allocations(source, target, project_id, user_id,
                                          confirm=self.ensure_owned):
                return
        raise RuntimeError(f"the allocations of {source} kept changing while "
                           f"{self.operation.kind} of server {self.uuid} moved them")

    def seal(self, consumer_uuid: str) -> None:
        """Move ``consumer_uuid``'s generation on without changing what it holds, so a
        write a paused predecessor prepared at the generation it read (a swap it was
        about to make) fails on it instead of undoing this conductor's work."""
        placement = self.clients.placement
        for _ in range(RELEASE_TRIES):
            holding = placement.holding(consumer_uuid)
            if holding is None:
                return  # nothing to take: a predecessor's swap would move nothing
            written = placement.rewrite_at(consumer_uuid, holding, confirm=self.ensure_owned)
            if written is False:
                LOG.warning("server %s: placement refused %s's own allocations again "
                            "(an inventory shrank below them); a paused predecessor's "
                            "prepared write is not fenced off", self.uuid, consumer_uuid)
            if written is not None:
                return
        raise RuntimeError(f"the allocations of {consumer_uuid} kept changing while "
                           f"{self.operation.kind} of server {self.uuid} sealed them")

    def cleanup(self, host: str, why: str) -> None:
        """Ask ``host``'s agent to destroy the job's guest at its next heartbeat."""
        fence = self.job.fence
        with self.clients.database.writer() as writer:
            if not operations.owned(writer.conn, fence.operation_id, fence.owner, hold=True):
                raise OperationLost(f"{self.operation.kind} of server {self.uuid} was taken "
                                    "over: no cleanup left")
            store.add_cleanup(writer.conn, host, self.uuid, why)

    def destroy(self, host: str, why: str) -> None:
        """Destroy the job's guest on ``host`` now, or, the host down or unreachable,
        at its next heartbeat."""
        self.ensure_owned()
        if not self.host_up(host):
            LOG.info("server %s: host %s is down; its agent destroys the guest when it "
                     "is back", self.uuid, host)
            self.cleanup(host, why)
            return
        try:
            with self._fenced(host):
                self.clients.agents.destroy(host, self.uuid, self.job.agent_fence)
        except AgentUnreachable as exc:
            LOG.warning("server %s: could not destroy on %s (%s); its agent is told at "
                        "its next heartbeat", self.uuid, host, exc)
            self.cleanup(host, why)

    def spawn(self, host: str, guest: Guest) -> None:
        """Boot the job's guest on ``host`` (SpawnFailed, AgentUnreachable as the agent
        says); the agent refuses it if a successor has been at this guest since."""
        self.ensure_owned()
        with self._fenced(host):
            self.clients.agents.spawn(host, guest, self.job.agent_fence)

    @contextmanager
    def _fenced(self, host: str) -> Iterator[None]:
        """An agent's refusal of a call for its fence is the operation lost."""
        try:
            yield
        except Fenced as exc:
            raise OperationLost(f"{self.operation.kind} of server {self.uuid}: {exc}"
                                ) from None

    # -- what the hosts and placement hold ----------------------------------------------
    def host_up(self, host: str) -> bool:
        info = self.clients.catalog.hosts().get(host)
        return info is not None and info.up

    def guest_on(self, host: str) -> bool | None:
        """Does ``host`` run the job's guest? None when its agent cannot say."""
        if not self.host_up(host):
            return None
        try:
            with self._fenced(host):
                return self.clients.agents.has_guest(host, self.uuid, self.job.agent_fence)
        except AgentUnreachable as exc:
            LOG.warning("server %s: cannot ask %s about its guest: %s", self.uuid, host, exc)
            return None

    def allocations(self, consumer: str) -> dict[str, dict[str, int]]:
        try:
            found, _generation = self.clients.placement.allocations(consumer)
        except PlacementError as exc:
            LOG.warning("could not read the allocations of %s: %s", consumer, exc)
            return {}
        return found

    def claimed(self, held: Mapping[str, Mapping[str, int]]
                ) -> tuple[str | None, str | None]:
        """(host, node) of the providers a claim is on, when a compute node owns them."""
        catalog = self.clients.catalog
        catalog.hosts()
        for provider in held:
            found = catalog.node_of_provider(provider)
            if found is not None:
                return found
        return None, None
