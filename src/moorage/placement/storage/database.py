"""Connections and transactions.

``Database.writer()`` is the only way to change placement data. It opens a write
transaction (``BEGIN IMMEDIATE`` on SQLite, so writers queue instead of failing
on lock upgrade), hands out a ``Writer`` that records which providers the
transaction touched, and before committing bumps the global change version and
stamps those providers with it. Because the version row is updated last and
holds a row lock until commit, commit order equals version order, which is what
lets every process's in-memory index catch up by asking for "providers changed
since version N".
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool

from moorage.placement.storage import schema

_WRITE_OPTION = "moorage_write"


def normalize_url(url: str) -> str:
    """Map the URLs operators write to the drivers Moorage ships with.

    ``postgresql://`` and ``postgres://`` use psycopg 3; SQLite URLs are kept.
    """
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


def utcnow() -> datetime.datetime:
    """Naive UTC timestamp, as the timestamp columns store."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)


class Writer:
    """The state of one write transaction: its connection and what it changed."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.now = utcnow()
        self.touched: set[int] = set()
        self.deleted: set[int] = set()
        self.catalog_changed = False
        self.version: int | None = None

    def touch(self, *provider_ids: int) -> None:
        """Record that these providers' state (inventory, traits, usage, ...) changed."""
        self.touched.update(provider_ids)

    def delete(self, provider_id: int) -> None:
        """Record that this provider was deleted, for the indexes of every process."""
        self.deleted.add(provider_id)
        self.touched.discard(provider_id)

    def change_catalog(self) -> None:
        """Record that a trait, resource class or consumer type was created or deleted."""
        self.catalog_changed = True

    def _finish(self) -> None:
        """Bump the global version and stamp what changed. Runs last, just before commit."""
        if not (self.touched or self.deleted or self.catalog_changed):
            return
        # UPDATE placement_state SET version = version + 1 [, catalog_version = ...]
        # WHERE id = 1 RETURNING version
        version = int(self.conn.execute(
            _BUMP_CATALOG if self.catalog_changed else _BUMP).scalar_one())
        self.version = version
        touched = sorted(self.touched - self.deleted)
        for chunk in _chunks(touched):
            # UPDATE resource_providers SET change_version = :v WHERE id IN (...)
            self.conn.execute(_STAMP, {"ids": chunk, "stamp": version})
        if self.deleted:
            tomb = schema.deleted_providers
            gone = sorted(self.deleted)
            self.conn.execute(sa.delete(tomb).where(tomb.c.provider_id.in_(gone)))
            self.conn.execute(
                sa.insert(tomb), [{"provider_id": pid, "change_version": version} for pid in gone]
            )


# Built once: they run in every write transaction.
_state = schema.placement_state
_BUMP = (
    sa.update(_state).where(_state.c.id == 1)
    .values(version=_state.c.version + 1).returning(_state.c.version)
)
_BUMP_CATALOG = (
    sa.update(_state).where(_state.c.id == 1)
    .values(version=_state.c.version + 1, catalog_version=_state.c.version + 1)
    .returning(_state.c.version)
)
_STAMP = (
    sa.update(schema.resource_providers)
    .where(schema.resource_providers.c.id.in_(sa.bindparam("ids", expanding=True)))
    .values(change_version=sa.bindparam("stamp"))
)


def insert_if_absent(conn: Connection, table: sa.Table, values: dict[str, Any]) -> bool:
    """Insert one row unless one with the same unique key exists; True if inserted.

    ``INSERT ... ON CONFLICT DO NOTHING`` on both backends, so a concurrent writer
    adding the same name (trait, resource class, aggregate) is not an error.
    """
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    insert = dialect.insert(table).values(**values).on_conflict_do_nothing()
    # RETURNING yields no row when the insert was skipped (rowcount is not reliable here).
    return conn.execute(insert.returning(*table.primary_key.columns)).first() is not None


def _chunks(ids: list[int], size: int = 500) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


class _WriteTurn:
    """The right to write a SQLite database: a threading lock for this process's
    threads, then (a file database) an exclusive ``flock`` of ``PATH.writer-lock`` for
    this process among the others."""

    def __init__(self, path: str | None) -> None:
        self._lock = threading.Lock()
        self._path = f"{path}.writer-lock" if path else None
        self._fd: int | None = None
        self._pid = 0

    def __enter__(self) -> None:
        self._lock.acquire()
        if self._path is None:
            return
        try:
            if self._fd is None or self._pid != os.getpid():  # reopened after a fork
                self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
                self._pid = os.getpid()
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except OSError:
            # No file lock to be had (a read-only directory...): SQLite's own locking
            # still keeps writers apart, with its busy handler.
            pass

    def __exit__(self, *exc: object) -> None:
        try:
            if self._fd is not None and self._pid == os.getpid():
                with contextlib.suppress(OSError):
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._lock.release()


