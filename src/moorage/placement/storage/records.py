"""Provider records: the full state of providers as the in-memory index holds it.

``load_all`` reads every provider, in one snapshot, with a fixed handful of queries
whatever their number; ``changes_since`` reads what changed since a version in a
single statement (its own snapshot, one round trip), which is what an index pays
after every write it has not seen.
"""

from __future__ import annotations

import datetime
import enum
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.db.statements import Statement, datetime_from_driver
from moorage.model.inventory import Inventory
from moorage.placement.storage import schema
from moorage.placement.storage.providers import ProviderRow

__all__ = ["Changes", "Inventory", "ProviderRecord", "changes_since", "load_all", "versions"]

_rp = schema.resource_providers


@dataclass(slots=True)
class ProviderRecord(ProviderRow):
    """Everything about one provider but its allocations' consumers."""

    created_at: datetime.datetime | None
    updated_at: datetime.datetime | None
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()
    inventories: dict[str, Inventory] = field(default_factory=dict)
    usages: dict[str, int] = field(default_factory=dict)
    # Rendered JSON fragments of this snapshot (a record is replaced, never changed,
    # when its provider changes, so the cache can never be stale).
    fragments: dict[object, bytes] = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_root(self) -> bool:
        return self.parent_id is None

    def used(self, resource_class: str) -> int:
        return self.usages.get(resource_class, 0)


@dataclass(frozen=True)
class Changes:
    """What a refresh must apply: new versions, deleted ids, changed providers."""

    version: int
    catalog_version: int
    deleted: list[int]
    changed: list[ProviderRecord]


_state = schema.placement_state
_tomb = schema.deleted_providers
_rpt = schema.resource_provider_traits
_rpa = schema.resource_provider_aggregates
_agg = schema.placement_aggregates
_inv = schema.inventories
_alloc = schema.allocations
_SINCE: sa.BindParameter[int] = sa.bindparam("since")

# Built once.
# SELECT version, catalog_version FROM placement_state WHERE id = 1
_STATE = sa.select(_state.c.version, _state.c.catalog_version).where(_state.c.id == 1)
# SELECT id, uuid, ... FROM resource_providers
_PROVIDERS = sa.select(
    _rp.c.id, _rp.c.uuid, _rp.c.name, _rp.c.generation, _rp.c.parent_provider_id,
    _rp.c.root_provider_id, _rp.c.created_at, _rp.c.updated_at,
)
# SELECT resource_provider_id, trait_id FROM resource_provider_traits
_TRAITS = sa.select(_rpt.c.resource_provider_id, _rpt.c.trait_id)
# SELECT rpa.resource_provider_id, agg.uuid FROM rpa JOIN placement_aggregates agg
_AGGREGATES = sa.select(_rpa.c.resource_provider_id, _agg.c.uuid).join_from(
    _rpa, _agg, _rpa.c.aggregate_id == _agg.c.id)
# SELECT resource_provider_id, resource_class_id, total, ... FROM inventories
_INVENTORIES = sa.select(
    _inv.c.resource_provider_id, _inv.c.resource_class_id, _inv.c.total, _inv.c.reserved,
    _inv.c.min_unit, _inv.c.max_unit, _inv.c.step_size, _inv.c.allocation_ratio,
)
# SELECT resource_provider_id, resource_class_id, SUM(used) FROM allocations
# GROUP BY resource_provider_id, resource_class_id
_USAGES = sa.select(
    _alloc.c.resource_provider_id, _alloc.c.resource_class_id, sa.func.sum(_alloc.c.used)
).group_by(_alloc.c.resource_provider_id, _alloc.c.resource_class_id)

def versions(conn: Connection) -> tuple[int, int]:
    """(version, catalog_version) in ``conn``'s snapshot."""
    version, catalog_version = conn.execute(_STATE).one()
    return int(version), int(catalog_version)


