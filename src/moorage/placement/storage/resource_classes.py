"""Resource classes: standard ones (os-resource-classes, synced on start) and
``CUSTOM_*`` ones created, renamed and deleted through the API."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.db.statements import insert_if_absent
from moorage.model.vocabulary import is_custom
from moorage.placement.storage import schema
from moorage.placement.storage.database import Writer
from moorage.placement.storage.errors import Conflict, InvalidData, NotFound

_rc = schema.resource_classes


@dataclass(frozen=True)
class ResourceClass:
    name: str
    created_at: datetime.datetime | None
    updated_at: datetime.datetime | None

    @property
    def is_standard(self) -> bool:
        return not is_custom(self.name)


def _select() -> sa.Select[str, datetime.datetime | None, datetime.datetime | None]:
    return sa.select(_rc.c.name, _rc.c.created_at, _rc.c.updated_at)


def _not_found(name: str) -> NotFound:
    return NotFound(f"No such resource class {name}.")


def listing(conn: Connection) -> list[ResourceClass]:
    """Every resource class: standard ones in os-resource-classes order, then custom ones
    in order of creation."""
    # SELECT name, created_at, updated_at FROM resource_classes ORDER BY id
    return [ResourceClass(*row) for row in conn.execute(_select().order_by(_rc.c.id))]


def find(conn: Connection, name: str) -> ResourceClass | None:
    # SELECT name, created_at, updated_at FROM resource_classes WHERE name = :name
    row = conn.execute(_select().where(_rc.c.name == name)).first()
    return ResourceClass(*row) if row is not None else None


def _id_of(conn: Connection, name: str) -> int:
    # SELECT id FROM resource_classes WHERE name = :name
    rc_id = conn.execute(sa.select(_rc.c.id).where(_rc.c.name == name)).scalar()
    if rc_id is None:
        raise _not_found(name)
    return int(rc_id)


def ensure(w: Writer, name: str) -> bool:
    """Create the custom class ``name`` unless it exists; True if this call created it."""
    # INSERT INTO resource_classes (name, created_at) VALUES (...) ON CONFLICT DO NOTHING
    created = insert_if_absent(w.conn, _rc, {"name": name, "created_at": w.now})
    if created:
        w.change_catalog()
    return created


def create(w: Writer, name: str) -> None:
    """Create the custom class ``name``; Conflict if it exists."""
    if not ensure(w, name):
        raise Conflict(f"Conflicting resource class already exists: {name}")


def rename(w: Writer, name: str, new_name: str) -> None:
    """Rename a custom class (microversions 1.2 to 1.6).

    Inventories and allocations refer to the class by id, so they follow; their
    providers are touched so that every index reloads them under the new name.
    """
    conn = w.conn
    rc_id = _id_of(conn, name)
    if not is_custom(name):
        raise InvalidData(f"Cannot update standard resource class {name}")
    if new_name == name:
        return
    if find(conn, new_name) is not None:
        raise Conflict(f"Resource class already exists: {new_name}")
    # UPDATE resource_classes SET name = :new_name, updated_at = :now WHERE id = :id
    conn.execute(sa.update(_rc).where(_rc.c.id == rc_id).values(name=new_name, updated_at=w.now))
    inv, alloc = schema.inventories, schema.allocations
    # SELECT resource_provider_id FROM inventories WHERE resource_class_id = :id
    # UNION SELECT resource_provider_id FROM allocations WHERE resource_class_id = :id
    users = conn.execute(
        sa.union(
            sa.select(inv.c.resource_provider_id).where(inv.c.resource_class_id == rc_id),
            sa.select(alloc.c.resource_provider_id).where(alloc.c.resource_class_id == rc_id),
        )
    ).scalars()
    w.touch(*users)
    w.change_catalog()


def delete(w: Writer, name: str) -> None:
    """Delete a custom class that no inventory (nor allocation) uses."""
    conn = w.conn
    rc_id = _id_of(conn, name)
    prefix = "Error in delete resource class:"
    if not is_custom(name):
        raise InvalidData(f"{prefix} Cannot delete standard resource class {name}.")
    for table in (schema.inventories, schema.allocations):
        # SELECT 1 FROM inventories / allocations WHERE resource_class_id = :id LIMIT 1
        if conn.execute(
            sa.select(sa.literal(1)).where(table.c.resource_class_id == rc_id).limit(1)
        ).first():
            raise Conflict(
                f"{prefix} Cannot delete resource class {name}. Class is in use in inventory."
            )
    # DELETE FROM resource_classes WHERE id = :id
    conn.execute(sa.delete(_rc).where(_rc.c.id == rc_id))
    w.change_catalog()
