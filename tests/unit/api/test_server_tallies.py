"""SQLite's tally of each project's live servers (``server_tallies``, kept by the
triggers of migration 0015) against the servers themselves: what a quota check reads
on SQLite must be what counting them reads, through every state of the lifecycle, a
resize, a deleted row, and a database migrated with servers already in it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from moorage.api.storage import migration
from moorage.db.database import Database
from moorage.lifecycle import store, usage
from moorage.lifecycle.schema import servers
from moorage.model.flavor import Flavor
from tests.lifecycle_paths import OWNER, bring, flavor_change, hold, new_record, operation_of, paths

# What counting the servers reads, per (project, user): the count's own definition.
COUNTED = sa.text("SELECT project_id, user_id, count(*), sum(vcpus), sum(memory_mb) "
                  "FROM servers WHERE status <> 'DELETED' GROUP BY project_id, user_id")
TALLIED = sa.text("SELECT project_id, user_id, instances, cores, ram FROM server_tallies "
                  "WHERE instances <> 0 OR cores <> 0 OR ram <> 0")


def _tallies_match(db: Database) -> dict[tuple[str, str], tuple[int, int, int]]:
    with db.reader() as conn:
        counted = {(p, u): (n, c, r) for p, u, n, c, r in conn.execute(COUNTED)}
        tallied = {(p, u): (n, c, r) for p, u, n, c, r in conn.execute(TALLIED)}
    assert tallied == counted
    return tallied


def test_every_state_of_the_lifecycle_is_tallied_as_counted(db: Database) -> None:
    reached = sorted(paths(), key=str)
    for number, state in enumerate(reached):
        bring(db, f"s{number}", state)
    tallied = _tallies_match(db)
    live = sum(1 for status, _task in reached if status != "DELETED")
    assert 0 < live < len(reached), "some states are deleted ones, most are live"
    assert tallied[("p", "u")][0] == live


def test_a_resize_an_owner_change_and_a_removed_row_are_tallied(db: Database) -> None:
    resized, resizing = flavor_change()
    bring(db, "growing", resizing)
    with db.writer() as writer:
        store.insert_server(writer.conn, dataclasses.replace(
            new_record("theirs"), user_id="v", flavor=Flavor("f", 3, 1024, 1)))
        operation = hold(writer.conn, "growing", operation_of(resized))
        assert store.apply(writer.conn, resized, "growing",
                           store.ServerChanges(flavor=Flavor("big", 6, 6144, 1)),
                           fence=store.Fence(operation.id, OWNER)) is store.Applied.APPLIED
    assert _tallies_match(db) == {("p", "u"): (1, 6, 6144), ("p", "v"): (1, 3, 1024)}
    with db.writer() as writer:  # what no code path does today, but a repair might
        writer.conn.execute(servers.update().where(servers.c.uuid == "theirs")
                            .values(project_id="q"))
        writer.conn.execute(servers.delete().where(servers.c.uuid == "growing"))
    assert _tallies_match(db) == {("q", "v"): (1, 3, 1024)}


def test_the_quota_reads_the_tally_on_sqlite(db: Database) -> None:
    with db.writer() as writer:
        for uuid in ("a", "b"):
            store.insert_server(writer.conn, new_record(uuid))
    statements: list[str] = []
    with db.reader() as conn:
        # What SQLite itself ran: the statements that bypass SQLAlchemy's events too.
        driver = conn.connection.driver_connection
        driver.set_trace_callback(statements.append)
        try:
            assert usage.count(conn, "p", "u") == usage.ProjectUsage(
                usage.ServerUsage(2, 2, 1024), usage.ServerUsage(2, 2, 1024))
        finally:
            driver.set_trace_callback(None)
    assert len(statements) == 1 and "FROM server_tallies" in statements[0]


def test_a_database_migrated_with_servers_in_it_starts_with_their_tally(
        tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'api.sqlite'}")
    config = Config()
    config.set_main_option("script_location", str(migration.MIGRATIONS.scripts))
    with db.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0014")
    with db.writer() as writer:
        for number in range(3):
            store.insert_server(writer.conn, dataclasses.replace(
                new_record(f"old{number}"), user_id=f"u{number % 2}"))
    migration.upgrade(db)
    assert _tallies_match(db) == {("p", "u0"): (2, 2, 1024), ("p", "u1"): (1, 1, 512)}
