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
import functools
import os
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool

from moorage.placement.storage import schema

# Bytes of a SQLite database file mapped into memory per connection (address space,
# not memory: the pages are the kernel's page cache, shared).
_MMAP_SIZE = 1 << 30

_WRITE_OPTION = "moorage_write"

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
        self.new_generations: Counter[int] = Counter()
        self.catalog_changed = False
        self.version: int | None = None

    def touch(self, *provider_ids: int) -> None:
        """Record that these providers' state (inventory, traits, usage, ...) changed."""
        self.touched.update(provider_ids)

    def new_generation(self, provider_ids: Iterable[int]) -> None:
        """Give each of these providers (whose rows the caller has locked) one more
        generation, and a new ``updated_at``, at commit: on PostgreSQL in the
        statement that stamps the version, which saves a round trip while every
        writer waits for the version row. Statements run before the commit still
        read the old generation."""
        ids = set(provider_ids)
        self.new_generations.update(ids)
        self.touched.update(ids)

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
        touched = sorted(self.touched - self.deleted)
        generations = {rp: n for rp, n in self.new_generations.items()
                       if rp not in self.deleted}
        if self.conn.dialect.name == "postgresql":
            # One round trip: the version row stays locked (every writer waits for
            # it) from this statement to the COMMIT, so the fewer between, the better.
            [(version,)] = _on_cursor(
                self.conn, _BUMP_AND_STAMP_CATALOG if self.catalog_changed else _BUMP_AND_STAMP,
                {"ids": touched, "generations": list(generations),
                 "increments": list(generations.values()), "now": self.now}).rows
        else:
            by_increment: dict[int, list[int]] = {}
            for rp, n in sorted(generations.items()):
                by_increment.setdefault(n, []).append(rp)
            for n, ids in by_increment.items():
                # UPDATE resource_providers SET generation = generation + :n,
                # updated_at = :now WHERE id IN (...)
                self.conn.execute(_NEW_GENERATIONS, {"ids": ids, "n": n, "now": self.now})
            # UPDATE placement_state SET version = version + 1 [, catalog_version = ...]
            # WHERE id = 1 RETURNING version
            version = int(self.conn.execute(
                _BUMP_CATALOG if self.catalog_changed else _BUMP).scalar_one())
            for chunk in _chunks(touched):
                # UPDATE resource_providers SET change_version = :v WHERE id IN (...)
                self.conn.execute(_STAMP, {"ids": chunk, "stamp": version})
        self.version = int(version)
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


_NEW_GENERATIONS = (
    sa.update(schema.resource_providers)
    .where(schema.resource_providers.c.id.in_(sa.bindparam("ids", expanding=True)))
    .values(generation=schema.resource_providers.c.generation + sa.bindparam("n"),
            updated_at=sa.bindparam("now"))
)


def _bump_and_stamp(version_values: str) -> str:
    """PostgreSQL's driver SQL that bumps the version, stamps the touched providers and
    gives some of them new generations, in one statement (a data-modifying CTE runs
    whether or not the main query reads it)."""
    return f"""
        WITH bumped AS (
            UPDATE placement_state SET {version_values} WHERE id = 1 RETURNING version
        ), stamped AS (
            UPDATE resource_providers rp
            SET change_version = (SELECT version FROM bumped),
                generation = rp.generation + COALESCE((
                    SELECT g.n FROM unnest(%(generations)s::bigint[],
                                           %(increments)s::integer[]) AS g(id, n)
                    WHERE g.id = rp.id), 0),
                updated_at = CASE WHEN rp.id = ANY(%(generations)s::bigint[]) THEN %(now)s
                             ELSE rp.updated_at END
            WHERE rp.id = ANY(%(ids)s::bigint[])
        )
        SELECT version FROM bumped"""


_BUMP_AND_STAMP = _bump_and_stamp("version = version + 1")
_BUMP_AND_STAMP_CATALOG = _bump_and_stamp(
    "version = version + 1, catalog_version = version + 1")


class Outcome:
    """What a ``Statement`` run did: the rows it counted, the rows it returned."""

    __slots__ = ("rowcount", "rows")

    def __init__(self, rowcount: int, rows: list[Any]) -> None:
        self.rowcount = rowcount
        self.rows = rows

    def first(self) -> Any | None:
        return self.rows[0] if self.rows else None

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)


