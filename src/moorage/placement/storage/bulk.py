"""Bulk loading: write many described providers in one transaction.

For sample clouds, large benchmarks and tests, where creating 100,000 providers
through the API (three requests each) would take minutes. The rows are the same
the API writes, and the change version is stamped the same way, so a running
service's index picks them up like any other write.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa

from moorage.placement.storage import schema
from moorage.placement.storage.database import Database
from moorage.placement.storage.records import Inventory

LOAD_PROJECT = "00000000-0000-0000-0000-00000000b01c"
LOAD_USER = "00000000-0000-0000-0000-00000000b01c"


@dataclass
class ProviderSpec:
    """A provider to load; ``parent`` names an earlier spec's uuid."""

    name: str
    uuid: str = field(default_factory=lambda: str(uuidlib.uuid4()))
    parent: str | None = None
    inventories: dict[str, Inventory] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()
    # Amount already used per class, written as one allocation of a load consumer.
    used: dict[str, int] = field(default_factory=dict)
    generation: int = 1


def _chunks(
    rows: Sequence[dict[str, object]], size: int = 5000
) -> Iterable[Sequence[dict[str, object]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def load(db: Database, specs: Sequence[ProviderSpec]) -> None:
    """Insert ``specs`` (parents before children) with their inventories, traits,
    aggregates and usage. Unknown trait or resource class names raise ValueError."""
    with db.writer() as w:
        conn = w.conn
        trait_ids = dict(conn.execute(sa.select(schema.traits.c.name, schema.traits.c.id)).all())
        rc_ids = dict(
            conn.execute(
                sa.select(schema.resource_classes.c.name, schema.resource_classes.c.id)
            ).all()
        )
        for spec in specs:
            unknown = (spec.traits - trait_ids.keys()) | (spec.inventories.keys() - rc_ids.keys())
            if unknown:
                raise ValueError(f"provider {spec.name}: unknown names {sorted(unknown)}")
        ids = _insert_providers(conn, specs, w.now)
        agg_uuids = sorted({a for s in specs for a in s.aggregates})
        agg_tbl = schema.placement_aggregates
        existing = dict(conn.execute(sa.select(agg_tbl.c.uuid, agg_tbl.c.id)).all())
        missing = [{"uuid": a, "created_at": w.now} for a in agg_uuids if a not in existing]
        if missing:
            conn.execute(sa.insert(agg_tbl), missing)
            existing = dict(conn.execute(sa.select(agg_tbl.c.uuid, agg_tbl.c.id)).all())
        inventories = [
            {
                "resource_provider_id": ids[s.uuid],
                "resource_class_id": rc_ids[rc],
                **inv.fields(),
                "created_at": w.now,
            }
            for s in specs
            for rc, inv in s.inventories.items()
        ]
        traits = [
            {"resource_provider_id": ids[s.uuid], "trait_id": trait_ids[t]}
            for s in specs
            for t in s.traits
        ]
        aggs = [
            {"resource_provider_id": ids[s.uuid], "aggregate_id": existing[a]}
            for s in specs
            for a in s.aggregates
        ]
        for table, rows in (
            (schema.inventories, inventories),
            (schema.resource_provider_traits, traits),
            (schema.resource_provider_aggregates, aggs),
        ):
            for chunk in _chunks(rows):
                conn.execute(sa.insert(table), chunk)
        _load_usage(w.conn, specs, ids, rc_ids, w.now)
        w.touch(*ids.values())


def _depth(specs: Sequence[ProviderSpec]) -> dict[str, int]:
    by_uuid = {s.uuid: s for s in specs}
    depth: dict[str, int] = {}
    for spec in specs:
        level, parent = 0, spec.parent
        while parent is not None:
            level += 1
            parent = by_uuid[parent].parent if parent in by_uuid else None
        depth[spec.uuid] = level
    return depth


def _insert_providers(conn: sa.Connection, specs: Sequence[ProviderSpec], now: object
                      ) -> dict[str, int]:
    """Insert the providers level by level, in batches; their ids by uuid."""
    rp = schema.resource_providers
    depth = _depth(specs)
    ids: dict[str, int] = {}
    roots: dict[str, int] = {}
    for level in range(max(depth.values(), default=-1) + 1):
        batch = [s for s in specs if depth[s.uuid] == level]
        rows = [
            {"uuid": s.uuid, "name": s.name, "generation": s.generation, "change_version": 0,
             "parent_provider_id": ids[s.parent] if s.parent else None,
             "root_provider_id": roots[s.parent] if s.parent else None,
             "created_at": now, "updated_at": now}
            for s in batch
        ]
        # INSERT INTO resource_providers (...) VALUES ... (batches)
        for chunk in _chunks(rows):
            conn.execute(sa.insert(rp), chunk)
        # SELECT uuid, id FROM resource_providers WHERE uuid IN (...)
        for chunk in _chunks([{"uuid": s.uuid} for s in batch]):
            wanted = [row["uuid"] for row in chunk]
            query = sa.select(rp.c.uuid, rp.c.id).where(rp.c.uuid.in_(wanted))
            ids.update((uuid, rp_id) for uuid, rp_id in conn.execute(query))
        for s in batch:
            roots[s.uuid] = roots[s.parent] if s.parent else ids[s.uuid]
    # UPDATE resource_providers SET root_provider_id = id WHERE root_provider_id IS NULL
    conn.execute(sa.update(rp).where(rp.c.root_provider_id.is_(None))
                 .values(root_provider_id=rp.c.id))
    return ids


def _load_usage(
    conn: sa.Connection,
    specs: Sequence[ProviderSpec],
    ids: dict[str, int],
    rc_ids: dict[str, int],
    now: object,
) -> None:
    usage = [(s, rc, amount) for s in specs for rc, amount in s.used.items() if amount]
    if not usage:
        return
    consumer_uuid = str(uuidlib.uuid4())
    project_id = _ensure(conn, schema.projects, LOAD_PROJECT)
    user_id = _ensure(conn, schema.users, LOAD_USER)
    conn.execute(
        sa.insert(schema.consumers).values(
            uuid=consumer_uuid,
            project_id=project_id,
            user_id=user_id,
            generation=1,
            created_at=now,
            updated_at=now,
        )
    )
    rows = [
        {
            "resource_provider_id": ids[s.uuid],
            "consumer_id": consumer_uuid,
            "resource_class_id": rc_ids[rc],
            "used": amount,
            "created_at": now,
        }
        for s, rc, amount in usage
    ]
    for chunk in _chunks(rows):
        conn.execute(sa.insert(schema.allocations), chunk)


def _ensure(conn: sa.Connection, table: sa.Table, external_id: str) -> int:
    found = conn.execute(sa.select(table.c.id).where(table.c.external_id == external_id)).first()
    if found is not None:
        return int(found[0])
    return int(
        conn.execute(sa.insert(table).values(external_id=external_id)).inserted_primary_key[0]  # type: ignore[index]
    )
