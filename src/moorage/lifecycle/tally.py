"""A project's live servers as this write transaction counted them, kept exact while
the store writes servers in it: the creates of one group commit count once.

Why: every create in a group commit runs its own quota admission, and each counted
the project's live servers again (``lifecycle.usage``: on PostgreSQL a statement that
grows with them; on SQLite, which reads its triggers' tally, still a statement), in
the one transaction every boot of the process waits for.

Coherence: an entry is what the transaction's count read, plus every server the
store inserted in the transaction since (``added``, from ``store.insert_server``).
A transition that could change what a server counts (one from or to DELETED, one
that sets its flavor) forgets every entry (``forget``, from ``store.apply``), and
the next count reads again. ``store`` is the servers table's one writer. The entries
live in the transaction's memo (``moorage.db.memo``): gone when its block ends,
committed or rolled back, so none reaches the next transaction.

Other transactions: on SQLite none writes while this one does (one writer). On
PostgreSQL every create of the project waits for the project's lock
(``quota_projects``), which this transaction holds from its first count to its end;
a delete or a resize's end committed meanwhile takes no lock and is read as if it
had committed after this transaction (a delete only frees; a resize's growth was
admitted when it was asked, as nova's).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import Connection

from moorage.db import memo
from moorage.lifecycle.records import ServerRecord

# This module's facts in the transaction's memo.
_KIND = "lifecycle.tally"


@dataclass(frozen=True)
class ServerUsage:
    """Servers, their vCPUs and their MiB of RAM (zero when not counted)."""

    instances: int = 0
    cores: int = 0
    ram: int = 0

    def plus(self, cores: int, ram: int) -> ServerUsage:
        """This and one server more, of ``cores`` and ``ram``."""
        return ServerUsage(self.instances + 1, self.cores + cores, self.ram + ram)


@dataclass(frozen=True)
class ProjectUsage:
    """A project's live servers, and the part of them one of its users owns."""

    project: ServerUsage
    user: ServerUsage


@dataclass(frozen=True)
class Counted:
    """How a project was counted: for which user (``per_user``: the user's part too)
    and whether its cores and RAM (``resources``)."""

    user_id: str
    resources: bool
    per_user: bool


def recall(conn: Connection, project_id: str, counted: Counted) -> ProjectUsage | None:
    """The project's usage as counted ``counted`` in this transaction, kept up to date;
    None when it was not counted so (or outside a write transaction)."""
    kept = memo.of(conn)
    if kept is None:
        return None
    entry = kept.facts(_KIND).get(project_id)
    if isinstance(entry, _Entry) and entry.counted == counted:
        return entry.usage
    return None


def remember(conn: Connection, project_id: str, counted: Counted,
             usage: ProjectUsage) -> None:
    """Keep what a count of the project read, for the rest of the transaction."""
    kept = memo.of(conn)
    if kept is not None:
        kept.facts(_KIND)[project_id] = _Entry(counted, usage)


def added(conn: Connection, record: ServerRecord) -> None:
    """The store inserted ``record``, a live server: its project's entry counts it."""
    kept = memo.of(conn)
    if kept is None:
        return
    facts = kept.facts(_KIND)
    entry = facts.get(record.project_id)
    if isinstance(entry, _Entry):
        facts[record.project_id] = entry.plus(record)


def forget(conn: Connection) -> None:
    """A server's count may have changed: read every project again."""
    kept = memo.of(conn)
    if kept is not None:
        kept.forget(_KIND)


@dataclass(frozen=True)
class _Entry:
    counted: Counted
    usage: ProjectUsage

    def plus(self, record: ServerRecord) -> _Entry:
        """This entry with ``record`` counted, as the count would count it: its cores
        and RAM only where they are counted, in the user's part only for its user."""
        counted = self.counted
        cores, ram = ((record.flavor.vcpus, record.flavor.memory_mb)
                      if counted.resources else (0, 0))
        user = self.usage.user
        if counted.per_user and record.user_id == counted.user_id:
            user = user.plus(cores, ram)
        return _Entry(counted, ProjectUsage(self.usage.project.plus(cores, ram), user))