class Statement:
    """A statement built once, run the cheapest way each backend allows.

    On PostgreSQL it is compiled once to the driver's SQL and run on the DBAPI cursor
    of the connection, inside its transaction: SQLAlchemy's execution path cost more
    CPU than the statement (a server's transition: 138 µs against 44), and the
    compute API runs several per boot. psycopg adapts the values (str, int, bool,
    datetime, None) itself. On SQLite it runs through SQLAlchemy, whose type
    processing writes the timestamps in the form the file's comparisons rely on.
    The statement's IN lists must not be expanding (write ``a = x OR a = y``)."""

    def __init__(self, statement: sa.Update | sa.Insert | sa.Delete | sa.Select[Any]) -> None:
        self.statement = statement
        self._driver: tuple[str, dict[str, Any]] | None = None

    def run(self, conn: Connection, params: dict[str, Any]) -> Outcome:
        if conn.dialect.name != "postgresql":
            result = conn.execute(self.statement, params)
            return Outcome(result.rowcount, list(result) if result.returns_rows else [])
        if self._driver is None:
            compiled = self.statement.compile(dialect=conn.dialect)
            sql = str(compiled)
            if "POSTCOMPILE" in sql:
                raise ValueError("a Statement cannot hold an expanding IN list: " + sql)
            # Values bound in the statement itself (its literals) come with it.
            self._driver = (sql, {k: v for k, v in compiled.params.items()
                                  if v is not None})
        sql, bound = self._driver
        return _on_cursor(conn, sql, {**bound, **params} if bound else params)


def driver_sql(conn: Connection, sql: str, params: Sequence[Any] = ()) -> Outcome:
    """Run SQL written for the driver, with ``?`` placeholders, on either backend: on
    PostgreSQL on the connection's DBAPI cursor (as ``Statement``), on SQLite through
    SQLAlchemy's ``exec_driver_sql``. Errors are the DBAPI's on PostgreSQL
    (``conn.dialect.loaded_dbapi.IntegrityError``...), SQLAlchemy's on SQLite."""
    if conn.dialect.name != "postgresql":
        result = conn.exec_driver_sql(sql, tuple(params))
        return Outcome(result.rowcount, list(result) if result.returns_rows else [])
    return _on_cursor(conn, _pyformat(sql), tuple(params))


@functools.lru_cache(maxsize=512)
def _pyformat(sql: str) -> str:
    return sql.replace("?", "%s")


def _on_cursor(conn: Connection, sql: str, params: Any) -> Outcome:
    """Execute on the DBAPI cursor of ``conn``, inside its transaction."""
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql, params)
        rows = cursor.fetchall() if cursor.description is not None else []
        return Outcome(cursor.rowcount, rows)
    finally:
        cursor.close()


def insert_if_absent(conn: Connection, table: sa.Table, values: dict[str, Any]) -> bool:
    """Insert one row unless one with the same unique key exists; True if inserted.

    ``INSERT ... ON CONFLICT DO NOTHING`` on both backends, so a concurrent writer
    adding the same name (trait, resource class, aggregate) is not an error.
    """
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    insert = dialect.insert(table).values(**values).on_conflict_do_nothing()
    # RETURNING yields no row when the insert was skipped (rowcount is not reliable here).
    return conn.execute(insert.returning(*table.primary_key.columns)).first() is not None


