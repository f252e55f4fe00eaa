"""Group commit on SQLite: writers that queue up share one COMMIT, each undone alone.

Real SQLite files and real threads; the writers are held inside their blocks so
that the others queue up behind them, as under a burst of requests.
"""

from __future__ import annotations

import threading
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from moorage.placement.storage import migration, providers, schema
from moorage.placement.storage.database import Database, Writer


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'placement.sqlite'}", group_commit=True)
    migration.upgrade(database)
    yield database
    database.engine.dispose()


def _is_write(conn: sa.Connection) -> bool:
    return bool(conn.get_execution_options().get("moorage_write"))


def _commits(database: Database) -> list[int]:
    """A list that grows by one at each COMMIT of a write transaction."""
    seen: list[int] = []
    event.listen(database.engine, "commit",
                 lambda conn: seen.append(1) if _is_write(conn) else None)
    return seen


def _names(database: Database) -> set[str]:
    with database.reader() as conn:
        return set(conn.execute(sa.select(schema.resource_providers.c.name)).scalars())


def _wait_for_queue(database: Database, writers: int) -> None:
    deadline = time.monotonic() + 10
    while database._group_commit._waiting < writers:  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the writers did not queue up"
        time.sleep(0.005)


class _Writers:
    """Threads each running one writer block; the first is held inside its block
    until the others queue for the turn."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.release_first = threading.Event()
        self.first_inside = threading.Event()
        self.outcomes: dict[str, Any] = {}
        self.threads: list[threading.Thread] = []

    def start(self, name: str, body: Callable[[Writer], None], *, first: bool = False) -> None:
        def run() -> None:
            try:
                with self.database.writer() as w:
                    if first:
                        self.first_inside.set()
                        assert self.release_first.wait(10)
                    body(w)
                # Returned: what it wrote must be committed, visible to any reader.
                self.outcomes[name] = "done", name in _names(self.database)
            except Exception as exc:
                self.outcomes[name] = "raised", exc

        thread = threading.Thread(target=run, name=name)
        thread.start()
        self.threads.append(thread)
        if first:
            assert self.first_inside.wait(10)

    def finish(self) -> None:
        self.release_first.set()
        for thread in self.threads:
            thread.join(10)
            assert not thread.is_alive()


def _create(name: str) -> Callable[[Writer], None]:
    return lambda w: providers.create(w, str(uuidlib.uuid4()), name, None) and None


def test_writers_queued_behind_one_share_its_commit(db: Database) -> None:
    commits = _commits(db)
    writers = _Writers(db)
    writers.start("first", _create("first"), first=True)
    for name in ("second", "third", "fourth"):
        writers.start(name, _create(name))
    _wait_for_queue(db, 3)
    writers.finish()

    assert len(commits) == 1
    # Each writer returned only once its provider was committed.
    assert writers.outcomes == {name: ("done", True)
                                for name in ("first", "second", "third", "fourth")}
    with db.reader() as conn:
        version = conn.execute(sa.select(schema.placement_state.c.version)).scalar_one()
        stamps = sorted(conn.execute(
            sa.select(schema.resource_providers.c.change_version)).scalars())
    # Each writer bumped the version once and stamped its provider with its own.
    assert stamps == list(range(version - 3, version + 1))


def test_a_writer_that_fails_in_a_batch_is_undone_alone(db: Database) -> None:
    def fails(w: Writer) -> None:
        providers.create(w, str(uuidlib.uuid4()), "undone", None)
        raise RuntimeError("the handler refused it")

    commits = _commits(db)
    writers = _Writers(db)
    writers.start("first", _create("first"), first=True)
    writers.start("undone", fails)
    _wait_for_queue(db, 1)
    writers.start("last", _create("last"))
    _wait_for_queue(db, 2)
    writers.finish()

    assert writers.outcomes["first"] == ("done", True)
    assert writers.outcomes["last"] == ("done", True)
    state, error = writers.outcomes["undone"]
    assert state == "raised" and str(error) == "the handler refused it"
    assert _names(db) == {"first", "last"}
    assert len(commits) == 1


def test_the_first_writer_of_a_batch_failing_leaves_the_others_to_the_next(
        db: Database) -> None:
    def fails(w: Writer) -> None:
        providers.create(w, str(uuidlib.uuid4()), "undone", None)
        raise RuntimeError("the handler refused it")

    writers = _Writers(db)
    writers.start("undone", fails, first=True)
    for name in ("second", "third"):
        writers.start(name, _create(name))
    _wait_for_queue(db, 2)
    writers.finish()

    assert writers.outcomes["undone"][0] == "raised"
    assert writers.outcomes["second"] == ("done", True)
    assert writers.outcomes["third"] == ("done", True)
    assert _names(db) == {"second", "third"}


def test_a_failed_commit_fails_every_writer_of_the_batch(db: Database) -> None:
    def refuse(conn: sa.Connection) -> None:
        if _is_write(conn):
            raise sa.exc.OperationalError("COMMIT", {}, Exception("disk I/O error"))

    writers = _Writers(db)
    writers.start("first", _create("first"), first=True)
    for name in ("second", "third"):
        writers.start(name, _create(name))
    _wait_for_queue(db, 2)
    event.listen(db.engine, "commit", refuse)
    writers.finish()
    event.remove(db.engine, "commit", refuse)

    assert {state for state, _error in writers.outcomes.values()} == {"raised"}
    assert all("disk I/O error" in str(error) for _state, error in writers.outcomes.values())
    assert _names(db) == set()
    # The database is usable again.
    with db.writer() as w:
        providers.create(w, str(uuidlib.uuid4()), "after", None)
    assert _names(db) == {"after"}


def test_without_group_commit_each_writer_commits_its_own(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'alone.sqlite'}")
    migration.upgrade(database)
    commits = _commits(database)
    writers = _Writers(database)
    writers.start("first", _create("first"), first=True)
    for name in ("second", "third"):
        writers.start(name, _create(name))
    _wait_for_queue(database, 2)
    writers.finish()
    assert len(commits) == 3
    assert _names(database) == {"first", "second", "third"}
    database.engine.dispose()
