"""The server lifecycle as data: every change of a server's status, task state and
host, and of a migration's status, is one of the named transitions below.

Why a table. The compute API accepts a request by moving the server into the task
state of an operation (``resize.accepted``: ACTIVE with no task -> RESIZE /
resize_prep); a conductor then carries the operation out through its own
transitions until one of them ends it (``resize.finished``: -> VERIFY_RESIZE). Each
transition says where it may start (the statuses and task states it needs), where
it leads and which other fields it may set, so that

- ``store.apply`` writes a transition as one compare-and-set on those states (and,
  for a conductor, on still owning its operation) and refuses any field the
  transition does not declare: there is no other writer of a server's status, task
  state or host, nor of a migration's status;
- the API's preconditions are read here (as nova's ``check_instance_state`` declares
  them per action), so a 409 names the transition and the state it needs;
- clients and ``moorage run`` take "at rest" and "in progress" from here;
- docs/architecture.md shows the diagram ``mermaid()`` draws from this table, and a
  test walks every transition, legal and illegal.

Nothing here touches the database: ``store.py`` applies what this module declares.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from moorage.lifecycle.states import (
    VM_STATES,
    MigrationStatus,
    OperationKind,
    ServerStatus,
    TaskState,
)


class Actor(StrEnum):
    """Who applies a transition."""

    # The compute API, recording what a user asked for (no operation to fence on).
    API = "api"
    # A conductor, carrying out an operation it owns (fenced on that ownership).
    CONDUCTOR = "conductor"


class Field(StrEnum):
    """The fields of a server a transition may set besides its status and task state."""

    HOST = "host"
    NODE = "node"
    ATTEMPTS = "attempts"
    SCHEDULING = "scheduling"
    FAULT = "fault"
    LAUNCHED_AT = "launched_at"
    DELETED_AT = "deleted_at"
    IMAGE_ID = "image_id"
    IMAGE = "image"
    FLAVOR_ID = "flavor_id"
    FLAVOR = "flavor"


S, T, F = ServerStatus, TaskState, Field
_ALL_TASKS: frozenset[TaskState | None] = frozenset({None, *TaskState})
_LIVE: frozenset[ServerStatus] = frozenset(s for s in ServerStatus if s != S.DELETED)


@dataclass(frozen=True)
class Transition:
    """One named move of a server: from any of ``statuses`` with any of ``tasks``, to
    ``status`` (None: the status stays) with ``task``, setting only ``fields``.
    ``ends``: the conductor's operation is over once it applies. ``statuses`` empty:
    the server is created by it."""

    name: str
    actor: Actor
    statuses: frozenset[ServerStatus]
    tasks: frozenset[TaskState | None]
    status: ServerStatus | None
    task: TaskState | None
    fields: frozenset[Field] = frozenset()
    ends: bool = False
    doc: str = ""

    @property
    def creates(self) -> bool:
        return not self.statuses

    def allows(self, status: ServerStatus, task: TaskState | None) -> bool:
        """May this transition start from ``status`` with ``task``?"""
        return status in self.statuses and task in self.tasks

    def target(self, status: ServerStatus) -> ServerStatus:
        """The status a server in ``status`` has after this transition."""
        return self.status if self.status is not None else status

    def needs(self) -> str:
        """The state it starts from, in words: "status ACTIVE or ERROR and no task
        state"."""
        return _in_words(self.statuses, self.tasks)


def _in_words(statuses: frozenset[ServerStatus], tasks: frozenset[TaskState | None]) -> str:
    """States in words, as a 409 names them: "status ACTIVE or ERROR and no task
    state"."""
    named = ("any status but DELETED" if statuses == _LIVE else
             "status " + " or ".join(sorted(statuses)))
    if tasks == _ALL_TASKS:
        return named
    if tasks == {None}:
        return f"{named} and no task state"
    if None not in tasks and len(tasks) == 1:
        return f"{named} and task state {next(iter(tasks))}"
    missing = _ALL_TASKS - tasks
    if len(missing) == 1:
        return f"{named} and any task state but {next(iter(missing))}"
    listed = sorted(str(t) if t is not None else "none" for t in tasks)
    return f"{named} and task state {' or '.join(listed)}"


