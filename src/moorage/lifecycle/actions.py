"""Instance actions and their events: what was asked of each server, by whom, under
which request id, and the steps a conductor took for it (nova's os-instance-actions).

Who writes what, and when:

- The compute API writes the *action* (``record_action``) in the transaction that
  accepts the request, beside the server's new state and its operation: one INSERT,
  no transaction of its own. ``ACTIONS`` is the one table from an operation kind to
  nova's action name; a kind that names none (the end of an evacuation, which no
  user asked for) records nothing. A request that changes a server without an
  operation (lock, say) records its action with the same call.
- The conductor writes the *events* (``EventRecorder``), found by the action's
  (server, request id) as nova finds them: each step's start and end queued with
  the conductor's own writes (``write_later``: the group commit that carries the
  server's next transition), never waited for. A failed step is an Error event with
  the failure's message as its ``details`` and, when Python raised, its traceback;
  the action's ``message`` becomes "Error" then, as nova's does.

What is derived rather than written: an action's ``updated_at`` is the latest start
or end of its events (the action's own time before it has any), which is what nova's
event writers set it to; reading it costs a subquery on a server's few actions,
where writing it would cost a statement per event on every boot.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from moorage.db.clock import utcnow_precise
from moorage.db.statements import Statement
from moorage.lifecycle import listing
from moorage.lifecycle.schema import instance_actions, instance_actions_events
from moorage.lifecycle.states import OperationKind

# The action's message once one of its events failed (nova's word).
ERROR_MESSAGE = "Error"


class Result(StrEnum):
    """How an event ended (nova's words)."""

    SUCCESS = "Success"
    ERROR = "Error"


class Event(StrEnum):
    """The steps the conductor records, under nova's event names (its service's prefix
    and the method that does the step there), so that tools reading nova's events
    read these."""

    # Build: scheduling, then one spawn per host tried.
    SCHEDULE_AND_BUILD = "conductor_schedule_and_build_instances"
    BUILD_AND_RUN = "compute__do_build_and_run_instance"
    # Delete: the guest destroyed wherever it may run, the claims released.
    TERMINATE = "compute_terminate_instance"
    # Resize and cold migration: scheduling, then one spawn per destination tried.
    MIGRATE_SERVER = "conductor_migrate_server"
    PREP_RESIZE = "compute_prep_resize"
    CONFIRM_RESIZE = "compute_confirm_resize"
    REVERT_RESIZE = "compute_revert_resize"
    # Rebuild and evacuation: the check (or scheduling), then the spawn.
    REBUILD_SERVER = "conductor_rebuild_server"
    REBUILD_INSTANCE = "compute_rebuild_instance"
    # The power actions: one step on the server's host.
    STOP_INSTANCE = "compute_stop_instance"
    START_INSTANCE = "compute_start_instance"
    REBOOT_INSTANCE = "compute_reboot_instance"


# The one table: what each operation is recorded as (nova's instance_actions names);
# None: nobody asked for it, no action. Another kind of operation adds its line here.
ACTIONS: Mapping[OperationKind, str | None] = {
    OperationKind.BUILD: "create",
    OperationKind.DELETE: "delete",
    OperationKind.REBUILD: "rebuild",
    OperationKind.MIGRATE: "migrate",
    OperationKind.RESIZE: "resize",
    OperationKind.CONFIRM_RESIZE: "confirmResize",
    OperationKind.REVERT_RESIZE: "revertResize",
    OperationKind.EVACUATE: "evacuate",
    OperationKind.COMPLETE_EVACUATION: None,
    OperationKind.STOP: "stop",
    OperationKind.START: "start",
    OperationKind.REBOOT: "reboot",
}
assert set(ACTIONS) == set(OperationKind), "every operation kind says its action"

# The step an unexpected failure is recorded under when no step of the operation was
# open (it broke between two steps): the operation's first.
FIRST_STEP: Mapping[OperationKind, Event] = {
    OperationKind.BUILD: Event.SCHEDULE_AND_BUILD,
    OperationKind.DELETE: Event.TERMINATE,
    OperationKind.REBUILD: Event.REBUILD_SERVER,
    OperationKind.MIGRATE: Event.MIGRATE_SERVER,
    OperationKind.RESIZE: Event.MIGRATE_SERVER,
    OperationKind.CONFIRM_RESIZE: Event.CONFIRM_RESIZE,
    OperationKind.REVERT_RESIZE: Event.REVERT_RESIZE,
    OperationKind.EVACUATE: Event.REBUILD_SERVER,
    OperationKind.STOP: Event.STOP_INSTANCE,
    OperationKind.START: Event.START_INSTANCE,
    OperationKind.REBOOT: Event.REBOOT_INSTANCE,
}


@dataclass(frozen=True)
class ActionRecord:
    """One action as stored; ``updated_at``: the latest change of it or its events."""

    id: int
    server_uuid: str
    request_id: str
    action: str
    user_id: str | None
    project_id: str | None
    start_time: datetime.datetime
    finish_time: datetime.datetime | None
    message: str | None
    updated_at: datetime.datetime


@dataclass(frozen=True)
class EventRecord:
    """One step of an action; ``finish_time`` and ``result`` are None while it runs."""

    event: str
    start_time: datetime.datetime
    finish_time: datetime.datetime | None
    result: str | None
    traceback: str | None
    host: str | None
    details: str | None


# -- the API's write ----------------------------------------------------------------

# INSERT INTO instance_actions (server_uuid, request_id, action, user_id, project_id,
#   start_time, updated_at) VALUES (...)
_INSERT_ACTION = Statement(instance_actions.insert().values(
    {name: sa.bindparam(name) for name in ("server_uuid", "request_id", "action",
                                           "user_id", "project_id", "start_time",
                                           "updated_at")}), sqlite_driver=True)


def record_action(conn: Connection, server_uuid: str, action: str, request_id: str, *,
                  user_id: str | None, project_id: str | None,
                  at: datetime.datetime | None = None) -> None:
    """Record that ``request_id`` (by that user of that project) asked ``action`` of
    the server, in the caller's transaction."""
    now = at or utcnow_precise()
    _INSERT_ACTION.run(conn, {"server_uuid": server_uuid, "request_id": request_id,
                              "action": action, "user_id": user_id,
                              "project_id": project_id, "start_time": now,
                              "updated_at": now})


# -- the conductor's writes ---------------------------------------------------------------

def _action_of() -> sa.ScalarSelect[int]:
    """The action of (server, request id), the newest should there be two."""
    # (SELECT id FROM instance_actions WHERE server_uuid = :b_uuid
    #  AND request_id = :b_request ORDER BY id DESC LIMIT 1)
    return (sa.select(instance_actions.c.id)
            .where(instance_actions.c.server_uuid == sa.bindparam("b_uuid"),
                   instance_actions.c.request_id == sa.bindparam("b_request"))
            .order_by(instance_actions.c.id.desc()).limit(sa.literal_column("1"))
            .scalar_subquery())


_EVENT_COLUMNS = ("event", "start_time", "finish_time", "result", "traceback", "host",
                  "details")

# INSERT INTO instance_actions_events (action_id, event, start_time, ...)
#   SELECT id, :event, :start_time, ... FROM instance_actions
#   WHERE server_uuid = :b_uuid AND request_id = :b_request ORDER BY id DESC LIMIT 1
# (No action, no event: an operation no request recorded writes nothing.)
_INSERT_EVENT = Statement(instance_actions_events.insert().from_select(
    ["action_id", *_EVENT_COLUMNS],
    sa.select(instance_actions.c.id,
              *(sa.bindparam(name, type_=instance_actions_events.c[name].type)
                for name in _EVENT_COLUMNS))
    .where(instance_actions.c.server_uuid == sa.bindparam("b_uuid"),
           instance_actions.c.request_id == sa.bindparam("b_request"))
    .order_by(instance_actions.c.id.desc()).limit(sa.literal_column("1"))),
    sqlite_driver=True)

# UPDATE instance_actions_events SET finish_time = :finish_time, result = :result,
#   traceback = :traceback, details = :details
#   WHERE action_id = (the action) AND event = :b_event AND start_time = :b_start
_FINISH_EVENT = Statement(instance_actions_events.update().where(
    instance_actions_events.c.action_id == _action_of(),
    instance_actions_events.c.event == sa.bindparam("b_event"),
    instance_actions_events.c.start_time == sa.bindparam("b_start"))
    .values({name: sa.bindparam(name) for name in ("finish_time", "result", "traceback",
                                                   "details")}), sqlite_driver=True)

# UPDATE instance_actions SET message = 'Error', updated_at = :updated_at
#   WHERE server_uuid = :b_uuid AND request_id = :b_request
_ACTION_FAILED = Statement(instance_actions.update().where(
    instance_actions.c.server_uuid == sa.bindparam("b_uuid"),
    instance_actions.c.request_id == sa.bindparam("b_request"))
    .values(message=ERROR_MESSAGE, updated_at=sa.bindparam("updated_at")))


@dataclass(frozen=True)
class Ending:
    """How a step ended: Success, or Error with what failed (``details``) and, for an
    exception Moorage did not expect, its traceback."""

    finished: datetime.datetime
    error: str | None = None
    traceback: str | None = None

    @property
    def result(self) -> Result:
        return Result.SUCCESS if self.error is None else Result.ERROR


def start_event(conn: Connection, server_uuid: str, request_id: str, event: str,
                host: str | None, started: datetime.datetime,
                ending: Ending | None = None) -> None:
    """Record a step that started (and, with ``ending``, ended: one statement for a
    step recorded once it is over)."""
    _INSERT_EVENT.run(conn, {
        "b_uuid": server_uuid, "b_request": request_id, "event": event,
        "start_time": started, "host": host,
        "finish_time": ending.finished if ending else None,
        "result": str(ending.result) if ending else None,
        "traceback": ending.traceback if ending else None,
        "details": ending.error if ending else None})
    if ending is not None and ending.error is not None:
        _action_failed(conn, server_uuid, request_id, ending.finished)


def finish_event(conn: Connection, server_uuid: str, request_id: str, event: str,
                 started: datetime.datetime, ending: Ending) -> None:
    """Record how the step that started at ``started`` ended."""
    _FINISH_EVENT.run(conn, {
        "b_uuid": server_uuid, "b_request": request_id, "b_event": event,
        "b_start": started, "finish_time": ending.finished, "result": str(ending.result),
        "traceback": ending.traceback, "details": ending.error})
    if ending.error is not None:
        _action_failed(conn, server_uuid, request_id, ending.finished)


def _action_failed(conn: Connection, server_uuid: str, request_id: str,
                   at: datetime.datetime) -> None:
    _ACTION_FAILED.run(conn, {"b_uuid": server_uuid, "b_request": request_id,
                              "updated_at": at})


def interrupt_events(conn: Connection, server_uuid: str, request_id: str, why: str,
                     at: datetime.datetime) -> int:
    """End every step of the action still open as an Error saying ``why`` (its
    conductor stopped in the middle of it); how many."""
    # UPDATE instance_actions_events SET finish_time = :at, result = 'Error',
    #   details = :why WHERE action_id = (the action) AND finish_time IS NULL
    ended = conn.execute(instance_actions_events.update().where(
        instance_actions_events.c.action_id == _action_of(),
        instance_actions_events.c.finish_time.is_(None))
        .values(finish_time=at, result=str(Result.ERROR), details=why),
        {"b_uuid": server_uuid, "b_request": request_id}).rowcount
    if ended:
        _action_failed(conn, server_uuid, request_id, at)
    return int(ended)


Change = Callable[[Connection], object]


@dataclass
class Step:
    """A step under way; ended once, by ``succeeded`` or ``failed``."""

    recorder: EventRecorder
    event: str
    host: str | None
    started: datetime.datetime
    ended: bool = False

    def succeeded(self) -> None:
        self.recorder.end(self, Ending(utcnow_precise()))

    def failed(self, details: str, traceback: str | None = None) -> None:
        self.recorder.end(self, Ending(utcnow_precise(), details, traceback))


@dataclass
class EventRecorder:
    """The events of one operation's action, each written by ``write`` (the
    conductor's ``write_later``: with its next transition, not waited for). Without
    a request id there is no action, and nothing is written."""

    write: Callable[[Change], object]
    server_uuid: str
    request_id: str | None
    # Where the conductor's own steps ran: its host ([DEFAULT] host).
    conductor_host: str
    open: list[Step] = field(default_factory=list)

    def step(self, event: str, host: str | None = None) -> Step:
        """A step that starts now, on ``host`` (the conductor's when None)."""
        step = Step(self, event, host or self.conductor_host, utcnow_precise())
        self.open.append(step)
        self._queue(functools.partial(start_event, server_uuid=self.server_uuid,
                                      event=event, host=step.host, started=step.started))
        return step

    def once(self, event: str, started: datetime.datetime, *, error: str | None = None,
             host: str | None = None) -> None:
        """A step that is over (started at ``started``), written in one statement: the
        conductor's quick ones (scheduling), whose start nobody could watch anyway."""
        ending = Ending(utcnow_precise(), error)
        self._queue(functools.partial(start_event, server_uuid=self.server_uuid,
                                      event=event, host=host or self.conductor_host,
                                      started=started, ending=ending))

    def end(self, step: Step, ending: Ending) -> None:
        if step.ended:
            return
        step.ended = True
        self.open.remove(step)
        self._queue(functools.partial(finish_event, server_uuid=self.server_uuid,
                                      event=step.event, started=step.started,
                                      ending=ending))

    def fail_open(self, first: str, details: str, traceback: str | None = None) -> None:
        """The operation broke: every open step failed with ``details``; with none
        open, step ``first`` is recorded as failed."""
        if not self.open:
            self.once(first, utcnow_precise(), error=details)
        for step in list(self.open):
            step.failed(details, traceback)

    def interrupted(self, why: str) -> None:
        """A takeover: the steps the previous conductor left open failed, ``why``."""
        if self.request_id is not None:
            self.write(functools.partial(interrupt_events, server_uuid=self.server_uuid,
                                         request_id=self.request_id, why=why,
                                         at=utcnow_precise()))

    def _queue(self, write: Callable[..., None]) -> None:
        if self.request_id is not None:
            request_id = self.request_id
            self.write(lambda conn: write(conn, request_id=request_id))


# -- reading ----------------------------------------------------------------------

_ACTIONS = instance_actions.c
_EVENTS = instance_actions_events.c


def _updated_at() -> sa.ColumnElement[datetime.datetime]:
    """The latest start or end of the action's events, else the action's own time."""
    # COALESCE((SELECT max(COALESCE(e.finish_time, e.start_time))
    #           FROM instance_actions_events e WHERE e.action_id = a.id), a.updated_at)
    latest = (sa.select(sa.func.max(sa.func.coalesce(_EVENTS.finish_time,
                                                     _EVENTS.start_time),
                                    type_=sa.DateTime))
              .where(_EVENTS.action_id == _ACTIONS.id).scalar_subquery())
    return sa.func.coalesce(latest, _ACTIONS.updated_at, type_=sa.DateTime)


def _action(row: RowMapping) -> ActionRecord:
    return ActionRecord(
        id=int(row["id"]), server_uuid=row["server_uuid"], request_id=row["request_id"],
        action=row["action"], user_id=row["user_id"], project_id=row["project_id"],
        start_time=row["start_time"], finish_time=row["finish_time"],
        message=row["message"], updated_at=row["last_change"])


def _select() -> sa.Select[tuple[object, ...]]:
    return sa.select(*instance_actions.columns, _updated_at().label("last_change"))


def find_action(conn: Connection, server_uuid: str, request_id: str) -> ActionRecord | None:
    """The server's action of that request, if any."""
    row = conn.execute(_select().where(_ACTIONS.server_uuid == server_uuid,
                                       _ACTIONS.request_id == request_id)
                       .order_by(_ACTIONS.id.desc()).limit(1)).mappings().first()
    return _action(row) if row is not None else None


def list_actions(conn: Connection, server_uuid: str, *, limit: int | None = None,
                 marker: str | None = None,
                 changes_since: datetime.datetime | None = None,
                 changes_before: datetime.datetime | None = None) -> list[ActionRecord]:
    """The server's actions newest first (nova's order: when each started, then id),
    ``changes_since``/``changes_before``: changed at or after, at or before;
    ``marker``: the page after the action of that request id (LookupError when the
    server has none); ``limit``: at most that many."""
    # SELECT a.*, <updated_at> FROM instance_actions a WHERE server_uuid = :uuid
    #   [AND <updated_at> >= :since] [AND <updated_at> <= :before]
    #   [AND (start_time < :mt OR (start_time = :mt AND id < :mid))]
    #   ORDER BY start_time DESC, id DESC [LIMIT :limit]
    if limit == 0:
        return []
    statement = _select().where(_ACTIONS.server_uuid == server_uuid)
    updated = _updated_at()
    if changes_since is not None:
        statement = statement.where(updated >= changes_since)
    if changes_before is not None:
        statement = statement.where(updated <= changes_before)
    after = None
    if marker is not None:
        found = find_action(conn, server_uuid, marker)
        if found is None:
            raise LookupError(marker)
        after = (found.start_time, found.id)
    statement = listing.newest_first_page(statement, _ACTIONS.start_time, _ACTIONS.id,
                                          after, limit)
    return [_action(row) for row in conn.execute(statement).mappings()]


def events_of(conn: Connection, action_id: int) -> list[EventRecord]:
    """The action's events, newest first (nova's order)."""
    # SELECT * FROM instance_actions_events WHERE action_id = :id
    #   ORDER BY start_time DESC, id DESC
    rows = conn.execute(instance_actions_events.select()
                        .where(_EVENTS.action_id == action_id)
                        .order_by(_EVENTS.start_time.desc(), _EVENTS.id.desc())).mappings()
    return [EventRecord(event=row["event"], start_time=row["start_time"],
                        finish_time=row["finish_time"], result=row["result"],
                        traceback=row["traceback"], host=row["host"],
                        details=row["details"]) for row in rows]
