"""PostgreSQL connections are pinged at checkout only after sitting idle: a connection
used a moment ago goes straight to work, one the server dropped while it was idle is
replaced before the caller sees it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from moorage.db import engine
from moorage.db.database import Database
from moorage.db.engine import normalize_url


@pytest.fixture
def pings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every ping the dialect sends, counted."""
    sent: list[int] = []
    original = sa.dialects.postgresql.psycopg.PGDialect_psycopg.do_ping

    def counted(self: Any, dbapi_connection: Any) -> bool:
        sent.append(1)
        return bool(original(self, dbapi_connection))

    monkeypatch.setattr(sa.dialects.postgresql.psycopg.PGDialect_psycopg, "do_ping", counted)
    return sent


@pytest.fixture
def db(postgresql_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Database]:
    monkeypatch.setattr(engine, "PING_AFTER_IDLE", 0.2)
    database = Database(postgresql_url, pool_size=1)
    yield database
    database.dispose()


def _backend_pid(db: Database) -> int:
    with db.reader() as conn:
        return int(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())


def test_a_connection_used_a_moment_ago_is_not_pinged(db: Database, pings: list[int]) -> None:
    first = _backend_pid(db)
    for _ in range(20):
        assert _backend_pid(db) == first
    assert pings == []


def test_an_idle_connection_is_pinged_once(db: Database, pings: list[int]) -> None:
    first = _backend_pid(db)
    time.sleep(0.3)
    assert _backend_pid(db) == first
    assert _backend_pid(db) == first
    assert len(pings) == 1


def test_a_connection_dropped_while_idle_is_replaced(db: Database, pings: list[int],
                                                     postgresql_url: str) -> None:
    first = _backend_pid(db)
    admin = sa.create_engine(normalize_url(postgresql_url), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            assert conn.exec_driver_sql(
                f"SELECT pg_terminate_backend({first})").scalar_one() is True
    finally:
        admin.dispose()
    time.sleep(0.3)
    with db.writer() as w:  # no error: the dead connection never reaches the block
        w.conn.exec_driver_sql("SELECT 1")
    assert _backend_pid(db) != first
    assert len(pings) == 1