class Database:
    """An engine plus the transaction disciplines placement uses."""

    def __init__(self, url: str, *, sqlite_synchronous: bool = True, pool_size: int = 10) -> None:
        self.url = normalize_url(url)
        self.dialect = sa.engine.make_url(self.url).get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise ValueError(
                f"unsupported database URL {url!r}: use sqlite:///PATH or "
                "postgresql://USER:PASSWORD@HOST/DBNAME"
            )
        self.engine = self._make_engine(sqlite_synchronous, pool_size)
        self._write_turn: contextlib.AbstractContextManager[Any] = (
            _WriteTurn(self._sqlite_file()) if self.dialect == "sqlite"
            else contextlib.nullcontext())
        self._poll: Any = None
        self._poll_lock = threading.Lock()

    def _sqlite_file(self) -> str | None:
        database = sa.engine.make_url(self.url).database
        return None if database in (None, "", ":memory:") else str(database)

    def _make_engine(self, sqlite_synchronous: bool, pool_size: int) -> Engine:
        if self.dialect == "postgresql":
            return sa.create_engine(
                self.url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True
            )
        url = sa.engine.make_url(self.url)
        in_memory = url.database in (None, "", ":memory:")
        kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False, "timeout": 30}}
        if in_memory:
            kwargs["poolclass"] = StaticPool
        engine = sa.create_engine(self.url, **kwargs)
        synchronous = "FULL" if sqlite_synchronous else "NORMAL"

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            # Let us issue BEGIN ourselves (pysqlite's implicit BEGIN is deferred).
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            if not in_memory:
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA synchronous={synchronous}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            if conn.get_execution_options().get(_WRITE_OPTION):
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                conn.exec_driver_sql("BEGIN")

        return engine

    @contextmanager
    def reader(self) -> Iterator[Connection]:
        """A read-only transaction; a consistent snapshot on both backends."""
        with self.engine.connect() as conn:
            if self.dialect == "postgresql":
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    @contextmanager
    def writer(self) -> Iterator[Writer]:
        """A write transaction; commits on success, rolls back on any exception.

        On SQLite writers take turns on a lock first: SQLite has one writer at a time,
        and a writer that finds the database locked sleeps in SQLite's busy handler
        for 1, 2, 5 ... 100 ms before it looks again, which under a burst of writes
        costs far more than the writes themselves. The threads of a process queue on
        a threading lock, the processes on an advisory lock on a file beside the
        database (``DB.writer-lock``), both woken at once when the writer before
        them is done."""
        with self._write_turn, self.engine.connect() as conn:
            conn = conn.execution_options(**{_WRITE_OPTION: True})
            with conn.begin():
                writer = Writer(conn)
                yield writer
                writer._finish()

    def state_versions(self) -> tuple[int, int]:
        """(version, catalog_version) as last committed.

        Asked before every read of the index, so it skips SQLAlchemy and runs
        one statement on a dedicated autocommit DBAPI connection.
        """
        row = self.poll("SELECT version, catalog_version FROM placement_state WHERE id = 1")
        return int(row[0]), int(row[1])

    def poll(self, sql: str) -> tuple[Any, ...]:
        """The first row of ``sql`` (a constant query), run on a dedicated autocommit
        DBAPI connection: the cheapest way to ask "what changed?" before a read."""
        with self._poll_lock:
            if self._poll is None:
                self._poll = self._open_poll_connection()
            try:
                cursor = self._poll.cursor()
                cursor.execute(sql)
                row = cursor.fetchone()
                cursor.close()
            except Exception:
                self._close_poll()
                raise
        return tuple(row)

    def _open_poll_connection(self) -> Any:
        raw = self.engine.raw_connection()
        if self.dialect == "postgresql":
            raw.driver_connection.autocommit = True  # type: ignore[union-attr]
        # SQLite connections are already in autocommit mode (isolation_level None).
        return raw

    def _close_poll(self) -> None:
        if self._poll is not None:
            with contextlib.suppress(Exception):
                self._poll.invalidate()
            self._poll = None

    def dispose(self) -> None:
        with self._poll_lock:
            self._close_poll()
        self.engine.dispose()
