"""A project's limits and usage read once per write transaction (``moorage.db.memo``,
``lifecycle.tally``), on both backends: the creates of one group commit together never
pass a limit, what the store writes in the transaction is counted again or added, and
nothing kept reaches the next transaction."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Connection

from moorage.api.quotas import admission, engine
from moorage.api.quotas.resources import options
from moorage.api.storage import migration
from moorage.api.storage import quotas as stored
from moorage.conf import load_config
from moorage.db import memo
from moorage.db.clock import utcnow
from moorage.db.database import Database
from moorage.lifecycle import machine, store, usage
from moorage.lifecycle.group_commit import GroupCommit
from moorage.lifecycle.records import ServerRecord
from moorage.model.flavor import Flavor
from tests.lifecycle_paths import OWNER, bring, flavor_change, hold, new_record, operation_of, paths

# Limits no test here reaches but the one it names.
ROOMY = {"instances": 100, "cores": 1000, "ram": 10**6}


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    url = (f"sqlite:///{tmp_path / 'api.sqlite'}" if request.param == "sqlite"
           else request.getfixturevalue("postgresql_url"))
    database = Database(url)
    migration.upgrade(database)
    yield database
    database.dispose()


def _record(uuid: str, user: str = "u", vcpus: int = 1) -> ServerRecord:
    return dataclasses.replace(new_record(uuid), project_id="p", user_id=user,
                               flavor=Flavor("f", vcpus, 512, 1))


def _create(conf_limits: dict[str, int], uuid: str, count: int
            ) -> Callable[[Connection], int | engine.OverQuota]:
    """A create of ``count`` servers as the compute API's: admitted, then inserted in
    the same transaction; the refusal answered, not raised (as the handler's)."""
    conf = load_config([], [("quota", name, value) for name, value in conf_limits.items()])
    record = _record(uuid)

    def create(conn: Connection) -> int | engine.OverQuota:
        try:
            admitted = admission.admit_servers(conn, conf, record, count, count)
        except engine.OverQuota as refusal:
            return refusal
        for n in range(admitted):
            store.insert_server(conn, dataclasses.replace(record, uuid=f"{uuid}-{n}"))
        return admitted
    return create


def _live(db: Database) -> int:
    with db.reader() as conn:
        return usage.count(conn, "p", "u").project.instances


def test_creates_in_one_group_commit_never_pass_the_limit_together(db: Database) -> None:
    # One transaction for all of them: the committer is held by the first change
    # until every create is queued behind it.
    committer = GroupCommit(db, max_batch=64)
    queued = threading.Event()
    limits = {**ROOMY, "instances": 5}
    try:
        held = committer.write_later(lambda conn: queued.wait(30))
        answers = [committer.write_later(_create(limits, f"c{n}", 2)) for n in range(4)]
        queued.set()
        assert held.result(timeout=60)
        results = [answer.result(timeout=60) for answer in answers]
    finally:
        committer.stop()
    # 2 + 2 fit under 5; the third and fourth would each take the project past it.
    assert results[:2] == [2, 2]
    assert all(isinstance(refused, engine.OverQuota) for refused in results[2:])
    assert str(results[2]) == ("Quota exceeded for instances: Requested 2, but already "
                               "used 4 of 5 instances")
    assert _live(db) == 4


def test_nothing_kept_reaches_the_next_transaction(db: Database, tmp_path: Path) -> None:
    # The committer's connection is kept between its transactions (its info with it):
    # a count kept in one must not answer in the next, after another process's
    # servers (another Database on the same database) or a rolled-back insert.
    committer = GroupCommit(db)
    other = Database(db.url)

    def counted(conn: Connection) -> int:
        return usage.count(conn, "p", "u").project.instances

    def insert_then_fail(conn: Connection) -> None:
        assert counted(conn) == 2
        store.insert_server(conn, _record("undone"))
        assert counted(conn) == 3  # kept, and the insert added
        raise RuntimeError("rolled back")

    try:
        assert committer.write(counted) == 0
        with other.writer() as writer:
            for uuid in ("a", "b"):
                store.insert_server(writer.conn, _record(uuid))
        assert committer.write(counted) == 2
        with pytest.raises(RuntimeError):
            committer.write(insert_then_fail)
        assert committer.write(counted) == 2
        # Nor a reader that gets a writer's connection from the pool (PostgreSQL's).
        with db.writer() as writer:
            assert counted(writer.conn) == 2
        with other.writer() as writer:
            store.insert_server(writer.conn, _record("c"))
        with db.reader() as conn:
            assert memo.of(conn) is None
            assert counted(conn) == 3
    finally:
        committer.stop()
        other.dispose()


def test_a_count_in_a_transaction_follows_its_inserts_deletes_and_resizes(
        db: Database) -> None:
    delete_done = machine.transition("delete.done")
    resized, resizing = flavor_change()
    deleting = next(s for s in paths() if delete_done.allows(*s))
    bring(db, "doomed", deleting)
    bring(db, "growing", resizing)
    with db.writer() as writer:
        conn = writer.conn
        before = usage.count(conn, "p", "u")
        assert before.project == usage.ServerUsage(2, 2, 1024)
        store.insert_server(conn, _record("new", vcpus=4))
        store.insert_server(conn, _record("theirs", user="v", vcpus=8))
        assert usage.count(conn, "p", "u") == usage.ProjectUsage(
            usage.ServerUsage(4, 14, 2048), usage.ServerUsage(3, 6, 1536))
        # Counted without the user's part, and then the user's part again.
        assert usage.count(conn, "p", "u", per_user=False).project == usage.ServerUsage(
            4, 14, 2048)
        operation = hold(conn, "doomed", operation_of(delete_done))
        assert store.apply(conn, delete_done, "doomed",
                           store.ServerChanges(deleted_at=utcnow()),
                           fence=store.Fence(operation.id, OWNER)) is store.Applied.APPLIED
        assert usage.count(conn, "p", "u").project == usage.ServerUsage(3, 13, 1536)
        operation = hold(conn, "growing", operation_of(resized))
        assert store.apply(conn, resized, "growing",
                           store.ServerChanges(flavor=Flavor("big", 6, 6144, 1)),
                           fence=store.Fence(operation.id, OWNER)) is store.Applied.APPLIED
        assert usage.count(conn, "p", "u").project == usage.ServerUsage(3, 18, 7168)
    with db.reader() as conn:  # what a fresh count reads
        assert usage.count(conn, "p", "u").project == usage.ServerUsage(3, 18, 7168)


def test_limits_changed_in_the_transaction_are_read_again(db: Database) -> None:
    conf = load_config([], [("quota", "cores", 7)])
    with db.writer() as writer:
        assert engine.limits(writer.conn, conf, "p", "u").project[engine.R.CORES] == 7
        stored.set_defaults(writer.conn, {"cores": 9})
        assert engine.limits(writer.conn, conf, "p", "u").project[engine.R.CORES] == 9
        stored.set_limits(writer.conn, "p", "u", {"cores": 3})
        assert engine.limits(writer.conn, conf, "p", "u").user[engine.R.CORES] == 3
        stored.delete_limits(writer.conn, "p", "u")
        assert engine.limits(writer.conn, conf, "p", "u").user[engine.R.CORES] == 9


def test_one_count_and_one_limits_read_per_transaction_on_sqlite(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'api.sqlite'}")
    migration.upgrade(db)
    statements: list[str] = []
    creates = [_create(ROOMY, f"c{n}", 1) for n in range(5)]
    try:
        with db.writer() as writer:
            # What SQLite itself ran, whichever way each statement went to it.
            driver = writer.conn.connection.driver_connection
            driver.set_trace_callback(statements.append)
            try:
                assert [create(writer.conn) for create in creates] == [1] * 5
            finally:
                driver.set_trace_callback(None)
    finally:
        db.dispose()
    assert sum("FROM server_tallies" in sql for sql in statements) == 1
    assert sum("FROM quota_classes" in sql for sql in statements) == 1


def test_the_quota_options_are_read_once_per_configuration() -> None:
    first = load_config([], [("quota", "instances", 3)])
    assert options(first) is options(first)
    assert options(first).defaults[engine.R.INSTANCES] == 3 and options(first).enforced
    second = load_config([], [("quota", "instances", 4),
                              ("quota", "driver", "nova.quota.NoopQuotaDriver")])
    assert options(second).defaults[engine.R.INSTANCES] == 4
    assert not options(second).enforced