@dataclass(frozen=True)
class Precondition:
    """Where a server may be for a change that is no transition (nova's
    ``check_instance_state`` on the routes that write what the owner said of a server:
    its metadata, its tags). No state moves, so the table has no arrow for it; the
    compare-and-set that writes the change (``store.describe``) holds the server to
    these states at the moment it writes."""

    name: str
    statuses: frozenset[ServerStatus]
    tasks: frozenset[TaskState | None]
    doc: str = ""

    def allows(self, status: ServerStatus, task: TaskState | None) -> bool:
        return status in self.statuses and task in self.tasks

    def needs(self) -> str:
        return _in_words(self.statuses, self.tasks)


@dataclass(frozen=True)
class MigrationTransition:
    """One named move of a migration's status, applied by the conductor that owns the
    operation moving the server; ``dest_host``: it may record the destination."""

    name: str
    statuses: frozenset[MigrationStatus]
    status: MigrationStatus
    dest_host: bool = False
    doc: str = ""

    def allows(self, status: MigrationStatus) -> bool:
        return status in self.statuses


def _t(name: str, actor: Actor, statuses: Iterable[ServerStatus],
       tasks: Iterable[TaskState | None], status: ServerStatus | None,
       task: TaskState | None, fields: Iterable[Field] = (), *, ends: bool = False,
       doc: str = "") -> Transition:
    return Transition(name, actor, frozenset(statuses), frozenset(tasks), status, task,
                      frozenset(fields), ends, doc)


API, CONDUCTOR = Actor.API, Actor.CONDUCTOR
_BUILDING = (T.SCHEDULING, T.SPAWNING)
_MOVING = (T.RESIZE_PREP, T.RESIZE_MIGRATING)
_EVACUATING = (T.REBUILDING, T.REBUILD_SPAWNING)
_PLACED = (F.HOST, F.NODE)
_SOFT_REBOOTING = (T.REBOOTING, T.REBOOT_STARTED)
_HARD_REBOOTING = (T.REBOOTING_HARD, T.REBOOT_STARTED_HARD)
# Where nova takes a hard reboot from: its vm_states active, stopped and error (and
# while a soft reboot runs, which it overrides: that one's next step finds the task
# state changed and stops).
_HARD_REBOOTABLE = (S.ACTIVE, S.SHUTOFF, S.ERROR, S.REBOOT)

