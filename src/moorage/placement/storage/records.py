"""Provider records: the full state of providers as the in-memory index holds it.

``load_changes`` reads what changed since a version, in one snapshot, with a
fixed handful of queries whatever the number of providers.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.model.inventory import Inventory
from moorage.placement.storage import schema

__all__ = ["Changes", "Inventory", "ProviderRecord", "load_changes"]

_rp = schema.resource_providers


@dataclass(slots=True)
class ProviderRecord:
    """Everything about one provider but its allocations' consumers."""

    id: int
    uuid: str
    name: str
    generation: int
    parent_id: int | None
    root_id: int
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


def _chunks(ids: list[int], size: int = 900) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


_state = schema.placement_state
_tomb = schema.deleted_providers
_rpt = schema.resource_provider_traits
_rpa = schema.resource_provider_aggregates
_agg = schema.placement_aggregates
_inv = schema.inventories
_alloc = schema.allocations
_IDS: sa.BindParameter[list[int]] = sa.bindparam("ids", expanding=True)
_SINCE: sa.BindParameter[int] = sa.bindparam("since")

# Built once: a reader catches up after every write it has not seen.
# SELECT version, catalog_version FROM placement_state WHERE id = 1
_STATE = sa.select(_state.c.version, _state.c.catalog_version).where(_state.c.id == 1)
# SELECT provider_id FROM deleted_providers WHERE change_version > :since
_DELETED = sa.select(_tomb.c.provider_id).where(_tomb.c.change_version > _SINCE)
# SELECT id, uuid, ... FROM resource_providers WHERE change_version > :since
_CHANGED = sa.select(
    _rp.c.id, _rp.c.uuid, _rp.c.name, _rp.c.generation, _rp.c.parent_provider_id,
    _rp.c.root_provider_id, _rp.c.created_at, _rp.c.updated_at,
).where(_rp.c.change_version > _SINCE)
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

# The same four, restricted to some providers (WHERE resource_provider_id IN (:ids)).
_DETAILS_ALL = (_TRAITS, _AGGREGATES, _INVENTORIES, _USAGES)
_DETAILS_OF = (
    _TRAITS.where(_rpt.c.resource_provider_id.in_(_IDS)),
    _AGGREGATES.where(_rpa.c.resource_provider_id.in_(_IDS)),
    _INVENTORIES.where(_inv.c.resource_provider_id.in_(_IDS)),
    _USAGES.where(_alloc.c.resource_provider_id.in_(_IDS)),
)


def load_changes(
    conn: Connection, since: int, trait_names: dict[int, str], rc_names: dict[int, str]
) -> Changes:
    """Providers changed (or deleted) after version ``since``, read in ``conn``'s snapshot."""
    version, catalog_version = conn.execute(_STATE).one()
    deleted = list(conn.execute(_DELETED, {"since": since}).scalars())
    records = {
        r.id: ProviderRecord(
            id=r.id, uuid=r.uuid, name=r.name, generation=r.generation,
            parent_id=r.parent_provider_id, root_id=r.root_provider_id or r.id,
            created_at=r.created_at, updated_at=r.updated_at,
        )
        for r in conn.execute(_CHANGED, {"since": since})
    }
    if records:
        _attach_details(conn, records, None if since == 0 else sorted(records), trait_names,
                        rc_names)
    return Changes(int(version), int(catalog_version), deleted, list(records.values()))


def _detail_rows(conn: Connection, which: int, ids: list[int] | None) -> Iterator[Any]:
    """Rows of one detail query, for all providers (``ids`` None) or for ``ids``."""
    if ids is None:
        yield from conn.execute(_DETAILS_ALL[which])
        return
    for chunk in _chunks(ids):
        yield from conn.execute(_DETAILS_OF[which], {"ids": chunk})


def _attach_details(
    conn: Connection,
    records: dict[int, ProviderRecord],
    ids: list[int] | None,
    trait_names: dict[int, str],
    rc_names: dict[int, str],
) -> None:
    """Fill traits, aggregates, inventories and usages; ``ids`` None means all providers."""
    traits: dict[int, set[str]] = defaultdict(set)
    aggs: dict[int, set[str]] = defaultdict(set)
    for rp_id, trait_id in _detail_rows(conn, 0, ids):
        traits[rp_id].add(trait_names[trait_id])
    for rp_id, agg_uuid in _detail_rows(conn, 1, ids):
        aggs[rp_id].add(agg_uuid)
    for row in _detail_rows(conn, 2, ids):
        record = records.get(row[0])
        if record is not None:
            record.inventories[rc_names[row[1]]] = Inventory(
                row[2], row[3], row[4], row[5], row[6], float(row[7])
            )
    for rp_id, rc_id, used in _detail_rows(conn, 3, ids):
        record = records.get(rp_id)
        if record is not None:
            record.usages[rc_names[rc_id]] = int(used)
    interned: dict[frozenset[str], frozenset[str]] = {}
    for rp_id, record in records.items():
        # Many providers carry the same trait set: share one frozenset between them.
        t = frozenset(traits.get(rp_id, ()))
        record.traits = interned.setdefault(t, t)
        a = frozenset(aggs.get(rp_id, ()))
        record.aggregates = interned.setdefault(a, a)