def load_all(conn: Connection, trait_names: dict[int, str], rc_names: dict[int, str]
             ) -> Changes:
    """Every provider, read in ``conn``'s snapshot (start-up: one query per table)."""
    version, catalog_version = conn.execute(_STATE).one()
    records = {
        r.id: ProviderRecord(
            id=r.id, uuid=r.uuid, name=r.name, generation=r.generation,
            parent_id=r.parent_provider_id, root_id=r.root_provider_id or r.id,
            created_at=r.created_at, updated_at=r.updated_at,
        )
        for r in conn.execute(_PROVIDERS)
    }
    traits: dict[int, set[str]] = defaultdict(set)
    aggs: dict[int, set[str]] = defaultdict(set)
    for rp_id, trait_id in conn.execute(_TRAITS):
        traits[rp_id].add(trait_names[trait_id])
    for rp_id, agg_uuid in conn.execute(_AGGREGATES):
        aggs[rp_id].add(agg_uuid)
    for row in conn.execute(_INVENTORIES):
        record = records.get(row[0])
        if record is not None:
            record.inventories[rc_names[row[1]]] = Inventory(
                row[2], row[3], row[4], row[5], row[6], float(row[7]))
    for rp_id, rc_id, used in conn.execute(_USAGES):
        record = records.get(rp_id)
        if record is not None:
            record.usages[rc_names[rc_id]] = int(used)
    _set_traits_and_aggregates(records, traits, aggs)
    return Changes(int(version), int(catalog_version), [], list(records.values()))


class _Kind(enum.IntEnum):
    """What a row of the changes statement is (its first column)."""

    STATE = 0
    DELETED = 1
    PROVIDER = 2
    TRAIT = 3
    AGGREGATE = 4
    INVENTORY = 5
    USAGE = 6


# The changes statement's columns after the kind, typed once for every branch of the
# UNION (a branch leaves the columns it has no use for NULL); read by position.
if TYPE_CHECKING:
    _Columns = tuple[object, ...]
_SLOTS: tuple[tuple[str, type[sa.BigInteger | sa.Float[float] | sa.String | sa.DateTime]], ...] = (
    ("id", sa.BigInteger), ("n1", sa.BigInteger), ("n2", sa.BigInteger),
    ("n3", sa.BigInteger), ("n4", sa.BigInteger), ("n5", sa.BigInteger),
    ("n6", sa.BigInteger), ("f", sa.Float), ("s1", sa.String), ("s2", sa.String),
    ("t1", sa.DateTime), ("t2", sa.DateTime),
)


def _tagged(kind: _Kind, **columns: sa.ColumnElement[object]) -> sa.Select[*_Columns]:
    """One branch of the changes statement: ``kind`` and its columns in their slots."""
    unknown = columns.keys() - {name for name, _ in _SLOTS}
    assert not unknown, unknown
    # Only the NULLs are cast (a CAST of a text timestamp would mangle it on SQLite);
    # the result takes its types from the first branch.
    return sa.select(sa.literal_column(str(int(kind)), sa.Integer).label("kind"), *(
        columns[name].label(name) if name in columns
        else sa.cast(sa.null(), type_).label(name)
        for name, type_ in _SLOTS))


# The ids of the providers changed since :since. Each branch below reads its rows
# by ``provider IN (this)``, not by a join: a join let SQLite's planner scan a whole
# table in its index order (every allocation of the cloud, to group them) and look
# each row's provider up, so that every catch-up cost more as servers were added;
# IN makes it read the changed providers' rows by their index.
_CHANGED_IDS = sa.select(_rp.c.id).where(_rp.c.change_version > _SINCE).scalar_subquery()
# SELECT 0, version, catalog_version FROM placement_state WHERE id = 1
# UNION ALL SELECT 1, provider_id FROM deleted_providers WHERE change_version > :since
# UNION ALL SELECT 2, id, generation, ... FROM resource_providers WHERE change_version > :since
# UNION ALL SELECT 3, resource_provider_id, trait_id FROM resource_provider_traits
#   WHERE resource_provider_id IN (SELECT id FROM resource_providers
#                                  WHERE change_version > :since)
# UNION ALL the same for aggregates (4), inventories (5) and usages (6, SUM(used) per class)
_CHANGES = sa.union_all(
    _tagged(_Kind.STATE, n1=_state.c.version, n2=_state.c.catalog_version)
    .where(_state.c.id == 1),
    _tagged(_Kind.DELETED, id=_tomb.c.provider_id).where(_tomb.c.change_version > _SINCE),
    _tagged(_Kind.PROVIDER, id=_rp.c.id, n1=_rp.c.generation, n2=_rp.c.parent_provider_id,
            n3=_rp.c.root_provider_id, s1=_rp.c.uuid, s2=_rp.c.name, t1=_rp.c.created_at,
            t2=_rp.c.updated_at).where(_rp.c.change_version > _SINCE),
    _tagged(_Kind.TRAIT, id=_rpt.c.resource_provider_id, n1=_rpt.c.trait_id)
    .where(_rpt.c.resource_provider_id.in_(_CHANGED_IDS)),
    _tagged(_Kind.AGGREGATE, id=_rpa.c.resource_provider_id, s1=_agg.c.uuid)
    .join_from(_rpa, _agg, _rpa.c.aggregate_id == _agg.c.id)
    .where(_rpa.c.resource_provider_id.in_(_CHANGED_IDS)),
    _tagged(_Kind.INVENTORY, id=_inv.c.resource_provider_id, n1=_inv.c.resource_class_id,
            n2=_inv.c.total, n3=_inv.c.reserved, n4=_inv.c.min_unit, n5=_inv.c.max_unit,
            n6=_inv.c.step_size, f=_inv.c.allocation_ratio)
    .where(_inv.c.resource_provider_id.in_(_CHANGED_IDS)),
    _tagged(_Kind.USAGE, id=_alloc.c.resource_provider_id, n1=_alloc.c.resource_class_id,
            n2=sa.func.sum(_alloc.c.used))
    .where(_alloc.c.resource_provider_id.in_(_CHANGED_IDS))
    .group_by(_alloc.c.resource_provider_id, _alloc.c.resource_class_id),
)