def insert_rows(conn: Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """Insert ``rows`` (dictionaries with the same keys). On PostgreSQL several rows
    go in one multi-row INSERT: executemany sends them in a pipeline, whose
    machinery cost more CPU than the statements (a provider's three inventories,
    its traits). On SQLite, executemany."""
    if not rows:
        return
    if conn.dialect.name != "postgresql" or len(rows) == 1:
        conn.execute(_insert_of(table), rows)
        return
    columns = tuple(rows[0])
    conn.exec_driver_sql(_multi_insert(conn.dialect, table, columns, len(rows)),
                         {f"{column}_{n}": row[column] for n, row in enumerate(rows)
                          for column in columns})


@functools.cache
def _insert_of(table: sa.Table) -> sa.Insert:
    return sa.insert(table)


@functools.lru_cache(maxsize=256)
def _multi_insert(dialect: sa.Dialect, table: sa.Table, columns: tuple[str, ...],
                  rows: int) -> str:
    """INSERT INTO table (columns) VALUES (%(a_0)s, %(b_0)s), (%(a_1)s, ...) ...,
    compiled once per shape (SQLAlchemy does not cache multi-row VALUES)."""
    statement = sa.insert(table).values([
        {column: sa.bindparam(f"{column}_{n}") for column in columns} for n in range(rows)])
    return str(statement.compile(dialect=dialect))


def _chunks(ids: list[int], size: int = 500) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


class _FileTurn:
    """The right to write a SQLite file database among processes: an exclusive
    ``flock`` of ``PATH.writer-lock``, held from a batch's BEGIN to its COMMIT."""

    def __init__(self, path: str | None) -> None:
        self._path = f"{path}.writer-lock" if path else None
        self._fd: int | None = None
        self._pid = 0

    def acquire(self) -> None:
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

    def release(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)


class KeptConnection:
    """A write connection kept between the transactions of a caller that runs one
    at a time (a group commit's writers, a committer thread): opened when first
    needed, closed after a failed transaction so that the next gets a fresh one."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._conn: Connection | None = None

    def connection(self) -> Connection:
        if self._conn is None:
            self._conn = self._engine.connect().execution_options(**{_WRITE_OPTION: True})
        return self._conn

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


class _Batch:
    """One SQLite write transaction shared by the writers of a group commit."""

    def __init__(self, conn: Connection, transaction: sa.engine.RootTransaction) -> None:
        self.conn = conn
        self.transaction = transaction
        self.members = 0
        self.committed = threading.Event()
        self.error: BaseException | None = None


class _Savepoint:
    """A SAVEPOINT run on the DBAPI connection under SQLAlchemy's transaction."""

    def __init__(self, conn: Connection) -> None:
        self._cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        self._cursor.execute("SAVEPOINT writer")

    def commit(self) -> None:
        self._cursor.execute("RELEASE writer")
        self._cursor.close()

    def rollback(self) -> None:
        self._cursor.execute("ROLLBACK TO writer")
        self._cursor.execute("RELEASE writer")
        self._cursor.close()


class _GroupCommit:
    """SQLite writers of one process take turns in one transaction, committed once.

    Why: SQLite has one writer at a time and, with ``synchronous = FULL``, each
    COMMIT waits for the disk. Registering 10,000 hosts (three writes each) spent
    most of its time queued on the write turn and in COMMIT. Here the writers still
    run one after another, each that joins an open batch in a savepoint of its own
    (its failure undoes only its changes; the first one's rolls the batch back), but
    a writer that finishes while others wait for the turn hands the open
    transaction on instead of committing it; the last one commits for all
    (``max_batch`` writers at most). Nothing is reported done before it is
    committed: each writer waits for the COMMIT that holds its changes, and if that
    COMMIT fails, every writer of the batch gets its error.

    Among processes, a batch holds an exclusive ``flock`` beside the database from
    BEGIN to COMMIT, so a writer that finds the database locked does not sleep in
    SQLite's busy handler (1, 2, 5 ... 100 ms) but is woken when the lock is free.
    """

    def __init__(self, engine: Engine, path: str | None, max_batch: int = 32) -> None:
        self._file = _FileTurn(path)
        self._turn = threading.Lock()  # held by the writer running its changes
        self._count_lock = threading.Lock()
        self._waiting = 0  # writers queued for the turn
        self._batch: _Batch | None = None
        # Kept between batches, used by one writer at a time (under the turn):
        # checking a connection out of the pool and back cost a tenth of a compute
        # API's CPU under a burst of boots.
        self._kept = KeptConnection(engine)
        self.max_batch = max_batch

    @contextmanager
    def member(self) -> Iterator[Connection]:
        with self._count_lock:
            self._waiting += 1
        self._turn.acquire()
        with self._count_lock:
            self._waiting -= 1
        try:
            joined = self._batch
            batch = joined or self._open()
            # The first writer of a batch needs no savepoint: should it fail, it rolls
            # the transaction back. Savepoints are the DBAPI's own statements:
            # SQLAlchemy's begin_nested() cost 25% of a small write's CPU.
            savepoint = _Savepoint(batch.conn) if joined is not None else None
        except BaseException:
            self._turn.release()
            raise
        try:
            yield batch.conn
        except BaseException as raised:
            if savepoint is None:
                batch.error = raised  # first in the transaction: roll it back
            else:
                try:
                    savepoint.rollback()
                except BaseException as exc:  # the whole transaction is broken
                    batch.error = exc
            self._end_turn(batch)
            raise
        try:
            if savepoint is not None:
                savepoint.commit()
        except BaseException as exc:
            batch.error = exc
        self._end_turn(batch)
        batch.committed.wait()
        if batch.error is not None:
            raise batch.error

    def _open(self) -> _Batch:
        self._file.acquire()
        try:
            conn = self._kept.connection()
            try:
                batch = _Batch(conn, conn.begin())
            except BaseException:
                self._kept.close()
                raise
        except BaseException:
            self._file.release()
            raise
        self._batch = batch
        return batch

    def close(self) -> None:
        """Close the kept connection (the database is being disposed of)."""
        with self._turn:
            self._kept.close()

    def _end_turn(self, batch: _Batch) -> None:
        """Hand the open batch to a waiting writer, or commit it; release the turn."""
        batch.members += 1
        with self._count_lock:
            hand_on = (self._waiting > 0 and batch.members < self.max_batch
                       and batch.error is None)
        if hand_on:
            self._turn.release()
            return
        self._batch = None
        try:
            if batch.error is None:
                batch.transaction.commit()
            else:
                batch.transaction.rollback()
        except BaseException as exc:
            batch.error = batch.error or exc
            with contextlib.suppress(Exception):
                batch.transaction.rollback()
        finally:
            if batch.error is not None:
                self._kept.close()  # a fresh one for the next batch
            self._file.release()
            self._turn.release()
            batch.committed.set()


def _ping_when_idle(engine: Engine, idle: float) -> None:
    """Ping a pooled connection at checkout only when it sat idle ``idle`` seconds or
    more; a dead one is replaced before the caller sees it (SQLAlchemy retries the
    checkout after a DisconnectionError)."""

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_connection: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
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


class Database:
    """An engine plus the transaction disciplines placement uses."""

    def __init__(self, url: str, *, sqlite_synchronous: bool = True, pool_size: int = 10,
                 group_commit: bool = False) -> None:
        """``group_commit``: on SQLite, let writers that queue up share one COMMIT
        (``_GroupCommit``). Only for callers that never hold a lock another writer's
        block may wait for while in ``writer()``: a writer waits for the writers after
        it in its batch."""
        self.url = normalize_url(url)
        self.dialect = sa.engine.make_url(self.url).get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise ValueError(
                f"unsupported database URL {url!r}: use sqlite:///PATH or "
                "postgresql://USER:PASSWORD@HOST/DBNAME"
            )
        self.engine = self._make_engine(sqlite_synchronous, pool_size)
        self._group_commit = (
            _GroupCommit(self.engine, self._sqlite_file(), max_batch=32 if group_commit else 1)
            if self.dialect == "sqlite" else None)
        self._poll: Any = None
        self._poll_lock = threading.Lock()
        self._kept: list[KeptConnection] = []  # handed out by kept_connection()

    def _sqlite_file(self) -> str | None:
        database = sa.engine.make_url(self.url).database
        return None if database in (None, "", ":memory:") else str(database)

    def _make_engine(self, sqlite_synchronous: bool, pool_size: int) -> Engine:
        if self.dialect == "postgresql":
            engine = sa.create_engine(self.url, pool_size=pool_size, max_overflow=pool_size)
            _ping_when_idle(engine, PING_AFTER_IDLE)
            return engine
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
                "BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITE_OPTION)
                else "BEGIN")

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
    def statement_reader(self) -> Iterator[Connection]:
        """A connection outside any transaction, for reads of one statement each: a
        statement is its own snapshot on both backends, and PostgreSQL is spared the
        BEGIN and COMMIT round trips of ``reader()``."""
        with self.engine.connect() as conn:
            if self.dialect == "postgresql":
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            yield conn

    def kept_connection(self) -> KeptConnection:
        """A connection for ``writer(kept=...)``, kept between the transactions of a
        caller that runs one at a time (a committer thread); closed by ``dispose``."""
        kept = KeptConnection(self.engine)
        self._kept.append(kept)
        return kept

    @contextmanager
    def writer(self, *, kept: KeptConnection | None = None) -> Iterator[Writer]:
        """A write transaction; committed before the block's caller goes on, undone
        if the block raises.

        On SQLite the writers of a process share transactions (``_GroupCommit``):
        the blocks run one after another, each after a batch's first in a savepoint of
        its own, and one COMMIT covers the blocks that queued up meanwhile. On
        PostgreSQL each block is a transaction of its own; the server orders concurrent
        writers itself.

        ``kept``: on PostgreSQL, run the block on that connection, kept between the
        caller's blocks, instead of one checked out of the pool each time (with the
        pool's ping, a round trip to the server per transaction). A block that
        fails drops it; the next opens another."""
        if self._group_commit is not None:
            with self._group_commit.member() as conn:
                writer = Writer(conn)
                yield writer
                writer._finish()
            return
        if kept is not None:
            conn = kept.connection()
            try:
                with conn.begin():
                    writer = Writer(conn)
                    yield writer
                    writer._finish()
            except BaseException:
                kept.close()
                raise
            return
        with self.engine.connect() as conn:
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
        if self._group_commit is not None:
            self._group_commit.close()
        for kept in self._kept:
            kept.close()
        self._kept.clear()
        self.engine.dispose()
