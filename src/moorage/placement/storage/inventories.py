"""Inventories of resource providers: add, update, replace and delete.

Every function takes the ``Writer`` of an open write transaction and the
provider's row, read with a lock (``providers.find(..., lock=True)``). Each
change increments the provider's generation, which also touches the provider so
that every process's index reloads it. An inventory that allocations still use
cannot be removed; one whose capacity drops below its usage can (with a warning),
as upstream allows, so that operators can shrink an over-committed host.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.db.statements import insert_rows
from moorage.placement import errors
from moorage.placement.storage import providers, schema
from moorage.placement.storage.database import Writer
from moorage.placement.storage.errors import ConcurrentUpdate, Conflict, InvalidData, NotFound
from moorage.placement.storage.providers import ProviderRow
from moorage.placement.storage.records import Inventory

LOG = logging.getLogger(__name__)

_inv = schema.inventories
_alloc = schema.allocations
_rc = schema.resource_classes


class UnknownResourceClass(InvalidData):
    """A resource class name the catalogue does not hold."""


class NoInventory(NotFound):
    """The provider has no inventory of the named class."""


class DuplicateInventory(Conflict):
    """The provider already has inventory of the named class."""

    code = errors.CONCURRENT_UPDATE


class InventoryInUse(Conflict):
    """Allocations use inventory that the write would remove."""

    code = errors.INVENTORY_INUSE


def check_generation(provider: ProviderRow, expected: int) -> None:
    """ConcurrentUpdate unless the client saw the provider's current generation."""
    if provider.generation != expected:
        raise ConcurrentUpdate("resource provider generation conflict")


# Built once: the statements of every inventory write (building one costs more CPU
# than SQLite takes to run it).
# SELECT name, id FROM resource_classes WHERE name IN (...)
_CLASS_IDS = sa.select(_rc.c.name, _rc.c.id).where(
    _rc.c.name.in_(sa.bindparam("names", expanding=True)))
# SELECT name, id, NULL, ... FROM resource_classes WHERE name IN (...)
# UNION ALL SELECT NULL, resource_class_id, total, reserved, min_unit, max_unit,
#   step_size, allocation_ratio FROM inventories WHERE resource_provider_id = :id
_CLASSES_AND_STORED = sa.union_all(
    sa.select(_rc.c.name, _rc.c.id, *(sa.null() for _ in range(6)))
    .where(_rc.c.name.in_(sa.bindparam("names", expanding=True))),
    sa.select(sa.null(), _inv.c.resource_class_id, _inv.c.total, _inv.c.reserved,
              _inv.c.min_unit, _inv.c.max_unit, _inv.c.step_size, _inv.c.allocation_ratio)
    .where(_inv.c.resource_provider_id == sa.bindparam("rp_id")),
)


def _class_ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    """Resource class name -> id; UnknownResourceClass for the first unknown name."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    found = {name: rc_id for name, rc_id in conn.execute(_CLASS_IDS, {"names": wanted})}
    for name in wanted:
        if name not in found:
            raise UnknownResourceClass(f"No such resource class {name}.")
    return {name: found[name] for name in wanted}


def _classes_and_stored(conn: Connection, names: Iterable[str], provider_id: int
                        ) -> tuple[dict[str, int], dict[int, Inventory]]:
    """Resource class name -> id for ``names`` (UnknownResourceClass for the first
    unknown one), and the provider's stored inventories by class id, in one query."""
    wanted = list(dict.fromkeys(names))
    found: dict[str, int] = {}
    stored: dict[int, Inventory] = {}
    for row in conn.execute(_CLASSES_AND_STORED, {"names": wanted, "rp_id": provider_id}):
        if row[0] is not None:
            found[row[0]] = row[1]
        else:
            stored[row[1]] = Inventory(row[2], row[3], row[4], row[5], row[6], float(row[7]))
    for name in wanted:
        if name not in found:
            raise UnknownResourceClass(f"No such resource class {name}.")
    return {name: found[name] for name in wanted}, stored


def _class_names(conn: Connection, rc_ids: Iterable[int]) -> dict[int, str]:
    """Resource class id -> name, for these ids."""
    # SELECT id, name FROM resource_classes WHERE id IN (...)
    query = sa.select(_rc.c.id, _rc.c.name).where(_rc.c.id.in_(sorted(rc_ids)))
    return {rc_id: name for rc_id, name in conn.execute(query)}


def _refuse_if_in_use(conn: Connection, provider: ProviderRow, class_names: Mapping[int, str]
                      ) -> None:
    """InventoryInUse if allocations on ``provider`` use any of these classes."""
    if not class_names:
        return
    # SELECT DISTINCT resource_class_id FROM allocations
    # WHERE resource_provider_id = :id AND resource_class_id IN (...) ORDER BY resource_class_id
    used = conn.execute(
        sa.select(_alloc.c.resource_class_id).distinct()
        .where(_alloc.c.resource_provider_id == provider.id,
               _alloc.c.resource_class_id.in_(sorted(class_names)))
        .order_by(_alloc.c.resource_class_id)
    ).scalars().all()
    if used:
        names = ", ".join(class_names[rc_id] for rc_id in used)
        raise InventoryInUse(
            f"Inventory for '{names}' on resource provider '{provider.uuid}' in use."
        )


