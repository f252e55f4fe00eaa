"""Keeping PostgreSQL's planner statistics fresh while a cloud registers.

Why: each write of a provider's traits, inventories or allocations checks its
foreign keys with a plan that PostgreSQL made, and keeps (a cached generic plan),
when the tables were nearly empty: a sequential scan of resource_providers.
Autovacuum's ANALYZE, after which the plans are made again, runs at most once a
minute (``autovacuum_naptime``) and only after a tenth of a table changed. So while
10,000 hosts registered with a fresh database, every write scanned the growing
providers table, and PostgreSQL's CPU grew from a quarter to four fifths of a core
within the minute (``bench/e2e.py --hosts 10000``). Every ``interval`` seconds this
asks which of placement's tables changed more since their last ANALYZE than they
hold (they about doubled, or were never analyzed) and analyzes those: a few times
while a cloud is registered, seldom if ever in a steady state, where autovacuum
gets there first.
"""

from __future__ import annotations

import logging
import threading

import sqlalchemy as sa

from moorage.placement.storage.database import Database

LOG = logging.getLogger(__name__)

# The tables every provider write reaches, and that grow with the cloud.
TABLES = ("resource_providers", "resource_provider_traits", "resource_provider_aggregates",
          "inventories", "allocations", "consumers")
# Below this many changes a table is left to autovacuum.
FLOOR = 500

# SELECT relname FROM pg_stat_user_tables WHERE relname = ANY(:tables)
#   AND n_mod_since_analyze >= GREATEST(:floor, n_live_tup)
_STALE = sa.text(
    "SELECT relname FROM pg_stat_user_tables WHERE relname = ANY(:tables) "
    "AND n_mod_since_analyze >= GREATEST(:floor, n_live_tup) ORDER BY relname")


def stale_tables(db: Database) -> list[str]:
    """Placement's tables that changed more than they hold since their last ANALYZE."""
    with db.statement_reader() as conn:
        return [str(name) for name in conn.execute(
            _STALE, {"tables": list(TABLES), "floor": FLOOR}).scalars()]


def analyze(db: Database, tables: list[str]) -> None:
    """ANALYZE ``tables`` (names from TABLES only)."""
    unknown = set(tables) - set(TABLES)
    if unknown:
        raise ValueError(f"not a table of placement's: {sorted(unknown)}")
    with db.engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        conn.exec_driver_sql("ANALYZE " + ", ".join(tables))


class StatisticsKeeper:
    """A thread that analyzes placement's stale tables every ``interval`` seconds
    (PostgreSQL only: SQLite keeps no plans across statements)."""

    def __init__(self, db: Database, interval: float = 5.0) -> None:
        self.db = db
        self.interval = interval
        self.analyzed = 0  # ANALYZE statements run, for the tests and the log
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> StatisticsKeeper:
        if self.db.dialect == "postgresql":
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name="placement-statistics")
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def keep(self) -> list[str]:
        """One pass: the tables analyzed now."""
        tables = stale_tables(self.db)
        if tables:
            analyze(self.db, tables)
            self.analyzed += 1
            LOG.info("analyzed %s: they changed more since their last ANALYZE than they "
                     "hold", ", ".join(tables))
        return tables

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.keep()
            except sa.exc.ProgrammingError as exc:
                # Typically: the user does not own the tables. Autovacuum still runs.
                LOG.warning("cannot ANALYZE placement's tables, leaving them to "
                            "autovacuum: %s", str(exc).splitlines()[0])
                return
            except Exception as exc:  # the database away for a while: try next time
                LOG.warning("could not check placement's table statistics: %s",
                            str(exc).splitlines()[0])
