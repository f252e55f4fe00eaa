"""What consumers are recorded with: projects, users and consumer types.

Projects and users are external identifiers (Keystone's) that placement records
on first use and never deletes. Consumer types (``INSTANCE``, ``MIGRATION``, ...)
are likewise created on first use, from microversion 1.38. The consumers
themselves are written by the claim (storage/allocations.py): a consumer exists
while it holds allocations.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import sqlalchemy as sa

from moorage.db.statements import insert_if_absent
from moorage.placement.storage import schema
from moorage.placement.storage.database import Writer

_types = schema.consumer_types

# The name under which consumers without a type are reported (upstream's alias).
UNKNOWN_TYPE = "unknown"


@dataclass(frozen=True, slots=True)
class ConsumerRow:
    """A stored consumer; its project, user and type as row ids."""

    id: int
    uuid: str
    generation: int
    project_id: int
    user_id: int
    consumer_type_id: int | None


def _external_id_query(table: sa.Table) -> sa.Select[str, int]:
    # SELECT external_id, id FROM <table> WHERE external_id IN (...)
    return sa.select(table.c.external_id, table.c.id).where(
        table.c.external_id.in_(sa.bindparam("names", expanding=True))
    )


# SELECT name, id FROM consumer_types WHERE name IN (...)
_FIND_TYPES: sa.Select[str, int] = sa.select(_types.c.name, _types.c.id).where(
    _types.c.name.in_(sa.bindparam("names", expanding=True))
)
# Key, in a connection's info, of (transaction, names it inserted).
_UNCOMMITTED = "moorage.uncommitted_names"
# (table, the column its names are in, the query that maps names to ids)
_NAMED = {
    "projects": (schema.projects, "external_id", _external_id_query(schema.projects)),
    "users": (schema.users, "external_id", _external_id_query(schema.users)),
    "consumer_types": (_types, "name", _FIND_TYPES),
}


def _ensure_ids(w: Writer, kind: str, names: Collection[str]) -> tuple[dict[str, int], bool]:
    """Name -> id in one of the tables of names that placement only ever adds to
    (projects, users, consumer types), inserting the names not seen before; and
    whether any was inserted.

    Rows of these tables are never deleted or renamed, so an id read once stays
    right: each pooled connection remembers the ids it read that were already
    committed, and a claim by a known project of a known type costs no statement.
    """
    table, column, query = _NAMED[kind]
    known: dict[str, int] = w.conn.info.setdefault(f"moorage.{kind}", {})
    found = {name: known[name] for name in names if name in known}
    unknown = [name for name in names if name not in found]
    if not unknown:
        return found, False
    # Names this transaction inserted are not committed yet: not to be remembered.
    transaction = w.conn.get_transaction()
    mine: tuple[object, set[tuple[str, str]]] | None = w.conn.info.get(_UNCOMMITTED)
    if mine is None or mine[0] is not transaction:
        mine = w.conn.info[_UNCOMMITTED] = (transaction, set())
    read = {name: id_ for name, id_ in w.conn.execute(query, {"names": unknown})}
    known.update((name, id_) for name, id_ in read.items() if (kind, name) not in mine[1])
    found.update(read)
    missing = [name for name in unknown if name not in read]
    for name in missing:
        # INSERT INTO <table> (<column>, created_at) VALUES (...) ON CONFLICT DO NOTHING
        if insert_if_absent(w.conn, table, {column: name, "created_at": w.now}):
            mine[1].add((kind, name))
    if missing:
        found.update({name: id_ for name, id_ in w.conn.execute(query, {"names": missing})})
    return found, bool(missing)


def ensure_projects(w: Writer, names: Collection[str]) -> dict[str, int]:
    """Project external id -> row id, recording the projects not seen before."""
    return _ensure_ids(w, "projects", names)[0]


def ensure_users(w: Writer, names: Collection[str]) -> dict[str, int]:
    """User external id -> row id, recording the users not seen before."""
    return _ensure_ids(w, "users", names)[0]


def ensure_types(w: Writer, names: Collection[str]) -> dict[str, int]:
    """Consumer type name -> id, creating the types not seen before."""
    found, created = _ensure_ids(w, "consumer_types", names)
    if created:
        w.change_catalog()
    return found
