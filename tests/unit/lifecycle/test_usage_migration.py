"""Migration 0011 gives the servers already recorded their flavor's vcpus and
memory_mb, which the quota's count sums (on both backends)."""

from __future__ import annotations

import dataclasses

import sqlalchemy as sa
from alembic import command

from moorage.api.storage import migration
from moorage.db.database import Database
from moorage.lifecycle import store, usage
from moorage.model.flavor import Flavor
from tests.lifecycle_paths import new_record


def test_0011_fills_the_sizes_of_the_servers_there_are(db: Database) -> None:
    config = migration.MIGRATIONS._config()
    with db.engine.begin() as conn:  # the database as it was before 0011
        meta = sa.MetaData()
        meta.reflect(conn)
        meta.drop_all(conn)
        config.attributes["connection"] = conn
        command.upgrade(config, "0010")
    for uuid, vcpus, memory in (("s1", 3, 1536), ("s2", 5, 4096)):
        row = store._to_row(dataclasses.replace(new_record(uuid),
                                                flavor=Flavor("f", vcpus, memory, 1)))
        del row["vcpus"], row["memory_mb"]  # not there yet
        with db.engine.begin() as conn:
            conn.execute(sa.text(f"INSERT INTO servers ({', '.join(row)}) VALUES "
                                 f"({', '.join(':' + name for name in row)})"), row)
    migration.upgrade(db)
    with db.reader() as conn:
        assert usage.count(conn, "p", "u").project == usage.ServerUsage(2, 8, 5632)