TRANSITIONS: tuple[Transition, ...] = (
    # -- what the compute API accepts ---------------------------------------------------
    _t("build.accepted", API, (), (), S.BUILD, T.SCHEDULING,
       doc="POST /servers: a new server, to be scheduled"),
    _t("delete.accepted", API, _LIVE, _ALL_TASKS - {T.DELETING}, None, T.DELETING,
       doc="DELETE /servers/{id}: whatever runs notices and stops"),
    _t("rebuild.accepted", API, (S.ACTIVE, S.SHUTOFF, S.ERROR), (None,), S.REBUILD,
       T.REBUILDING, (F.FAULT,), doc="the rebuild action"),
    _t("resize.accepted", API, (S.ACTIVE, S.SHUTOFF), (None,), S.RESIZE, T.RESIZE_PREP,
       doc="the resize action"),
    _t("migrate.accepted", API, (S.ACTIVE, S.SHUTOFF), (None,), S.RESIZE, T.RESIZE_PREP,
       doc="the migrate action (a cold migration, carried out as a resize)"),
    _t("confirm_resize.accepted", API, (S.VERIFY_RESIZE,), (None,), None,
       T.RESIZE_CONFIRMING, doc="the confirmResize action"),
    _t("revert_resize.accepted", API, (S.VERIFY_RESIZE,), (None,), S.REVERT_RESIZE,
       T.RESIZE_REVERTING, doc="the revertResize action"),
    _t("evacuate.accepted", API, (S.ACTIVE, S.ERROR), (None,), S.REBUILD, T.REBUILDING,
       (F.FAULT,), doc="the evacuate action, from a host that is down"),
    _t("stop.accepted", API, (S.ACTIVE, S.ERROR), (None,), None, T.POWERING_OFF,
       doc="the os-stop action"),
    _t("start.accepted", API, (S.SHUTOFF,), (None,), None, T.POWERING_ON,
       doc="the os-start action"),
    _t("reboot.accepted", API, (S.ACTIVE,), (None,), S.REBOOT, T.REBOOTING,
       doc="the reboot action, SOFT"),
    _t("reboot_hard.accepted", API, _HARD_REBOOTABLE, (None, *_SOFT_REBOOTING),
       S.HARD_REBOOT, T.REBOOTING_HARD, doc="the reboot action, HARD"),
    _t("reset_state.active", API, _LIVE, _ALL_TASKS - {T.DELETING}, S.ACTIVE, None,
       doc="an admin's os-resetState to active: whatever ran is not waited for"),
    _t("reset_state.error", API, _LIVE, _ALL_TASKS - {T.DELETING}, S.ERROR, None,
       doc="an admin's os-resetState to error"),
    # -- build --------------------------------------------------------------------------
    _t("build.spawning", CONDUCTOR, (S.BUILD,), _BUILDING, None, T.SPAWNING,
       (*_PLACED, F.SCHEDULING), doc="a host claimed: spawning there"),
    _t("build.rescheduled", CONDUCTOR, (S.BUILD,), _BUILDING, None, T.SCHEDULING,
       (*_PLACED, F.ATTEMPTS),
       doc="taken over mid-spawn: the interrupted attempt undone, scheduling again"),
    _t("build.active", CONDUCTOR, (S.BUILD,), (T.SPAWNING,), S.ACTIVE, None,
       (*_PLACED, F.ATTEMPTS, F.LAUNCHED_AT), ends=True,
       doc="the guest runs (a delete that came first has changed the task state)"),
    _t("build.adopted", CONDUCTOR, (S.BUILD,), _BUILDING, S.ACTIVE, None,
       (*_PLACED, F.ATTEMPTS, F.LAUNCHED_AT), ends=True,
       doc="taken over: the guest was found running with its claim held"),
    _t("build.no_valid_host", CONDUCTOR, (S.BUILD,), (T.SCHEDULING,), S.ERROR, None,
       (F.FAULT, F.SCHEDULING), ends=True, doc="scheduling found no host"),
    _t("build.failed", CONDUCTOR, (S.BUILD,), _BUILDING, S.ERROR, None,
       (*_PLACED, F.ATTEMPTS, F.FAULT), ends=True,
       doc="every host tried refused (or the build broke, or kept killing conductors)"),
    # -- delete -------------------------------------------------------------------------
    _t("delete.done", CONDUCTOR, _LIVE, (T.DELETING,), S.DELETED, None, (F.DELETED_AT,),
       ends=True, doc="guests destroyed, claims released"),
    _t("delete.failed", CONDUCTOR, _LIVE, (T.DELETING,), S.ERROR, None, (F.FAULT,),
       ends=True, doc="the delete broke; deleting again tries once more"),
    # -- rebuild ------------------------------------------------------------------------
    _t("rebuild.active", CONDUCTOR, (S.REBUILD,), (T.REBUILDING,), S.ACTIVE, None,
       (F.IMAGE_ID, F.IMAGE, F.FAULT, F.SCHEDULING), ends=True,
       doc="rebuilt with the new image"),
    _t("rebuild.stopped", CONDUCTOR, (S.REBUILD,), (T.REBUILDING,), S.SHUTOFF, None,
       (F.IMAGE_ID, F.IMAGE, F.FAULT, F.SCHEDULING), ends=True,
       doc="a stopped server rebuilt with the new image, and stopped again (as nova)"),
    _t("rebuild.no_valid_host", CONDUCTOR, (S.REBUILD,), (T.REBUILDING,), S.ERROR, None,
       (F.FAULT, F.SCHEDULING), ends=True, doc="its host cannot take the new image"),
    _t("rebuild.failed", CONDUCTOR, (S.REBUILD,), (T.REBUILDING,), S.ERROR, None,
       (F.FAULT,), ends=True, doc="the host refused the new image, or the rebuild broke"),
    # -- cold migrate and resize ----------------------------------------------------------
    _t("resize.migrating", CONDUCTOR, (S.RESIZE,), _MOVING, None, T.RESIZE_MIGRATING,
       doc="a destination claimed: spawning there"),
    _t("resize.finished", CONDUCTOR, (S.RESIZE,), _MOVING, S.VERIFY_RESIZE, None,
       (*_PLACED, F.SCHEDULING, F.FLAVOR_ID, F.FLAVOR), ends=True,
       doc="running on the destination, to be confirmed or reverted"),
    _t("resize.rolled_back", CONDUCTOR, (S.RESIZE,), _MOVING, S.ACTIVE, None,
       (*_PLACED, F.SCHEDULING), ends=True,
       doc="no destination worked, or the move was interrupted: left where it was"),
    _t("resize.rolled_back_stopped", CONDUCTOR, (S.RESIZE,), _MOVING, S.SHUTOFF, None,
       (*_PLACED, F.SCHEDULING), ends=True,
       doc="a stopped server's move that found no destination: left where it was, stopped"),
    _t("resize.failed", CONDUCTOR, (S.RESIZE,), _MOVING, S.ERROR, None, (F.FAULT,),
       ends=True, doc="the move broke (or kept killing conductors)"),
    _t("confirm_resize.done", CONDUCTOR, (S.VERIFY_RESIZE,), (T.RESIZE_CONFIRMING,),
       S.ACTIVE, None, (F.SCHEDULING,), ends=True, doc="the source's guest and hold gone"),
    _t("confirm_resize.stopped", CONDUCTOR, (S.VERIFY_RESIZE,), (T.RESIZE_CONFIRMING,),
       S.SHUTOFF, None, (F.SCHEDULING,), ends=True,
       doc="a server resized while stopped: the source's guest gone, stopped still"),
    _t("confirm_resize.failed", CONDUCTOR, (S.VERIFY_RESIZE,), (T.RESIZE_CONFIRMING,),
       S.ERROR, None, (F.FAULT,), ends=True, doc="the confirm broke"),
    _t("revert_resize.done", CONDUCTOR, (S.REVERT_RESIZE,), (T.RESIZE_REVERTING,),
       S.ACTIVE, None, (*_PLACED, F.FLAVOR_ID, F.FLAVOR, F.SCHEDULING), ends=True,
       doc="back on the source with the old flavor"),
    _t("revert_resize.stopped", CONDUCTOR, (S.REVERT_RESIZE,), (T.RESIZE_REVERTING,),
       S.SHUTOFF, None, (*_PLACED, F.FLAVOR_ID, F.FLAVOR, F.SCHEDULING), ends=True,
       doc="a server resized while stopped, back on the source, stopped still"),
    _t("revert_resize.failed", CONDUCTOR, (S.REVERT_RESIZE,), (T.RESIZE_REVERTING,),
       S.ERROR, None, (F.FAULT,), ends=True, doc="the revert broke"),
    # -- evacuate -------------------------------------------------------------------------
    _t("evacuate.spawning", CONDUCTOR, (S.REBUILD,), _EVACUATING, None,
       T.REBUILD_SPAWNING, doc="a destination claimed: spawning there"),
    _t("evacuate.done", CONDUCTOR, (S.REBUILD,), _EVACUATING, S.ACTIVE, None,
       (*_PLACED, F.SCHEDULING), ends=True,
       doc="running on the destination; the source is cleaned up when it is back"),
    _t("evacuate.rolled_back", CONDUCTOR, (S.REBUILD,), _EVACUATING, S.ACTIVE, None,
       (*_PLACED, F.SCHEDULING), ends=True,
       doc="no destination worked, or the move was interrupted"),
    _t("evacuate.failed", CONDUCTOR, (S.REBUILD,), _EVACUATING, S.ERROR, None,
       (F.FAULT,), ends=True, doc="the evacuation broke (or kept killing conductors)"),
    # -- stop and start: a failure leaves the server as it was, with the fault (nova
    # reverts the task state) ----------------------------------------------------------
    _t("stop.done", CONDUCTOR, (S.ACTIVE, S.ERROR), (T.POWERING_OFF,), S.SHUTOFF, None,
       ends=True, doc="the guest is shut down (its domain kept)"),
    _t("stop.failed", CONDUCTOR, (S.ACTIVE, S.ERROR), (T.POWERING_OFF,), None, None,
       (F.FAULT,), ends=True, doc="the host could not stop the guest: it runs on"),
    _t("start.done", CONDUCTOR, (S.SHUTOFF,), (T.POWERING_ON,), S.ACTIVE, None,
       ends=True, doc="the guest runs again"),
    _t("start.failed", CONDUCTOR, (S.SHUTOFF,), (T.POWERING_ON,), None, None,
       (F.FAULT,), ends=True, doc="the host could not start the guest: it stays off"),
    # -- reboot: a failure is ERROR, as nova's ---------------------------------------------
    _t("reboot.started", CONDUCTOR, (S.REBOOT,), (T.REBOOTING,), None, T.REBOOT_STARTED,
       doc="the host was asked to reboot the guest"),
    _t("reboot.done", CONDUCTOR, (S.REBOOT,), _SOFT_REBOOTING, S.ACTIVE, None,
       ends=True, doc="the guest runs again"),
    _t("reboot.failed", CONDUCTOR, (S.REBOOT,), _SOFT_REBOOTING, S.ERROR, None,
       (F.FAULT,), ends=True, doc="the reboot broke"),
    _t("reboot_hard.started", CONDUCTOR, (S.HARD_REBOOT,), (T.REBOOTING_HARD,), None,
       T.REBOOT_STARTED_HARD, doc="the host was asked to power-cycle the guest"),
    _t("reboot_hard.done", CONDUCTOR, (S.HARD_REBOOT,), _HARD_REBOOTING, S.ACTIVE, None,
       ends=True, doc="the guest runs again"),
    _t("reboot_hard.failed", CONDUCTOR, (S.HARD_REBOOT,), _HARD_REBOOTING, S.ERROR, None,
       (F.FAULT,), ends=True, doc="the hard reboot broke"),
)

