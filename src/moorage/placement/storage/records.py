"""Provider records: the full state of providers as the in-memory index holds it.

``load_changes`` reads what changed since a version, in one snapshot, with a
fixed handful of queries whatever the number of providers.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.placement.storage import schema

_rp = schema.resource_providers


@dataclass(frozen=True, slots=True)
class Inventory:
    """One resource class of one provider."""

    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float

    @property
    def capacity(self) -> int:
        """What may be allocated in all: (total - reserved) * allocation_ratio."""
        return int((self.total - self.reserved) * self.allocation_ratio)

    def admits(self, amount: int) -> bool:
        """Whether one allocation of ``amount`` respects min_unit, max_unit and step_size."""
        return (
            self.min_unit <= amount <= self.max_unit and amount % self.step_size == 0
        )


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


def _select_for(ids: list[int] | None, column: sa.ColumnElement[int]) -> Iterable[
    sa.ColumnElement[bool] | None
]:
    if ids is None:
        yield None
        return
    for chunk in _chunks(ids):
        yield column.in_(chunk)


def load_changes(
    conn: Connection, since: int, trait_names: dict[int, str], rc_names: dict[int, str]
) -> Changes:
    """Providers changed (or deleted) after version ``since``, read in ``conn``'s snapshot."""
    state = schema.placement_state
    version, catalog_version = conn.execute(
        sa.select(state.c.version, state.c.catalog_version).where(state.c.id == 1)
    ).one()
    tomb = schema.deleted_providers
    # SELECT provider_id FROM deleted_providers WHERE change_version > :since
    deleted = list(
        conn.execute(sa.select(tomb.c.provider_id).where(tomb.c.change_version > since)).scalars()
    )
    # SELECT ... FROM resource_providers WHERE change_version > :since
    rows = conn.execute(
        sa.select(
            _rp.c.id, _rp.c.uuid, _rp.c.name, _rp.c.generation, _rp.c.parent_provider_id,
            _rp.c.root_provider_id, _rp.c.created_at, _rp.c.updated_at,
        ).where(_rp.c.change_version > since)
    ).all()
    records = {
        r.id: ProviderRecord(
            id=r.id, uuid=r.uuid, name=r.name, generation=r.generation,
            parent_id=r.parent_provider_id, root_id=r.root_provider_id or r.id,
            created_at=r.created_at, updated_at=r.updated_at,
        )
        for r in rows
    }
    if records:
        _attach_details(conn, records, None if since == 0 else sorted(records), trait_names,
                        rc_names)
    return Changes(int(version), int(catalog_version), deleted, list(records.values()))


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
    rpt = schema.resource_provider_traits
    rpa = schema.resource_provider_aggregates
    agg = schema.placement_aggregates
    inv = schema.inventories
    alloc = schema.allocations
    for cond in _select_for(ids, rpt.c.resource_provider_id):
        # SELECT resource_provider_id, trait_id FROM resource_provider_traits [WHERE rp IN (...)]
        query = sa.select(rpt.c.resource_provider_id, rpt.c.trait_id)
        for rp_id, trait_id in conn.execute(query if cond is None else query.where(cond)):
            traits[rp_id].add(trait_names[trait_id])
    for cond in _select_for(ids, rpa.c.resource_provider_id):
        # SELECT rpa.resource_provider_id, agg.uuid FROM rpa JOIN placement_aggregates agg
        query = sa.select(rpa.c.resource_provider_id, agg.c.uuid).join_from(
            rpa, agg, rpa.c.aggregate_id == agg.c.id
        )
        for rp_id, agg_uuid in conn.execute(query if cond is None else query.where(cond)):
            aggs[rp_id].add(agg_uuid)
    for cond in _select_for(ids, inv.c.resource_provider_id):
        # SELECT resource_provider_id, resource_class_id, total, ... FROM inventories
        query = sa.select(
            inv.c.resource_provider_id, inv.c.resource_class_id, inv.c.total, inv.c.reserved,
            inv.c.min_unit, inv.c.max_unit, inv.c.step_size, inv.c.allocation_ratio,
        )
        for row in conn.execute(query if cond is None else query.where(cond)):
            record = records.get(row[0])
            if record is not None:
                record.inventories[rc_names[row[1]]] = Inventory(
                    row[2], row[3], row[4], row[5], row[6], float(row[7])
                )
    for cond in _select_for(ids, alloc.c.resource_provider_id):
        # SELECT resource_provider_id, resource_class_id, SUM(used) FROM allocations
        # GROUP BY resource_provider_id, resource_class_id
        usage_query = sa.select(
            alloc.c.resource_provider_id, alloc.c.resource_class_id, sa.func.sum(alloc.c.used)
        ).group_by(alloc.c.resource_provider_id, alloc.c.resource_class_id)
        rows = conn.execute(usage_query if cond is None else usage_query.where(cond)).all()
        for rp_id, rc_id, used in rows:
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
