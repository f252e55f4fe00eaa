"""Placement analyzes its PostgreSQL tables when they grew past what their statistics
describe (a cloud registering), and leaves them alone otherwise."""

from __future__ import annotations

import time
import uuid as uuidlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from moorage.placement.storage import migration, providers, statistics
from moorage.placement.storage.database import Database
from moorage.placement.storage.statistics import StatisticsKeeper


@pytest.fixture
def db(postgresql_url: str) -> Iterator[Database]:
    database = Database(postgresql_url)
    migration.upgrade(database)
    # Only the keeper analyzes here: an autoanalyze that got there first would leave it
    # nothing to do (seen once in ~10 runs), and the tests would be about autovacuum.
    with database.engine.begin() as conn:
        for table in statistics.TABLES:
            conn.exec_driver_sql(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    database.engine.dispose()
    yield database
    database.dispose()


def _register(db: Database, count: int) -> None:
    with db.writer() as w:
        for _ in range(count):
            rp = str(uuidlib.uuid4())
            providers.create(w, rp, f"cn-{rp}", None)
    db.engine.dispose()  # the server counts a backend's changes when it lets go


def _eventually(check: Callable[[], bool], seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "the statistics never caught up"
        time.sleep(0.2)


def _last_analyze(db: Database, table: str) -> object:
    with db.statement_reader() as conn:
        return conn.execute(sa.text(
            "SELECT greatest(last_analyze, last_autoanalyze) FROM pg_stat_user_tables "
            "WHERE relname = :t"), {"t": table}).scalar_one()


def test_a_table_that_grew_is_analyzed_once(db: Database) -> None:
    _register(db, statistics.FLOOR + 100)
    _eventually(lambda: "resource_providers" in statistics.stale_tables(db))
    keeper = StatisticsKeeper(db)
    assert "resource_providers" in keeper.keep()
    assert _last_analyze(db, "resource_providers") is not None
    _eventually(lambda: "resource_providers" not in statistics.stale_tables(db))
    assert keeper.keep() == []


def test_a_few_changes_are_left_to_autovacuum(db: Database) -> None:
    _register(db, 20)
    time.sleep(1.5)
    assert statistics.stale_tables(db) == []


def test_the_keeper_runs_in_the_background_and_stops(db: Database) -> None:
    keeper = StatisticsKeeper(db, interval=0.2).start()
    try:
        _register(db, statistics.FLOOR + 100)
        _eventually(lambda: keeper.analyzed >= 1)
    finally:
        keeper.stop()
    assert keeper._thread is not None and not keeper._thread.is_alive()


def test_sqlite_needs_no_keeper(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'p.sqlite'}")
    keeper = StatisticsKeeper(database).start()
    assert keeper._thread is None
    keeper.stop()
    database.dispose()


def test_only_placements_tables_are_analyzed(db: Database) -> None:
    with pytest.raises(ValueError, match="not a table of placement's"):
        statistics.analyze(db, ["pg_class; DROP TABLE traits"])