BY_NAME: Mapping[str, Transition] = {t.name: t for t in TRANSITIONS}


def transition(name: str) -> Transition:
    """The transition called ``name``; KeyError for a name the table lacks."""
    return BY_NAME[name]


# The one transition that creates a server.
[CREATED] = [t for t in TRANSITIONS if t.creates]


M = MigrationStatus
_MOVE_IN_FLIGHT = (M.MIGRATING, M.FINISHED)


def _m(name: str, statuses: Iterable[MigrationStatus], status: MigrationStatus, *,
       dest_host: bool = False, doc: str = "") -> MigrationTransition:
    return MigrationTransition(name, frozenset(statuses), status, dest_host, doc)


MIGRATION_TRANSITIONS: tuple[MigrationTransition, ...] = (
    _m("migration.finished", (M.MIGRATING,), M.FINISHED, dest_host=True,
       doc="the guest runs on the destination, the move to be confirmed or reverted"),
    _m("migration.evacuated", (M.MIGRATING,), M.DONE, dest_host=True,
       doc="evacuated; the source still holds its guest and claim until it is back"),
    _m("migration.failed", _MOVE_IN_FLIGHT, M.ERROR, doc="rolled back"),
    _m("migration.confirmed", (M.FINISHED,), M.CONFIRMED, doc="the source cleaned up"),
    _m("migration.reverted", (M.FINISHED,), M.REVERTED, doc="back on the source"),
    _m("migration.deleted", _MOVE_IN_FLIGHT, M.DELETED, doc="its server was deleted"),
    _m("migration.completed", (M.DONE,), M.COMPLETED,
       doc="the evacuation's source is back: its claim released, its guest destroyed"),
)

