"""The reshaper: move inventory and the allocations on it between providers, atomically.

Typically a compute host moves VCPU or VGPU inventory from its root provider to
new child providers, and the allocations of its instances with it. Inventory
cannot be removed while allocations use it, and allocations cannot be made
against inventory that does not exist yet, so, as upstream, the write goes in
three steps inside one transaction:

1. interim inventory: each provider gets the union of what it has and what it is
   to have (the new values win), so both old and new allocations have a place;
2. the allocations of every consumer named are replaced (the claim);
3. final inventory: each provider gets exactly what was asked, which fails if an
   allocation still uses a class being removed.

Each step increments the generations of the providers it writes, as upstream's
does, so clients see the same generations after a reshape.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.placement import errors
from moorage.placement.storage import allocations, inventories, providers, schema
from moorage.placement.storage.allocations import Claim
from moorage.placement.storage.database import Writer
from moorage.placement.storage.errors import ConcurrentUpdate, InvalidData
from moorage.placement.storage.providers import ProviderRow
from moorage.placement.storage.records import Inventory

_inv = schema.inventories
_rc = schema.resource_classes


@dataclass(frozen=True)
class ProviderInventories:
    """The whole inventory a provider is to have, and the generation the client saw."""

    provider_uuid: str
    generation: int
    inventories: Mapping[str, Inventory]


class MissingProvider(InvalidData):
    """An inventory names a provider that does not exist."""

    code = errors.RESOURCE_PROVIDER_NOT_FOUND

    def __init__(self, provider_uuid: str) -> None:
        super().__init__(
            f"Resource provider {provider_uuid} in inventories not found: No resource "
            f"provider with uuid {provider_uuid} found"
        )


def _generation_conflict(uuid: str, actual: int, given: int) -> ConcurrentUpdate:
    return ConcurrentUpdate(
        f"resource provider generation conflict for provider {uuid}: actual: {actual}, "
        f"given: {given}"
    )


def _stored(conn: Connection, provider_id: int) -> dict[str, Inventory]:
    """The provider's inventories as stored, by resource class name."""
    # SELECT rc.name, inv.total, inv.reserved, inv.min_unit, inv.max_unit, inv.step_size,
    # inv.allocation_ratio FROM inventories inv JOIN resource_classes rc ...
    # WHERE inv.resource_provider_id = :id
    rows = conn.execute(
        sa.select(_rc.c.name, _inv.c.total, _inv.c.reserved, _inv.c.min_unit, _inv.c.max_unit,
                  _inv.c.step_size, _inv.c.allocation_ratio)
        .join_from(_inv, _rc, _rc.c.id == _inv.c.resource_class_id)
        .where(_inv.c.resource_provider_id == provider_id)
    )
    return {row[0]: Inventory(row[1], row[2], row[3], row[4], row[5], float(row[6]))
            for row in rows}


def reshape(w: Writer, wanted: Sequence[ProviderInventories], claims: Sequence[Claim]) -> None:
    """Give each provider its new inventory and each consumer its new allocations,
    all or nothing."""
    conn = w.conn
    # Upstream checks the providers and their generations before anything else.
    rows: dict[str, ProviderRow] = {}
    for item in wanted:
        row = providers.find(conn, item.provider_uuid)
        if row is None:
            raise MissingProvider(item.provider_uuid)
        if row.generation != item.generation:
            raise _generation_conflict(item.provider_uuid, row.generation, item.generation)
        rows[item.provider_uuid] = row
    plan = allocations.prepare(w, claims, also_lock=[row.id for row in rows.values()])
    for item in wanted:
        # Now that the providers are locked, nobody can have moved them since.
        current = providers.get(conn, item.provider_uuid)
        if current.generation != item.generation:
            raise _generation_conflict(item.provider_uuid, current.generation, item.generation)
        rows[item.provider_uuid] = current

    for item in wanted:
        if item.inventories:
            row = rows[item.provider_uuid]
            union = {**_stored(conn, row.id), **item.inventories}
            rows[item.provider_uuid] = dataclasses.replace(
                row, generation=inventories.replace(w, row, union)
            )
    allocations.apply(w, plan)
    for item in wanted:
        # The claim's new generations are written at commit (Writer.new_generation),
        # so each row still holds the generation it was read with.
        inventories.replace(w, rows[item.provider_uuid], item.inventories)
