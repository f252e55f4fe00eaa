"""Placement's write transactions: every one stamps what it changed.

``Database.writer()`` is the only way to change placement data. It opens a write
transaction (``BEGIN IMMEDIATE`` on SQLite, so writers queue instead of failing
on lock upgrade), hands out a ``Writer`` that records which providers the
transaction touched, and before committing bumps the global change version and
stamps those providers with it. Because the version row is updated last and
holds a row lock until commit, commit order equals version order, which is what
lets every process's in-memory index catch up by asking for "providers changed
since version N".

The engines, readers and writers are ``moorage.db``'s, as for every service.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.db.clock import utcnow
from moorage.db.database import Database as SharedDatabase
from moorage.db.database import Transaction
from moorage.db.statements import driver_datetime, driver_sql, marks, on_cursor
from moorage.placement.storage import schema


@dataclass(frozen=True)
class UsageWrite:
    """A committed write that changed nothing but what consumers hold: the index of
    the process that made it applies it as it is (``ProviderIndex.written``) instead
    of reading the providers back. ``usage``: (provider id, class id) -> how much
    more it holds (less when negative); ``generations``: provider id -> generations
    it gained, each with ``updated_at`` its new time."""

    version: int
    usage: Mapping[tuple[int, int], int]
    generations: Mapping[int, int]
    updated_at: datetime.datetime


class Writer(Transaction):
    """The state of one write transaction: its connection and what it changed."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn  # Transaction's one field, set here: a call less per write
        self.now = utcnow()
        self.touched: set[int] = set()
        self.deleted: set[int] = set()
        self.new_generations: Counter[int] = Counter()
        self.catalog_changed = False
        self.version: int | None = None
        # What the allocations written changed in each provider's usage, while
        # nothing else changed (None once anything else did).
        self.usage: dict[tuple[int, int], int] | None = {}

    def touch(self, *provider_ids: int) -> None:
        """Record that these providers' state (inventory, traits, usage, ...) changed."""
        self.touched.update(provider_ids)
        self.usage = None

    def allocations_changed(self, usage: Mapping[tuple[int, int], int],
                            bumped: Iterable[int]) -> None:
        """Record that allocations were written: each (provider id, class id) of
        ``usage`` holds that much more (less when negative), and each of ``bumped``
        (whose rows the caller has locked) gets a new generation, as
        ``new_generation`` gives it. A write of nothing else is a ``UsageWrite``."""
        self._stamp(bumped)
        self.touched.update(provider_id for provider_id, _rc in usage)
        if self.usage is not None:
            for key, amount in usage.items():
                self.usage[key] = self.usage.get(key, 0) + amount

    def written(self) -> UsageWrite | None:
        """The committed write as a ``UsageWrite``; None when it changed anything but
        allocations, or nothing (the index reads such a write back)."""
        if self.version is None or self.usage is None or self.catalog_changed \
                or self.deleted:
            return None
        return UsageWrite(self.version, {k: n for k, n in self.usage.items() if n},
                          dict(self.new_generations), self.now)

    def new_generation(self, provider_ids: Iterable[int]) -> None:
        """Give each of these providers (whose rows the caller has locked) one more
        generation, and a new ``updated_at``, at commit: on PostgreSQL in the
        statement that stamps the version, which saves a round trip while every
        writer waits for the version row. Statements run before the commit still
        read the old generation."""
        self._stamp(provider_ids)
        self.usage = None

    def _stamp(self, provider_ids: Iterable[int]) -> None:
        """One more generation at commit for each of these providers, stamped."""
        ids = set(provider_ids)
        self.new_generations.update(ids)
        self.touched.update(ids)

    def delete(self, provider_id: int) -> None:
        """Record that this provider was deleted, for the indexes of every process."""
        self.deleted.add(provider_id)
        self.touched.discard(provider_id)
        self.usage = None

    def change_catalog(self) -> None:
        """Record that a trait, resource class or consumer type was created or deleted."""
        self.catalog_changed = True
        self.usage = None

    def before_commit(self) -> None:
        """Bump the global version and stamp what changed. Runs last, just before commit."""
        if not (self.touched or self.deleted or self.catalog_changed):
            return
        touched = sorted(self.touched - self.deleted)
        generations = {rp: n for rp, n in self.new_generations.items()
                       if rp not in self.deleted}
        if self.conn.dialect.name == "postgresql":
            # One round trip: the version row stays locked (every writer waits for
            # it) from this statement to the COMMIT, so the fewer between, the better.
            [(version,)] = on_cursor(
                self.conn, _BUMP_AND_STAMP_CATALOG if self.catalog_changed else _BUMP_AND_STAMP,
                {"ids": touched, "generations": list(generations),
                 "increments": list(generations.values()), "now": self.now}).rows
        else:
            # Driver SQL on the transaction's DBAPI connection: these run in every
            # write transaction, and SQLAlchemy's compiling of their IN lists cost
            # more than SQLite's running them.
            by_increment: dict[int, list[int]] = {}
            for rp, n in sorted(generations.items()):
                by_increment.setdefault(n, []).append(rp)
            now = driver_datetime(self.conn.dialect, self.now)
            for n, ids in by_increment.items():
                for chunk in _chunks(ids):
                    driver_sql(self.conn, f"{_NEW_GENERATIONS_SQLITE}({marks(chunk)})",
                               (n, now, *chunk))
            [(version,)] = driver_sql(
                self.conn, _BUMP_CATALOG_SQLITE if self.catalog_changed else _BUMP_SQLITE).rows
            for chunk in _chunks(touched):
                driver_sql(self.conn, f"{_STAMP_SQLITE}({marks(chunk)})", (version, *chunk))
        self.version = int(version)
        if self.deleted:
            tomb = schema.deleted_providers
            gone = sorted(self.deleted)
            self.conn.execute(sa.delete(tomb).where(tomb.c.provider_id.in_(gone)))
            self.conn.execute(
                sa.insert(tomb), [{"provider_id": pid, "change_version": version} for pid in gone]
            )


# Built once: they run in every write transaction.
# SQLite's, completed by the IN list's placeholders (``marks``).
_NEW_GENERATIONS_SQLITE = ("UPDATE resource_providers SET generation = generation + ?, "
                           "updated_at = ? WHERE id IN ")
_BUMP_SQLITE = "UPDATE placement_state SET version = version + 1 WHERE id = 1 RETURNING version"
_BUMP_CATALOG_SQLITE = ("UPDATE placement_state SET version = version + 1, "
                        "catalog_version = version + 1 WHERE id = 1 RETURNING version")
_STAMP_SQLITE = "UPDATE resource_providers SET change_version = ? WHERE id IN "


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


def _chunks(ids: list[int], size: int = 500) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


class Database(SharedDatabase[Writer]):
    """Placement's database: its write transactions are ``Writer``s."""

    def __init__(self, url: str, *, sqlite_synchronous: bool = True, pool_size: int = 10,
                 group_commit: bool = False) -> None:
        super().__init__(url, transaction=Writer, sqlite_synchronous=sqlite_synchronous,
                         pool_size=pool_size, group_commit=group_commit)

    def state_versions(self) -> tuple[int, int]:
        """(version, catalog_version) as last committed.

        Asked before every read of the index, so it skips SQLAlchemy and runs
        one statement on a dedicated autocommit DBAPI connection.
        """
        row = self.poll("SELECT version, catalog_version FROM placement_state WHERE id = 1")
        return int(row[0]), int(row[1])