MIGRATION_BY_NAME: Mapping[str, MigrationTransition] = {
    t.name: t for t in MIGRATION_TRANSITIONS}


def migration_transition(name: str) -> MigrationTransition:
    return MIGRATION_BY_NAME[name]


# A new migration starts here (the conductor inserts it, fenced on its operation).
MIGRATION_START = MigrationStatus.MIGRATING


# -- the operations ---------------------------------------------------------------------
@dataclass(frozen=True)
class OperationRule:
    """What an operation kind is in the table: the transition that accepts it (None:
    not asked for by users), the task states its server is in while it runs, the
    transitions its conductor task may apply, and the one that ends it in ERROR."""

    kind: OperationKind
    accepted: Transition | None
    tasks: frozenset[TaskState]
    applies: frozenset[str]
    failed: Transition | None


def _rule(kind: OperationKind, accepted: str | None, tasks: Iterable[TaskState],
          applies: Iterable[str], failed: str | None) -> OperationRule:
    return OperationRule(kind, BY_NAME[accepted] if accepted else None, frozenset(tasks),
                         frozenset(applies), BY_NAME[failed] if failed else None)


_MOVE_STEPS = ("resize.migrating", "resize.finished", "resize.rolled_back",
               "resize.rolled_back_stopped", "resize.failed")
