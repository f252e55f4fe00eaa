"""What a write transaction read and will read again, kept until the transaction's
block ends and never beyond it.

Why: a group commit runs many creates in one transaction (``lifecycle.group_commit``),
and each create's quota admission read the same project's limits and counted the
same project's live servers again; a reader that keeps what it read here reads it once
per transaction.

Scope: ``Database.writer`` opens a memo for each write block (``scope``) and drops it
when the block ends, committed or not: a block that raises (its transaction rolled
back, or on SQLite its savepoint) takes its memo with it, and the next block, on the
same kept connection or not, starts empty. Outside a write block ``of`` is None and
nothing is kept.

Coherence is each keeper's: whoever keeps a fact here names every write in a
transaction that could change it, and those writes update or forget it
(``lifecycle.tally``: the store's inserts and transitions of servers;
``api.storage.quotas``: the limits' writers).
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Connection

# The memo's place in the connection's info (the DBAPI connection's, which outlives
# the block: hence the scope's removal).
_INFO_KEY = "moorage.db.memo"


class TransactionMemo:
    """The facts one write block kept, by kind (each keeper's own name)."""

    __slots__ = ("_kinds",)

    def __init__(self) -> None:
        self._kinds: dict[str, dict[Hashable, object]] = {}

    def facts(self, kind: str) -> dict[Hashable, object]:
        """The facts of ``kind`` kept so far, for the keeper to read and write."""
        found = self._kinds.get(kind)
        if found is None:
            found = self._kinds[kind] = {}
        return found

    def forget(self, kind: str) -> None:
        """Drop every fact of ``kind``: the next reader reads the database again."""
        self._kinds.pop(kind, None)


def of(conn: Connection) -> TransactionMemo | None:
    """The memo of the write block ``conn`` is in; None outside one."""
    memo = conn.info.get(_INFO_KEY)
    return memo if isinstance(memo, TransactionMemo) else None


@contextmanager
def scope(conn: Connection) -> Iterator[TransactionMemo]:
    """A fresh memo for the block run on ``conn``, removed when it ends."""
    memo = TransactionMemo()
    conn.info[_INFO_KEY] = memo
    try:
        yield memo
    finally:
        # A connection invalidated in the block takes its info with it.
        with contextlib.suppress(sa.exc.SQLAlchemyError):
            conn.info.pop(_INFO_KEY, None)
