"""Engines: the URLs operators write, SQLite's pragmas, PostgreSQL's pool and its idle
ping, and the connection a writer that runs one transaction at a time keeps."""

from __future__ import annotations

import contextlib
import sqlite3
import time

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection, StaticPool

# Bytes of a SQLite database file mapped into memory per connection (address space,
# not memory: the pages are the kernel's page cache, shared).
_MMAP_SIZE = 1 << 30

# The execution option of a connection that writes: on SQLite its BEGIN is
# ``BEGIN IMMEDIATE``, so that writers queue for the lock instead of failing to upgrade.
WRITE_OPTION = "moorage_write"

# A pooled PostgreSQL connection idle for less than this is handed out without a
# ping. SQLAlchemy's pool_pre_ping pings at every checkout: a round trip per
# transaction, 7% of placement's time registering a fleet. A connection used this
# recently is almost surely alive, and should the server have gone away in between,
# the statement fails, SQLAlchemy invalidates the pool and the next checkout
# reconnects. HikariCP's aliveBypassWindowMs (500 ms) is the anchor.
PING_AFTER_IDLE = 0.5
_IDLE_SINCE = "moorage_idle_since"


def normalize_url(url: str) -> str:
    """Map the URLs operators write to the drivers Moorage ships with.

    ``postgresql://`` and ``postgres://`` use psycopg 3; SQLite URLs are kept.
    """
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


def url_problem(url: str) -> str | None:
    """What is wrong with a database URL for Moorage, or None: a URL of another
    database than SQLite or PostgreSQL, or no URL at all."""
    allowed = "use sqlite:///PATH or postgresql://USER:PASSWORD@HOST/DBNAME"
    try:
        backend = sa.engine.make_url(normalize_url(url)).get_backend_name()
    except sa.exc.ArgumentError:
        return f"not a database URL (the value is not shown: it may hold a password); {allowed}"
    if backend not in ("sqlite", "postgresql"):
        return f"unsupported database URL {redacted(url)!r}: {allowed}"
    return None


def redacted(url: str) -> str:
    """A database URL without its password, for messages."""
    return sa.engine.make_url(url).render_as_string(hide_password=True)


def sqlite_file(url: str) -> str | None:
    """The file of a SQLite URL; None for an in-memory database."""
    database = sa.engine.make_url(url).database
    return None if database in (None, "", ":memory:") else str(database)


# A session left in a transaction that sends nothing for this long is ended by the
# server, and its locks with it. Moorage never waits inside a transaction (no call to
# another service between BEGIN and COMMIT): such a session belongs to a process that
# was paused (SIGSTOP, a stalled VM) or lost, and its row locks (a conductor's fence on
# an operation, say) would otherwise hold up every other process until it came back.
IDLE_IN_TRANSACTION = "-c idle_in_transaction_session_timeout=10000"


def make_engine(url: str, *, sqlite_synchronous: bool, pool_size: int) -> Engine:
    """The engine of a normalized URL: on PostgreSQL a pool pinged only after idling
    (``PING_AFTER_IDLE``), on SQLite connections in WAL mode that begin their own
    transactions."""
    if sa.engine.make_url(url).get_backend_name() == "postgresql":
        engine = sa.create_engine(url, pool_size=pool_size, max_overflow=pool_size,
                                  connect_args={"options": IDLE_IN_TRANSACTION})
        _ping_when_idle(engine, PING_AFTER_IDLE)
        return engine
    in_memory = sqlite_file(url) is None
    options: dict[str, object] = {"connect_args": {"check_same_thread": False, "timeout": 30}}
    if in_memory:
        options["poolclass"] = StaticPool
    engine = sa.create_engine(url, **options)
    synchronous = "FULL" if sqlite_synchronous else "NORMAL"

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
        # Let us issue BEGIN ourselves (pysqlite's implicit BEGIN is deferred).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        if not in_memory:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        if not in_memory:
            # Read pages through a shared mapping: each connection's own page
            # cache is dropped whenever another connection writes, and the
            # re-reads were 10,000 pread() calls a second in a compute API
            # process under a burst of boots.
            cursor.execute(f"PRAGMA mmap_size={_MMAP_SIZE}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # On the DBAPI connection: SQLAlchemy's execution path cost several times
        # what SQLite takes to run the BEGIN.
        conn.connection.driver_connection.execute(  # type: ignore[union-attr]
            "BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE_OPTION)
            else "BEGIN")

    return engine


def _ping_when_idle(engine: Engine, idle: float) -> None:
    """Ping a pooled connection at checkout only when it sat idle ``idle`` seconds or
    more; a dead one is replaced before the caller sees it (SQLAlchemy retries the
    checkout after a DisconnectionError)."""

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry,
                     _proxy: PoolProxiedConnection) -> None:
        since = record.info.get(_IDLE_SINCE)  # None: new (the info goes with it)
        if since is None or time.monotonic() - since < idle:
            return
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as exc:
            if not engine.dialect.is_disconnect(exc, dbapi_connection, None):
                raise
            alive = False
        if not alive:
            raise sa.exc.DisconnectionError("the pooled connection is gone")


class KeptConnection:
    """A write connection kept between the transactions of a caller that runs one
    at a time (a group commit's writers, a committer thread): opened when first
    needed, closed after a failed transaction so that the next gets a fresh one."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._conn: Connection | None = None

    def connection(self) -> Connection:
        if self._conn is None:
            self._conn = self._engine.connect().execution_options(**{WRITE_OPTION: True})
        return self._conn

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
