"""``Database``: an engine and the transaction disciplines every service uses.

Readers get a snapshot (``reader()``) or a connection outside any transaction for
one-statement reads (``statement_reader()``); writers get a ``Transaction``
(``writer()``), committed before the block's caller goes on. What a write transaction
carries is the service's: the compute API's and the lifecycle's carry their
connection, placement's (``placement.storage.database.Writer``) also stamps what it
changed before the commit.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.pool import PoolProxiedConnection
from typing_extensions import TypeVar

from moorage.db import memo
from moorage.db.engine import (
    WRITE_OPTION,
    KeptConnection,
    make_engine,
    normalize_url,
    sqlite_file,
    url_problem,
)
from moorage.db.group_commit import SQLiteGroupCommit


class Transaction:
    """One write transaction as ``Database.writer()`` hands it out: its connection.

    A service whose every write must leave a mark at commit extends it, and leaves
    the mark in ``before_commit``."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def before_commit(self) -> None:
        """Runs last in the transaction, just before COMMIT (not when the block raised)."""


W = TypeVar("W", bound=Transaction, default=Transaction, covariant=True)


class Database(Generic[W]):
    """An engine plus the transaction disciplines the services use; ``W``: what its
    write transactions are."""

    def __init__(self, url: str, *,
                 transaction: Callable[[Connection], W] = Transaction,  # type: ignore[assignment]
                 sqlite_synchronous: bool = True, pool_size: int = 10,
                 group_commit: bool = False) -> None:
        """``transaction``: what ``writer()`` hands out (a ``Transaction`` unless the
        service's extends it; mypy does not match this default to ``W``'s own).

        ``group_commit``: on SQLite, let writers that queue up share one COMMIT
        (``SQLiteGroupCommit``). Only for callers that never hold a lock another
        writer's block may wait for while in ``writer()``: a writer waits for the
        writers after it in its batch."""
        problem = url_problem(url)
        if problem is not None:
            raise ValueError(problem)
        self.url = normalize_url(url)
        self.dialect = sa.engine.make_url(self.url).get_backend_name()
        self.engine = make_engine(self.url, sqlite_synchronous=sqlite_synchronous,
                                  pool_size=pool_size)
        self._transaction = transaction
        self._group_commit = (
            SQLiteGroupCommit(self.engine, sqlite_file(self.url),
                              max_batch=32 if group_commit else 1)
            if self.dialect == "sqlite" else None)
        self._poll: PoolProxiedConnection | None = None
        self._poll_lock = threading.Lock()
        self._kept: list[KeptConnection] = []  # handed out by kept_connection()

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
    def writer(self, *, kept: KeptConnection | None = None) -> Iterator[W]:
        """A write transaction; committed before the block's caller goes on, undone
        if the block raises.

        On SQLite the writers of a process share transactions (``SQLiteGroupCommit``):
        the blocks run one after another, each after a batch's first in a savepoint of
        its own, and one COMMIT covers the blocks that queued up meanwhile. On
        PostgreSQL each block is a transaction of its own; the server orders concurrent
        writers itself.

        ``kept``: on PostgreSQL, run the block on that connection, kept between the
        caller's blocks, instead of one checked out of the pool each time (with the
        pool's ping, a round trip to the server per transaction). A block that
        fails drops it; the next opens another.

        Each block has a memo of its own (``moorage.db.memo``), gone when it ends."""
        if self._group_commit is not None:
            with self._group_commit.member() as conn, memo.scope(conn):
                transaction = self._transaction(conn)
                yield transaction
                transaction.before_commit()
            return
        if kept is not None:
            conn = kept.connection()
            try:
                with conn.begin(), memo.scope(conn):
                    transaction = self._transaction(conn)
                    yield transaction
                    transaction.before_commit()
            except BaseException:
                kept.close()
                raise
            return
        with self.engine.connect() as conn:
            conn = conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin(), memo.scope(conn):
                transaction = self._transaction(conn)
                yield transaction
                transaction.before_commit()

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
        assert row is not None, f"no row: {sql}"
        return tuple(row)

    def _open_poll_connection(self) -> PoolProxiedConnection:
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
