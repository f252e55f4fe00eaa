"""Flavors and their extra specs. Reads return ``FlavorRecord``: the API id and the
``moorage.model.Flavor`` the scheduler and the agents use."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.api.errors import Conflict, NotFound
from moorage.api.storage import catalog_state
from moorage.api.storage.schema import flavor_extra_specs, flavors
from moorage.db.clock import utcnow
from moorage.model.flavor import Flavor


@dataclass(frozen=True)
class FlavorRecord:
    id: str
    flavor: Flavor
    is_public: bool = True
    description: str | None = None
    created_at: datetime.datetime | None = None


def _not_found(flavor_id: str) -> NotFound:
    return NotFound(f"Flavor {flavor_id} could not be found.")


def _specs(conn: Connection, flavor_ids: list[str]) -> dict[str, dict[str, str]]:
    # SELECT flavor_id, key, value FROM flavor_extra_specs WHERE flavor_id IN (...)
    found: dict[str, dict[str, str]] = {fid: {} for fid in flavor_ids}
    if not flavor_ids:
        return found
    rows = conn.execute(sa.select(flavor_extra_specs)
                        .where(flavor_extra_specs.c.flavor_id.in_(flavor_ids)))
    for row in rows:
        found[row.flavor_id][row.key] = row.value
    return found


def _record(row: sa.Row[tuple[object, ...]], specs: Mapping[str, str]) -> FlavorRecord:
    m = row._mapping
    return FlavorRecord(
        id=m["id"],
        flavor=Flavor(name=m["name"], vcpus=m["vcpus"], memory_mb=m["memory_mb"],
                      root_gb=m["root_gb"], ephemeral_gb=m["ephemeral_gb"],
                      swap_mb=m["swap_mb"], extra_specs=dict(sorted(specs.items()))),
        is_public=bool(m["is_public"]),
        description=m["description"],
        created_at=m["created_at"],
    )


def create_flavor(conn: Connection, record: FlavorRecord) -> FlavorRecord:
    """Insert a flavor and its extra specs; Conflict when its id or name is taken."""
    catalog_state.bump(conn, definitions=True)
    flavor = record.flavor
    clash = conn.execute(sa.select(flavors.c.id, flavors.c.name).where(
        sa.or_(flavors.c.id == record.id, flavors.c.name == flavor.name))).first()
    if clash is not None:
        if clash.id == record.id:
            raise Conflict(f"Flavor with ID {record.id} already exists.")
        raise Conflict(f"Flavor with name {flavor.name} already exists.")
    now = utcnow()
    conn.execute(flavors.insert().values(
        id=record.id, name=flavor.name, vcpus=flavor.vcpus, memory_mb=flavor.memory_mb,
        root_gb=flavor.root_gb, ephemeral_gb=flavor.ephemeral_gb, swap_mb=flavor.swap_mb,
        is_public=record.is_public, description=record.description,
        created_at=now, updated_at=now))
    if flavor.extra_specs:
        conn.execute(flavor_extra_specs.insert(), [
            {"flavor_id": record.id, "key": k, "value": v}
            for k, v in flavor.extra_specs.items()])
    return load_flavor(conn, record.id)


def load_flavor(conn: Connection, flavor_id: str) -> FlavorRecord:
    """The flavor with API id ``flavor_id``; NotFound naming it."""
    row = conn.execute(sa.select(flavors).where(flavors.c.id == flavor_id)).first()
    if row is None:
        raise _not_found(flavor_id)
    return _record(row, _specs(conn, [flavor_id])[flavor_id])


def list_flavors(conn: Connection, *, include_private: bool = True,
                 min_ram: int | None = None, min_disk: int | None = None
                 ) -> list[FlavorRecord]:
    """Flavors ordered by id, as nova sorts them by default (flavorid)."""
    statement = sa.select(flavors).order_by(flavors.c.id)
    if not include_private:
        statement = statement.where(flavors.c.is_public.is_(True))
    if min_ram is not None:
        statement = statement.where(flavors.c.memory_mb >= min_ram)
    if min_disk is not None:
        statement = statement.where(flavors.c.root_gb >= min_disk)
    rows = list(conn.execute(statement))
    specs = _specs(conn, [row.id for row in rows])
    return [_record(row, specs[row.id]) for row in rows]


def delete_flavor(conn: Connection, flavor_id: str) -> None:
    catalog_state.bump(conn, definitions=True)
    conn.execute(flavor_extra_specs.delete().where(flavor_extra_specs.c.flavor_id == flavor_id))
    if not conn.execute(flavors.delete().where(flavors.c.id == flavor_id)).rowcount:
        raise _not_found(flavor_id)


def set_extra_specs(conn: Connection, flavor_id: str, specs: Mapping[str, str]) -> None:
    """Create or replace these extra specs of a flavor (validated by the caller)."""
    catalog_state.bump(conn, definitions=True)
    load_flavor(conn, flavor_id)
    keys = list(specs)
    conn.execute(flavor_extra_specs.delete().where(
        flavor_extra_specs.c.flavor_id == flavor_id, flavor_extra_specs.c.key.in_(keys)))
    if specs:
        conn.execute(flavor_extra_specs.insert(), [
            {"flavor_id": flavor_id, "key": k, "value": v} for k, v in specs.items()])
    conn.execute(flavors.update().where(flavors.c.id == flavor_id).values(updated_at=utcnow()))


def delete_extra_spec(conn: Connection, flavor_id: str, key: str) -> None:
    catalog_state.bump(conn, definitions=True)
    load_flavor(conn, flavor_id)
    deleted = conn.execute(flavor_extra_specs.delete().where(
        flavor_extra_specs.c.flavor_id == flavor_id, flavor_extra_specs.c.key == key)).rowcount
    if not deleted:
        raise NotFound(f"Flavor {flavor_id} has no extra spec with key {key}.")
