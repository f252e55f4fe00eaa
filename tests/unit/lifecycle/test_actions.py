"""Instance actions and events on both backends: the recorder's writes, the derived
updated_at, the order and pages of a server's actions, and a takeover's open steps."""

from __future__ import annotations

import datetime

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.db.database import Database
from moorage.lifecycle import actions, schema
from moorage.lifecycle.actions import Change, Event, EventRecorder

T0 = datetime.datetime(2026, 1, 1, 12, 0, 0)


def _writer(db: Database) -> EventRecorder:
    """A recorder whose writes are committed at once (a conductor without a group
    committer)."""
    def write(change: Change) -> None:
        with db.writer() as writer:
            change(writer.conn)
    return EventRecorder(write, "s1", "req-1", "conductor-host")


def _record(db: Database, request_id: str, action: str, at: datetime.datetime,
            server: str = "s1") -> None:
    with db.writer() as writer:
        actions.record_action(writer.conn, server, action, request_id, user_id="u",
                              project_id="p", at=at)


def _events(conn: Connection, request_id: str = "req-1") -> list[actions.EventRecord]:
    found = actions.find_action(conn, "s1", request_id)
    assert found is not None
    return actions.events_of(conn, found.id)


def test_steps_are_written_as_they_start_and_end(db: Database) -> None:
    _record(db, "req-1", "create", T0)
    _record(db, "req-2", "delete", T0 + datetime.timedelta(seconds=1))
    recorder = _writer(db)
    recorder.once(Event.SCHEDULE_AND_BUILD, T0)
    step = recorder.step(Event.BUILD_AND_RUN, "h1")
    with db.reader() as conn:
        running = _events(conn)[0]
        assert (running.event, running.host, running.finish_time, running.result) == (
            Event.BUILD_AND_RUN, "h1", None, None)
        assert actions.find_action(conn, "s1", "req-1").message is None
    step.failed("UnsupportedHardware: no vmxnet3 here")
    step.succeeded()  # a step ends once
    with db.reader() as conn:
        built, scheduled = _events(conn)
        action = actions.find_action(conn, "s1", "req-1")
        other = actions.find_action(conn, "s1", "req-2")
        assert not _events(conn, "req-2")
    assert (built.result, built.details, built.traceback) == (
        "Error", "UnsupportedHardware: no vmxnet3 here", None)
    assert built.finish_time is not None and built.finish_time >= built.start_time
    assert (scheduled.event, scheduled.result, scheduled.host) == (
        Event.SCHEDULE_AND_BUILD, "Success", "conductor-host")
    assert action is not None and other is not None
    assert action.message == "Error" and other.message is None
    # The action changed when its last event ended; the other not since recorded.
    assert action.updated_at == built.finish_time
    assert other.updated_at == T0 + datetime.timedelta(seconds=1)


def test_an_unexpected_failure_ends_the_open_steps_or_records_the_first(
        db: Database) -> None:
    _record(db, "req-1", "resize", T0)
    recorder = _writer(db)
    recorder.step(Event.PREP_RESIZE, "h2")
    recorder.fail_open(Event.MIGRATE_SERVER, "resize failed: KeyError: 'x'", "Traceback...")
    recorder.fail_open(Event.MIGRATE_SERVER, "resize failed again")
    with db.reader() as conn:
        again, first = _events(conn)
    assert (first.event, first.result, first.traceback) == (
        Event.PREP_RESIZE, "Error", "Traceback...")
    assert (again.event, again.result, again.details, again.host) == (
        Event.MIGRATE_SERVER, "Error", "resize failed again", "conductor-host")


def test_a_takeover_ends_what_the_previous_conductor_left_open(db: Database) -> None:
    _record(db, "req-1", "create", T0)
    _writer(db).step(Event.BUILD_AND_RUN, "h1")  # its conductor dies here
    successor = _writer(db)
    successor.interrupted("interrupted: conductor c1 stopped during this step")
    with db.reader() as conn:
        (event,) = _events(conn)
        action = actions.find_action(conn, "s1", "req-1")
    assert (event.result, event.details) == (
        "Error", "interrupted: conductor c1 stopped during this step")
    assert action is not None and action.message == "Error"


def test_no_request_no_action_no_events(db: Database) -> None:
    writes: list[Change] = []
    recorder = EventRecorder(writes.append, "s1", None, "c")
    recorder.step(Event.TERMINATE).succeeded()
    recorder.once(Event.SCHEDULE_AND_BUILD, T0, error="x")
    recorder.interrupted("why")
    assert writes == []
    # A request whose action was not recorded (an operation no user asked for):
    # its events find no action and write nothing.
    _writer(db).step(Event.TERMINATE).succeeded()
    with db.reader() as conn:
        assert actions.list_actions(conn, "s1") == []


def test_a_servers_actions_newest_first_paged_and_windowed(db: Database) -> None:
    for n in range(4):
        _record(db, f"req-{n}", "rebuild", T0 + datetime.timedelta(minutes=n))
    _record(db, "req-other", "create", T0, server="s2")
    # An event of the oldest action, after every action started: its last change.
    late = T0 + datetime.timedelta(minutes=10)
    with db.writer() as writer:
        actions.start_event(writer.conn, "s1", "req-0", Event.REBUILD_INSTANCE, "h",
                            late, actions.Ending(late))
    with db.reader() as conn:
        def ids(**query: object) -> list[str]:
            return [a.request_id for a in actions.list_actions(conn, "s1", **query)]
        assert ids() == ["req-3", "req-2", "req-1", "req-0"]
        assert ids(limit=2) == ["req-3", "req-2"]
        assert ids(limit=2, marker="req-2") == ["req-1", "req-0"]
        assert ids(limit=0) == []
        assert ids(changes_since=T0 + datetime.timedelta(minutes=2)) == [
            "req-3", "req-2", "req-0"]
        assert ids(changes_before=T0 + datetime.timedelta(minutes=1)) == ["req-1"]
        with pytest.raises(LookupError):
            actions.list_actions(conn, "s1", marker="req-other")


def test_driver_sql_writes_times_as_sqlalchemy_compares_them(db: Database) -> None:
    """The actions' statements bypass SQLAlchemy's type processing on SQLite
    (``Statement(sqlite_driver=True)``): a time they write is found by a query
    SQLAlchemy binds, whole seconds included (SQLite compares text)."""
    _record(db, "req-1", "create", T0)
    with db.reader() as conn:
        found = conn.execute(sa.select(schema.instance_actions.c.request_id).where(
            schema.instance_actions.c.start_time == T0,
            schema.instance_actions.c.updated_at < T0 + datetime.timedelta(microseconds=1),
        )).scalars().all()
    assert found == ["req-1"]
