"""Group commit: the state changes of many servers written in one transaction.

Why: under a burst of boots, each conductor worker wrote its servers' transitions in
transactions of its own, and on SQLite (one writer at a time) those transactions
queued behind each other: the write lock was held 80% of the time, each holder
slowed by the other threads it shares the interpreter with, and boots per second
stopped at what one writer could commit. Here the workers hand their changes to one
committer thread, which writes whatever has queued up in a single transaction and commits once;
every worker then gets its own change's answer (a change that fails makes the batch
be written again change by change, so that it fails alone). Nothing is reported
done before it is committed: a worker waits for the commit that holds its change.

Each change is a function of the connection, run in the committer's transaction in
the order the changes arrived.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from sqlalchemy.engine import Connection

from moorage.db.database import Database

LOG = logging.getLogger(__name__)

T = TypeVar("T")

Change = Callable[[Connection], Any]


class GroupCommit:
    """A committer thread writing queued changes together, ``max_batch`` at most."""

    def __init__(self, database: Database, *, max_batch: int = 128,
                 name: str = "group-commit") -> None:
        self.database = database
        self.max_batch = max_batch
        self._queue: list[tuple[Change, Future[Any]]] = []
        self._ready = threading.Condition()
        self._stopping = False
        # On PostgreSQL, one connection for all the batches (not a pool checkout and
        # its ping, a round trip, per batch); dropped when a batch fails.
        self._kept = database.kept_connection()
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)
        self._thread.start()

    def write(self, change: Callable[[Connection], T]) -> T:
        """Run ``change`` in a committed transaction; its result, or its exception."""
        future: Future[T] = Future()
        with self._ready:
            if self._stopping:
                raise RuntimeError("the group committer is stopped")
            self._queue.append((change, future))
            self._ready.notify()
        return future.result()

    def write_later(self, change: Change) -> Future[Any]:
        """Queue ``change`` without waiting: it is committed before any change queued
        after it, with the same answer (a Future)."""
        future: Future[Any] = Future()
        with self._ready:
            if self._stopping:
                raise RuntimeError("the group committer is stopped")
            self._queue.append((change, future))
            self._ready.notify()
        return future

    def stop(self) -> None:
        """Write what is queued, then stop."""
        with self._ready:
            self._stopping = True
            self._ready.notify()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._stopping:
                    self._ready.wait()
                if not self._queue:
                    return
                batch = self._queue[:self.max_batch]
                del self._queue[:self.max_batch]
            self._commit(batch)

    def _commit(self, batch: list[tuple[Change, Future[Any]]]) -> None:
        """Write the batch in one transaction. Should one change fail, the transaction
        is rolled back and each change written again in a transaction of its own, so
        that it fails alone (savepoints would cost two statements per change)."""
        try:
            with self.database.writer(kept=self._kept) as writer:
                results = [change(writer.conn) for change, _future in batch]
        except Exception as exc:
            if len(batch) == 1:
                batch[0][1].set_exception(exc)
                return
            LOG.info("a group commit of %d changes failed (%s); writing them one by one",
                     len(batch), exc)
            for item in batch:
                self._commit([item])
            return
        for (_change, future), result in zip(batch, results, strict=True):
            future.set_result(result)
