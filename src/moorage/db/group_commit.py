"""Group commit on SQLite: the writers of one process taking turns in one transaction,
committed once (``SQLiteGroupCommit`` says why and how)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from moorage.db.engine import KeptConnection


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


class SQLiteGroupCommit:
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
