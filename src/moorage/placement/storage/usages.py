"""What a project (or one of its users) consumes in total, for GET /usages.

Sums of allocations by resource class over the consumers of a project, read in
one snapshot. From microversion 1.38 the sums are grouped by consumer type, with
the number of distinct consumers of each type.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, TypeVarTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.placement.storage import schema
from moorage.placement.storage.consumers import UNKNOWN_TYPE

_alloc = schema.allocations
_consumers = schema.consumers
_projects = schema.projects
_users = schema.users
_rc = schema.resource_classes
_ct = schema.consumer_types

# Pseudo types of GET /usages?consumer_type=: every consumer together, or those
# without a type.
ALL_TYPES = "all"


Columns = TypeVarTuple("Columns")


def _owned(query: sa.Select[*Columns], project_id: str, user_id: str | None
           ) -> sa.Select[*Columns]:
    """Restrict ``query`` (over allocations) to the consumers of a project (and user)."""
    query = (
        query.join(_consumers, _consumers.c.uuid == _alloc.c.consumer_id)
        .join(_projects, _projects.c.id == _consumers.c.project_id)
        .where(_projects.c.external_id == project_id)
    )
    if user_id:
        query = query.join(_users, _users.c.id == _consumers.c.user_id).where(
            _users.c.external_id == user_id
        )
    return query


def totals(conn: Connection, project_id: str, user_id: str | None = None) -> dict[str, int]:
    """Resource class -> amount used by the project's (and user's) consumers."""
    # SELECT rc.name, SUM(a.used) FROM allocations a JOIN resource_classes rc ...
    # JOIN consumers c ... JOIN projects p ... [JOIN users u ...]
    # WHERE p.external_id = :project [AND u.external_id = :user] GROUP BY rc.name
    query = _owned(
        sa.select(_rc.c.name, sa.func.sum(_alloc.c.used))
        .select_from(_alloc).join(_rc, _rc.c.id == _alloc.c.resource_class_id),
        project_id, user_id,
    ).group_by(_rc.c.name)
    return {name: int(used) for name, used in conn.execute(query)}


def totals_by_type(
    conn: Connection, project_id: str, user_id: str | None = None,
    consumer_type: str | None = None,
) -> dict[str, dict[str, int]]:
    """Consumer type -> {resource class -> amount, "consumer_count": n}.

    ``consumer_type`` keeps one type; ``all`` reports every consumer under "all" and
    ``unknown`` keeps the consumers without a type.
    """
    together = consumer_type == ALL_TYPES
    # Grouped by type name (NULL: no type), unless all consumers count together.
    keys: list[sa.ColumnElement[str | None]] = [] if together else [_ct.c.name]

    # Its rows: the type's name (unless all consumers count together), then ``columns``.
    def select(*columns: sa.ColumnElement[str] | sa.ColumnElement[int]
               ) -> sa.Select[*tuple[Any, ...]]:
        query = _owned(sa.select(*keys, *columns).select_from(_alloc), project_id, user_id)
        query = query.outerjoin(_ct, _ct.c.id == _consumers.c.consumer_type_id)
        if consumer_type == UNKNOWN_TYPE:
            query = query.where(_consumers.c.consumer_type_id.is_(None))
        elif consumer_type is not None and not together:
            query = query.where(_ct.c.name == consumer_type)
        return query

    # SELECT [ct.name,] rc.name, SUM(a.used) FROM allocations a JOIN consumers c ...
    # JOIN projects p ... [JOIN users u ...] LEFT JOIN consumer_types ct ...
    # JOIN resource_classes rc ... WHERE ... GROUP BY [ct.name,] rc.name
    sums = (
        select(_rc.c.name, sa.func.sum(_alloc.c.used))
        .join(_rc, _rc.c.id == _alloc.c.resource_class_id)
        .group_by(*keys, _rc.c.name)
    )
    # SELECT [ct.name,] COUNT(DISTINCT a.consumer_id) FROM ... [GROUP BY ct.name]
    counts = select(sa.func.count(sa.distinct(_alloc.c.consumer_id))).group_by(*keys)

    def label(type_name: str | None) -> str:
        """The key of a row led by ``type_name`` (not a type's name when all count together)."""
        return ALL_TYPES if together else (type_name or UNKNOWN_TYPE)

    found: dict[str, dict[str, int]] = defaultdict(dict)
    for row in conn.execute(sums):
        found[label(row[0])][row[-2]] = int(row[-1])
    for row in conn.execute(counts):
        if label(row[0]) in found:
            found[label(row[0])]["consumer_count"] = int(row[-1])
    return dict(found)