OPERATIONS: Mapping[OperationKind, OperationRule] = {rule.kind: rule for rule in (
    _rule(OperationKind.BUILD, "build.accepted", _BUILDING,
          ("build.spawning", "build.rescheduled", "build.active", "build.adopted",
           "build.no_valid_host", "build.failed"), "build.failed"),
    _rule(OperationKind.DELETE, "delete.accepted", (T.DELETING,),
          ("delete.done", "delete.failed"), "delete.failed"),
    _rule(OperationKind.REBUILD, "rebuild.accepted", (T.REBUILDING,),
          ("rebuild.active", "rebuild.stopped", "rebuild.no_valid_host", "rebuild.failed"),
          "rebuild.failed"),
    _rule(OperationKind.RESIZE, "resize.accepted", _MOVING, _MOVE_STEPS, "resize.failed"),
    _rule(OperationKind.MIGRATE, "migrate.accepted", _MOVING, _MOVE_STEPS,
          "resize.failed"),
    _rule(OperationKind.CONFIRM_RESIZE, "confirm_resize.accepted", (T.RESIZE_CONFIRMING,),
          ("confirm_resize.done", "confirm_resize.stopped", "confirm_resize.failed"),
          "confirm_resize.failed"),
    _rule(OperationKind.REVERT_RESIZE, "revert_resize.accepted", (T.RESIZE_REVERTING,),
          ("revert_resize.done", "revert_resize.stopped", "revert_resize.failed"),
          "revert_resize.failed"),
    _rule(OperationKind.EVACUATE, "evacuate.accepted", _EVACUATING,
          ("evacuate.spawning", "evacuate.done", "evacuate.rolled_back",
           "evacuate.failed"), "evacuate.failed"),
    # The end of an evacuation moves no server: only its migration.
    _rule(OperationKind.COMPLETE_EVACUATION, None, (), (), None),
    _rule(OperationKind.STOP, "stop.accepted", (T.POWERING_OFF,),
          ("stop.done", "stop.failed"), "stop.failed"),
    _rule(OperationKind.START, "start.accepted", (T.POWERING_ON,),
          ("start.done", "start.failed"), "start.failed"),
    # One kind for both reboots: the operation's ``type`` says which, and so does the
    # task state it was accepted in (the hard one's transitions are its own).
    _rule(OperationKind.REBOOT, "reboot.accepted", (*_SOFT_REBOOTING, *_HARD_REBOOTING),
          ("reboot.started", "reboot.done", "reboot.failed", "reboot_hard.started",
           "reboot_hard.done", "reboot_hard.failed"), "reboot.failed"),
)}

# The reboot's transitions by its ``type``: accepting it, and ending it in ERROR.
REBOOT_TYPES = ("HARD", "SOFT")
REBOOTS: Mapping[str, Transition] = {
    "SOFT": BY_NAME["reboot.accepted"], "HARD": BY_NAME["reboot_hard.accepted"]}
REBOOT_FAILED: Mapping[str, Transition] = {
    "SOFT": BY_NAME["reboot.failed"], "HARD": BY_NAME["reboot_hard.failed"]}

# An admin's os-resetState: the state asked for and the transition that sets it.
RESET_STATES: Mapping[str, Transition] = {
    "active": BY_NAME["reset_state.active"], "error": BY_NAME["reset_state.error"]}

