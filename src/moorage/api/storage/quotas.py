"""Quota limits as stored: a project's and its users' own (``quotas``), the defaults
of the quota class ``default`` (``quota_classes``), and the row a project's quota
checks lock (``quota_projects``).

Nothing here counts usage (``moorage.lifecycle.usage`` counts servers, the key pairs'
store its rows) or decides (``moorage.api.quotas``).

In a write transaction a project's limits are read once, and its lock taken once
(``moorage.db.memo``: kept until the transaction's block ends): the creates of one
group commit share them. Coherence: the limits' writers here forget what was kept;
on PostgreSQL another transaction's change of them, committed meanwhile, is read as
if it had committed after this one.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from moorage.api.storage.schema import quota_classes, quota_projects, quotas
from moorage.db import memo
from moorage.db.clock import utcnow
from moorage.db.statements import Statement

# The quota class whose limits are the defaults (nova reads no other).
DEFAULT_CLASS = "default"
# The user_id of a project-wide limit.
WHOLE_PROJECT = ""

# This module's facts in a transaction's memo: the limits read, the projects locked.
_READ_KIND = "quotas.limits"
_LOCKED_KIND = "quotas.locked"


@dataclass(frozen=True)
class StoredLimits:
    """What the database says of one project and one of its users: the default
    class's limits, the project's own and the user's own (resource -> limit)."""

    defaults: Mapping[str, int] = field(default_factory=dict)
    project: Mapping[str, int] = field(default_factory=dict)
    user: Mapping[str, int] = field(default_factory=dict)


# SELECT 0, resource, hard_limit FROM quota_classes WHERE class_name = 'default'
# UNION ALL SELECT CASE WHEN user_id = '' THEN 1 ELSE 2 END, resource, hard_limit
#   FROM quotas WHERE project_id = :b_project AND (user_id = '' OR user_id = :b_user)
_READ = Statement(sa.union_all(
    sa.select(sa.literal(0).label("level"), quota_classes.c.resource,
              quota_classes.c.hard_limit)
    .where(quota_classes.c.class_name == sa.bindparam("b_class")),
    sa.select(sa.case((quotas.c.user_id == WHOLE_PROJECT, 1), else_=2).label("level"),
              quotas.c.resource, quotas.c.hard_limit)
    .where(quotas.c.project_id == sa.bindparam("b_project"),
           sa.or_(quotas.c.user_id == WHOLE_PROJECT,
                  quotas.c.user_id == sa.bindparam("b_user")))).subquery().select(),
    sqlite_driver=True)  # SQLAlchemy's execution path cost more than the statement


def read(conn: Connection, project_id: str, user_id: str | None = None) -> StoredLimits:
    """The stored limits of ``project_id`` (and of ``user_id`` in it), one statement;
    in a write transaction, once."""
    kept = memo.of(conn)
    key = (project_id, user_id or WHOLE_PROJECT)
    if kept is not None:
        found = kept.facts(_READ_KIND).get(key)
        if isinstance(found, StoredLimits):
            return found
    levels: tuple[dict[str, int], dict[str, int], dict[str, int]] = ({}, {}, {})
    for level, resource, limit in _READ.run(conn, {
            "b_class": DEFAULT_CLASS, "b_project": project_id,
            "b_user": user_id or WHOLE_PROJECT}):
        levels[int(level)][str(resource)] = int(limit)
    read_now = StoredLimits(*levels)
    if kept is not None:
        kept.facts(_READ_KIND)[key] = read_now
    return read_now


@functools.lru_cache(maxsize=2)
def _lock_statement(postgresql_dialect: bool) -> Statement:
    # INSERT INTO quota_projects (project_id) VALUES (:project_id)
    #   ON CONFLICT (project_id) DO UPDATE SET project_id = excluded.project_id
    # (the update, even of nothing, locks the row until the transaction ends)
    dialect = postgresql if postgresql_dialect else sqlite
    insert = dialect.insert(quota_projects).values(project_id=sa.bindparam("project_id"))
    return Statement(insert.on_conflict_do_update(
        index_elements=[quota_projects.c.project_id],
        set_={"project_id": insert.excluded.project_id}))


def lock_project(conn: Connection, project_id: str) -> None:
    """Serialise the quota checks of ``project_id`` until the caller's transaction
    ends: on PostgreSQL a row lock on its ``quota_projects`` row (made on first use);
    SQLite's writers already take turns on the database (BEGIN IMMEDIATE), so nothing
    more is needed there. Locked once per transaction: the lock holds to its end."""
    if conn.dialect.name != "postgresql":
        return
    kept = memo.of(conn)
    if kept is not None and project_id in kept.facts(_LOCKED_KIND):
        return
    _lock_statement(True).run(conn, {"project_id": project_id})
    if kept is not None:
        kept.facts(_LOCKED_KIND)[project_id] = True


def _forget_read(conn: Connection) -> None:
    """Limits change: a read later in this transaction reads them again."""
    kept = memo.of(conn)
    if kept is not None:
        kept.forget(_READ_KIND)


def _upsert(conn: Connection, table: sa.Table, keys: Mapping[str, str],
            limits: Mapping[str, int]) -> None:
    _forget_read(conn)
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    now = utcnow()
    for resource, limit in limits.items():
        insert = dialect.insert(table).values(**keys, resource=resource, hard_limit=limit,
                                              created_at=now, updated_at=now)
        conn.execute(insert.on_conflict_do_update(
            index_elements=[*keys, "resource"],
            set_={"hard_limit": limit, "updated_at": now}))


def set_limits(conn: Connection, project_id: str, user_id: str | None,
               limits: Mapping[str, int]) -> None:
    """Set the project's own limits (``user_id`` None) or one user's."""
    _upsert(conn, quotas, {"project_id": project_id, "user_id": user_id or WHOLE_PROJECT},
            limits)


def delete_limits(conn: Connection, project_id: str, user_id: str | None) -> None:
    """Forget a user's own limits, or (``user_id`` None) the project's and all its
    users', as nova's delete does: the defaults apply again."""
    # DELETE FROM quotas WHERE project_id = :p [AND user_id = :u]
    _forget_read(conn)
    statement = quotas.delete().where(quotas.c.project_id == project_id)
    if user_id:
        statement = statement.where(quotas.c.user_id == user_id)
    conn.execute(statement)


def set_defaults(conn: Connection, limits: Mapping[str, int]) -> None:
    """Set limits of the default quota class (over [quota]'s options)."""
    _upsert(conn, quota_classes, {"class_name": DEFAULT_CLASS}, limits)