# Run on the driver, outside any transaction too (``Statement``'s snapshot): for the
# one provider a claim changed, SQLAlchemy's execution and result machinery cost 190
# µs of a catch-up's 300, the statement 120.
_CHANGES_STATEMENT = Statement(_CHANGES, sqlite_driver=True, snapshot=True)


def changes_since(conn: Connection, since: int, catalog_version: int,
                  trait_names: dict[int, str], rc_names: dict[int, str]) -> Changes | None:
    """Providers changed (or deleted) after version ``since``, in one statement: its
    own snapshot, whether or not ``conn`` is in a transaction. None when the
    catalogue is no longer at ``catalog_version`` (the names of its trait and class
    ids are then not known here)."""
    state: tuple[int, int] | None = None
    deleted: list[int] = []
    records: dict[int, ProviderRecord] = {}
    traits: dict[int, set[int]] = defaultdict(set)
    aggs: dict[int, set[str]] = defaultdict(set)
    inventories: list[tuple[int, int, Inventory]] = []
    usages: list[tuple[int, int, int]] = []
    # Unpacked by position and compared with plain ints: a catch-up reads a changed
    # provider's every trait row, and the enum's members and the row's attributes,
    # looked up by name at each row, cost more than the statement.
    trait, provider, inventory, usage, aggregate, gone = (
        int(_Kind.TRAIT), int(_Kind.PROVIDER), int(_Kind.INVENTORY), int(_Kind.USAGE),
        int(_Kind.AGGREGATE), int(_Kind.DELETED))
    dialect = conn.dialect
    for kind, rp_id, n1, n2, n3, n4, n5, n6, f, s1, s2, t1, t2 in _CHANGES_STATEMENT.run(
            conn, {"since": since}):
        if kind == trait:
            traits[rp_id].add(n1)
        elif kind == usage:
            usages.append((rp_id, n1, int(n2)))
        elif kind == inventory:
            inventories.append((rp_id, n1, Inventory(n2, n3, n4, n5, n6, float(f))))
        elif kind == provider:
            records[rp_id] = ProviderRecord(
                id=rp_id, uuid=s1, name=s2, generation=n1, parent_id=n2,
                root_id=n3 or rp_id, created_at=datetime_from_driver(dialect, t1),
                updated_at=datetime_from_driver(dialect, t2))
        elif kind == aggregate:
            aggs[rp_id].add(s1)
        elif kind == gone:
            deleted.append(rp_id)
        else:
            state = (int(n1), int(n2))
    assert state is not None, "placement_state has its one row from the first migration on"
    if state[1] != catalog_version:
        return None
    for rp_id, rc_id, held in inventories:
        record = records.get(rp_id)
        if record is not None:
            record.inventories[rc_names[rc_id]] = held
    for rp_id, rc_id, used in usages:
        record = records.get(rp_id)
        if record is not None:
            record.usages[rc_names[rc_id]] = used
    named = {rp_id: {trait_names[t] for t in ids} for rp_id, ids in traits.items()}
    _set_traits_and_aggregates(records, named, aggs)
    return Changes(state[0], catalog_version, deleted, list(records.values()))


def _set_traits_and_aggregates(records: dict[int, ProviderRecord],
                               traits: Mapping[int, set[str]],
                               aggs: Mapping[int, set[str]]) -> None:
    interned: dict[frozenset[str], frozenset[str]] = {}
    for rp_id, record in records.items():
        # Many providers carry the same trait set: share one frozenset between them.
        t = frozenset(traits.get(rp_id, ()))
        record.traits = interned.setdefault(t, t)
        a = frozenset(aggs.get(rp_id, ()))
        record.aggregates = interned.setdefault(a, a)