# The API's server actions and the transition each applies.
ACTIONS: Mapping[str, Transition] = {
    "rebuild": BY_NAME["rebuild.accepted"],
    "resize": BY_NAME["resize.accepted"],
    "migrate": BY_NAME["migrate.accepted"],
    "confirmResize": BY_NAME["confirm_resize.accepted"],
    "revertResize": BY_NAME["revert_resize.accepted"],
    "evacuate": BY_NAME["evacuate.accepted"],
    "os-stop": BY_NAME["stop.accepted"],
    "os-start": BY_NAME["start.accepted"],
}


# -- what the owner says of a server ------------------------------------------------------
# nova takes metadata and tags from a server whose vm_state is active, paused, suspended
# or stopped; of those Moorage's servers are only ever active or stopped (VM_STATES).
# Metadata also needs no task state; tags do not (nova checks only the vm_state on its
# tag routes).
_VM_ACTIVE = frozenset(s for s, vm_state in VM_STATES.items()
                       if vm_state in ("active", "stopped"))
METADATA_WRITE = Precondition(
    "metadata", _VM_ACTIVE, frozenset({None}),
    doc="POST, PUT and DELETE of /servers/{id}/metadata[/{key}]")
TAGS_WRITE = Precondition(
    "tags", _VM_ACTIVE, _ALL_TASKS, doc="PUT and DELETE of /servers/{id}/tags[/{tag}]")


# -- at rest and in progress --------------------------------------------------------------
# Statuses a server rests in: where the transitions that end an operation leave it
# (with no task state). Any other status means an operation is under way.
AT_REST: frozenset[ServerStatus] = frozenset(
    t.status for t in TRANSITIONS if t.ends and t.status is not None)
IN_PROGRESS: frozenset[ServerStatus] = frozenset(ServerStatus) - AT_REST


def at_rest(status: str, task: str | None) -> bool:
    """Is a server with this status and task state (as the API shows them) at rest: no
    operation of the conductor under way?"""
    return task is None and status in AT_REST


# -- the diagram ----------------------------------------------------------------------------
LIVE_STATE = "live"


def mermaid() -> str:
    """The server's state diagram (Mermaid), drawn from the table: an arrow per
    transition and status it starts from; those that start from any live status
    (the delete) start once from a state standing for them all."""
    lines = ["stateDiagram-v2",
             f'    state "any status but {ServerStatus.DELETED}" as {LIVE_STATE}']
    for t in TRANSITIONS:
        if t.creates:
            lines.append(f"    [*] --> {t.status}: {t.name}")
        elif t.statuses == _LIVE:
            target = LIVE_STATE if t.status is None else t.status
            lines.append(f"    {LIVE_STATE} --> {target}: {t.name}")
        else:
            lines.extend(f"    {source} --> {t.target(source)}: {t.name}"
                         for source in sorted(t.statuses))
    lines.append(f"    {ServerStatus.DELETED} --> [*]")
    return "\n".join(lines) + "\n"


def migration_mermaid() -> str:
    """A migration's state diagram (Mermaid), drawn from its table."""
    lines = ["stateDiagram-v2", f"    [*] --> {MIGRATION_START}: the move starts"]
    for t in MIGRATION_TRANSITIONS:
        lines.extend(f"    {source} --> {t.status}: {t.name}" for source in sorted(t.statuses))
    return "\n".join(lines) + "\n"


def _check_table() -> None:
    """The table's own consistency, checked once at import: an operation's steps start
    only from its own task states, end only through its steps, and every status is
    reachable."""
    for rule in OPERATIONS.values():
        for name in rule.applies:
            step = BY_NAME[name]
            assert step.actor == CONDUCTOR, name
            assert step.tasks <= rule.tasks, f"{name} starts outside {rule.kind}'s tasks"
        if rule.accepted is not None:
            assert rule.accepted.task in rule.tasks, rule.kind
    reached = {t.status for t in TRANSITIONS if t.status is not None}
    assert reached | {s for t in TRANSITIONS for s in t.statuses} == set(ServerStatus)


_check_table()


def main() -> None:
    """``python -m moorage.lifecycle.machine``: print the diagrams for
    docs/architecture.md."""
    print("```mermaid")
    print(mermaid(), end="")
    print("```")
    print()
    print("```mermaid")
    print(migration_mermaid(), end="")
    print("```")


if __name__ == "__main__":
    main()