def _warn_over_capacity(conn: Connection, provider: ProviderRow,
                        changed: Mapping[int, tuple[str, Inventory]]) -> None:
    """Log the classes whose usage now exceeds the new capacity (allowed, but notable)."""
    if not changed:
        return
    # SELECT resource_class_id, SUM(used) FROM allocations
    # WHERE resource_provider_id = :id AND resource_class_id IN (...) GROUP BY resource_class_id
    usage = conn.execute(
        sa.select(_alloc.c.resource_class_id, sa.func.sum(_alloc.c.used))
        .where(_alloc.c.resource_provider_id == provider.id,
               _alloc.c.resource_class_id.in_(sorted(changed)))
        .group_by(_alloc.c.resource_class_id)
    ).all()
    for rc_id, used in usage:
        name, inventory = changed[rc_id]
        if used is not None and int(used) > inventory.capacity:
            LOG.warning("Resource provider %s is now over-capacity for %s (used %d, capacity %d)",
                        provider.uuid, name, int(used), inventory.capacity)


def _insert(w: Writer, provider: ProviderRow, rows: Mapping[int, Inventory]) -> None:
    insert_rows(w.conn, _inv, [
        {"resource_provider_id": provider.id, "resource_class_id": rc_id,
         "created_at": w.now, **inventory.fields()}
        for rc_id, inventory in rows.items()
    ])


def _update(w: Writer, provider: ProviderRow, rc_id: int, inventory: Inventory) -> int:
    """Overwrite one stored inventory; the number of rows changed (0 or 1)."""
    # UPDATE inventories SET total = :total, ..., updated_at = :now
    # WHERE resource_provider_id = :rp AND resource_class_id = :rc
    result = w.conn.execute(
        sa.update(_inv)
        .where(_inv.c.resource_provider_id == provider.id, _inv.c.resource_class_id == rc_id)
        .values(updated_at=w.now, **inventory.fields())
    )
    return result.rowcount


def _delete(w: Writer, provider: ProviderRow, rc_ids: Iterable[int]) -> int:
    """Delete stored inventories; the number of rows deleted."""
    # DELETE FROM inventories WHERE resource_provider_id = :rp AND resource_class_id IN (...)
    result = w.conn.execute(
        sa.delete(_inv).where(_inv.c.resource_provider_id == provider.id,
                              _inv.c.resource_class_id.in_(sorted(rc_ids)))
    )
    return result.rowcount


def add(w: Writer, provider: ProviderRow, resource_class: str, inventory: Inventory) -> int:
    """Add inventory of a class the provider does not have yet; the new generation."""
    rc_id = _class_ids(w.conn, [resource_class])[resource_class]
    # SELECT id FROM inventories WHERE resource_provider_id = :rp AND resource_class_id = :rc
    if w.conn.execute(
        sa.select(_inv.c.id)
        .where(_inv.c.resource_provider_id == provider.id, _inv.c.resource_class_id == rc_id)
    ).first() is not None:
        raise DuplicateInventory(
            f"Resource provider {provider.uuid} already has inventory of class {resource_class}."
        )
    _insert(w, provider, {rc_id: inventory})
    return providers.bump_generation(w, provider)


def update(w: Writer, provider: ProviderRow, resource_class: str, inventory: Inventory) -> int:
    """Change the provider's inventory of one class it has; the new generation."""
    rc_id = _class_ids(w.conn, [resource_class])[resource_class]
    _warn_over_capacity(w.conn, provider, {rc_id: (resource_class, inventory)})
    if not _update(w, provider, rc_id, inventory):
        raise NoInventory(f"No inventory of class {resource_class} found.")
    return providers.bump_generation(w, provider)


def replace(w: Writer, provider: ProviderRow, inventories: Mapping[str, Inventory]) -> int:
    """Make ``inventories`` the provider's whole inventory; the new generation.

    Classes not named are removed (InventoryInUse if allocations use them), new
    ones added, changed ones overwritten. The generation increments even when
    nothing changes, as upstream's does: clients count on it.
    """
    ids, stored = _classes_and_stored(w.conn, inventories, provider.id)
    wanted = {ids[name]: (name, inventory) for name, inventory in inventories.items()}
    removed = stored.keys() - wanted.keys()
    if removed:
        _refuse_if_in_use(w.conn, provider, _class_names(w.conn, removed))
        _delete(w, provider, removed)
    _insert(w, provider, {
        rc_id: inventory for rc_id, (_, inventory) in wanted.items() if rc_id not in stored
    })
    changed = {
        rc_id: item for rc_id, item in wanted.items()
        if rc_id in stored and stored[rc_id] != item[1]
    }
    _warn_over_capacity(w.conn, provider, changed)
    for rc_id, (_, inventory) in changed.items():
        _update(w, provider, rc_id, inventory)
    return providers.bump_generation(w, provider)


def delete(w: Writer, provider: ProviderRow, resource_class: str) -> int:
    """Remove the provider's inventory of one class; the new generation."""
    rc_id = _class_ids(w.conn, [resource_class])[resource_class]
    _refuse_if_in_use(w.conn, provider, {rc_id: resource_class})
    if not _delete(w, provider, [rc_id]):
        raise NoInventory(f"No inventory of class {resource_class} found.")
    return providers.bump_generation(w, provider)
