"""The lifecycle's group commit on real databases (SQLite and PostgreSQL): changes in
the order they were queued, batched, a failing change failing alone, and the
committer's kept connection surviving a failed batch."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.db.database import Database
from moorage.lifecycle.group_commit import GroupCommit

LOG_TABLE = sa.Table("commit_log", sa.MetaData(),
                     sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                     sa.Column("server", sa.String(36), nullable=False),
                     sa.Column("step", sa.Integer, nullable=False),
                     sa.Column("thread", sa.String(64), nullable=False),
                     sa.UniqueConstraint("server", "step"))


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'api.sqlite'}"
    else:
        url = request.getfixturevalue("postgresql_url")
    db = Database(url)
    LOG_TABLE.metadata.create_all(db.engine)
    yield db
    db.dispose()


def _step(server: str, step: int) -> Callable[[Connection], int]:
    def change(conn: Connection) -> int:
        conn.execute(LOG_TABLE.insert().values(
            server=server, step=step, thread=threading.current_thread().name))
        return step
    return change


def _rows(db: Database) -> list[tuple[str, int, str]]:
    with db.engine.connect() as conn:
        return [(row.server, row.step, row.thread) for row in conn.execute(
            sa.select(LOG_TABLE.c.server, LOG_TABLE.c.step, LOG_TABLE.c.thread)
            .order_by(LOG_TABLE.c.id))]


def test_changes_are_committed_in_order_and_together(database: Database) -> None:
    committer = GroupCommit(database, max_batch=8)
    commits: list[int] = []
    checkouts: list[int] = []
    sa.event.listen(database.engine, "commit", lambda _conn: commits.append(1))
    sa.event.listen(database.engine, "checkout", lambda *_args: checkouts.append(1))
    servers = [f"server-{n}" for n in range(12)]
    futures = []
    try:
        # Interleaved, as many conductor workers queue them.
        for step in range(30):
            for server in servers:
                futures.append(committer.write_later(_step(server, step)))
        assert [f.result(timeout=60) for f in futures] == [
            step for step in range(30) for _ in servers]
        assert committer.write(_step(servers[0], 30)) == 30
    finally:
        committer.stop()
    # Every batch on one kept connection, not one checked out (and pinged) per batch.
    assert len(checkouts) == 1
    rows = _rows(database)
    assert [(name, step) for name, step, _t in rows] == [
        *((server, step) for step in range(30) for server in servers), (servers[0], 30)]
    assert len({thread for _name, _step, thread in rows}) == 1
    assert len(commits) < len(rows), "every change was committed on its own"


def test_a_failing_change_fails_alone_and_the_committer_goes_on(database: Database) -> None:
    committer = GroupCommit(database, max_batch=16)
    try:
        first = committer.write_later(_step("a", 1))
        duplicate = committer.write_later(_step("a", 1))  # the unique constraint
        after = committer.write_later(_step("a", 2))
        assert first.result(timeout=30) == 1
        with pytest.raises(sa.exc.IntegrityError):
            duplicate.result(timeout=30)
        assert after.result(timeout=30) == 2
        # The batch that failed dropped its connection; the next opens another.
        assert committer.write(_step("a", 3)) == 3
    finally:
        committer.stop()
    assert [(name, step) for name, step, _t in _rows(database)] == [
        ("a", 1), ("a", 2), ("a", 3)]


def test_stop_writes_what_is_queued(database: Database) -> None:
    committer = GroupCommit(database)
    futures = [committer.write_later(_step(f"s{n % 5}", n)) for n in range(40)]
    committer.stop()
    assert all(f.done() for f in futures)
    assert len(_rows(database)) == 40
    with pytest.raises(RuntimeError, match="stopped"):
        committer.write(_step("s0", 99))
