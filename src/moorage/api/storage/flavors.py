"""Flavors, their extra specs and the projects a private flavor is shared with. Reads
return ``FlavorRecord``: the API id and the ``moorage.model.Flavor`` the scheduler and
the agents use."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.api.errors import Conflict, NotFound
from moorage.api.storage import catalog_state
from moorage.api.storage.schema import flavor_extra_specs, flavor_projects, flavors
from moorage.db.clock import utcnow
from moorage.model.flavor import Flavor


@dataclass(frozen=True)
class FlavorRecord:
    id: str
    flavor: Flavor
    is_public: bool = True
    description: str | None = None
    created_at: datetime.datetime | None = None
    # The projects a private flavor is shared with (os-flavor-access), sorted.
    projects: tuple[str, ...] = ()


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


def _projects(conn: Connection, flavor_ids: list[str]) -> dict[str, tuple[str, ...]]:
    # SELECT flavor_id, project_id FROM flavor_projects WHERE flavor_id IN (...)
    #   ORDER BY project_id
    found: dict[str, list[str]] = {fid: [] for fid in flavor_ids}
    if flavor_ids:
        rows = conn.execute(sa.select(flavor_projects)
                            .where(flavor_projects.c.flavor_id.in_(flavor_ids))
                            .order_by(flavor_projects.c.project_id))
        for row in rows:
            found[row.flavor_id].append(row.project_id)
    return {fid: tuple(projects) for fid, projects in found.items()}


def _record(row: sa.Row[tuple[object, ...]], specs: Mapping[str, str],
            projects: tuple[str, ...]) -> FlavorRecord:
    m = row._mapping
    return FlavorRecord(
        id=m["id"],
        flavor=Flavor(name=m["name"], vcpus=m["vcpus"], memory_mb=m["memory_mb"],
                      root_gb=m["root_gb"], ephemeral_gb=m["ephemeral_gb"],
                      swap_mb=m["swap_mb"], extra_specs=dict(sorted(specs.items()))),
        is_public=bool(m["is_public"]),
        description=m["description"],
        created_at=m["created_at"],
        projects=projects,
    )


def _records(conn: Connection, rows: list[sa.Row[tuple[object, ...]]]) -> list[FlavorRecord]:
    ids = [str(row._mapping["id"]) for row in rows]
    specs, projects = _specs(conn, ids), _projects(conn, ids)
    return [_record(row, specs[fid], projects[fid]) for row, fid in zip(rows, ids, strict=True)]


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
    [record] = _records(conn, [row])
    return record


# nova's sort keys (its flavors schema's VALID_SORT_KEYS) and what each sorts by here.
# None: a value every flavor shares in Moorage (never disabled, rxtx_factor 1.0, no
# vcpu_weight), so only the tie-break orders them. ``id``, nova's row id, is the
# order flavors were created in.
_SORT_COLUMNS: dict[str, sa.ColumnElement[object] | None] = {
    "created_at": flavors.c.created_at,
    "description": sa.func.coalesce(flavors.c.description, ""),
    "disabled": None,
    "ephemeral_gb": flavors.c.ephemeral_gb,
    "flavorid": flavors.c.id,
    "id": flavors.c.created_at,
    "is_public": flavors.c.is_public,
    "memory_mb": flavors.c.memory_mb,
    "name": flavors.c.name,
    "root_gb": flavors.c.root_gb,
    "rxtx_factor": None,
    "swap": flavors.c.swap_mb,
    "updated_at": flavors.c.updated_at,
    "vcpu_weight": None,
    "vcpus": flavors.c.vcpus,
}
SORT_KEYS: tuple[str, ...] = tuple(_SORT_COLUMNS)


@dataclass(frozen=True)
class FlavorQuery:
    """What a flavor list asks for, as nova's takes it."""

    # True: the public flavors and the private ones shared with ``project_id``;
    # False: only private ones; None: every flavor (an administrator's is_public=none).
    is_public: bool | None = True
    project_id: str | None = None
    # An administrator's list: any flavor may be its marker, not only those it lists.
    admin: bool = False
    min_ram: int | None = None
    min_disk: int | None = None
    sort_key: str = "flavorid"  # one of SORT_KEYS
    descending: bool = False
    limit: int | None = None
    marker: str | None = None


def _shared_with(project_id: str | None) -> sa.ColumnElement[bool]:
    # flavors.is_public OR flavors.id IN (SELECT flavor_id FROM flavor_projects
    #                                     WHERE project_id = :project_id)
    if project_id is None:
        return flavors.c.is_public.is_(True)
    return sa.or_(flavors.c.is_public.is_(True), flavors.c.id.in_(
        sa.select(flavor_projects.c.flavor_id)
        .where(flavor_projects.c.project_id == project_id)))


def list_flavors(conn: Connection, query: FlavorQuery) -> list[FlavorRecord]:
    """A page of flavors in the order asked for (by flavor id, ascending, unless told),
    after ``query.marker`` (LookupError when the caller cannot see such a flavor)."""
    # SELECT * FROM flavors WHERE <visibility> [AND memory_mb >= :ram]
    #   [AND root_gb >= :disk] [AND (key > :mk OR (key = :mk AND id > :mid))]
    #   ORDER BY key, id (both DESC when descending) [LIMIT :limit]
    statement = sa.select(flavors)
    if query.is_public is None:
        pass
    elif query.is_public:
        statement = statement.where(_shared_with(query.project_id))
    else:
        statement = statement.where(flavors.c.is_public.is_(False))
    # The bounds are bound as BIGINT: a bound past any integer column's matches none
    # (not an "integer out of range" from PostgreSQL).
    if query.min_ram is not None:
        statement = statement.where(
            flavors.c.memory_mb >= sa.bindparam(None, query.min_ram, type_=sa.BigInteger))
    if query.min_disk is not None:
        statement = statement.where(
            flavors.c.root_gb >= sa.bindparam(None, query.min_disk, type_=sa.BigInteger))
    key = _SORT_COLUMNS[query.sort_key]
    if query.marker is not None:
        statement = statement.where(_after(conn, query, key))
    columns = [flavors.c.id] if key is None or key is flavors.c.id else [key, flavors.c.id]
    order = [column.desc() if query.descending else column.asc() for column in columns]
    statement = statement.order_by(*order)
    if query.limit is not None:
        statement = statement.limit(query.limit)
    return _records(conn, list(conn.execute(statement)))


def _after(conn: Connection, query: FlavorQuery, key: sa.ColumnElement[object] | None
           ) -> sa.ColumnElement[bool]:
    """The rows after the marker's in the list's order (keyset paging, so a page costs
    the same wherever it starts)."""
    # SELECT <key>, id FROM flavors WHERE id = :marker [AND <the caller sees it>]
    found = sa.select(key if key is not None else sa.null(), flavors.c.id).where(
        flavors.c.id == query.marker)
    if not query.admin:
        found = found.where(_shared_with(query.project_id))
    marker = conn.execute(found).first()
    if marker is None:
        raise LookupError(query.marker)
    value: object = marker[0]
    marker_id = str(marker[1])
    later = flavors.c.id < marker_id if query.descending else flavors.c.id > marker_id
    if key is None:
        return later
    # Bound with the key's type: a literal True or False takes no < or > in SQLAlchemy.
    bound = sa.bindparam(None, value, type_=key.type)
    beyond = key < bound if query.descending else key > bound
    return sa.or_(beyond, sa.and_(key == bound, later))


def delete_flavor(conn: Connection, flavor_id: str) -> None:
    catalog_state.bump(conn, definitions=True)
    conn.execute(flavor_extra_specs.delete().where(flavor_extra_specs.c.flavor_id == flavor_id))
    conn.execute(flavor_projects.delete().where(flavor_projects.c.flavor_id == flavor_id))
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


def set_description(conn: Connection, flavor_id: str, description: str | None) -> FlavorRecord:
    """Change a flavor's description (the one field nova lets change); NotFound."""
    catalog_state.bump(conn, definitions=True)
    # UPDATE flavors SET description = :d, updated_at = :now WHERE id = :id
    changed = conn.execute(flavors.update().where(flavors.c.id == flavor_id).values(
        description=description, updated_at=utcnow())).rowcount
    if not changed:
        raise _not_found(flavor_id)
    return load_flavor(conn, flavor_id)


def add_access(conn: Connection, flavor_id: str, project_id: str) -> FlavorRecord:
    """Share a flavor with a project; Conflict when it already is (nova's words)."""
    catalog_state.bump(conn, definitions=True)
    load_flavor(conn, flavor_id)
    exists = conn.execute(sa.select(flavor_projects.c.project_id).where(
        flavor_projects.c.flavor_id == flavor_id,
        flavor_projects.c.project_id == project_id)).first()
    if exists is not None:
        raise Conflict(f"Flavor access already exists for flavor {flavor_id} and project "
                       f"{project_id} combination.")
    conn.execute(flavor_projects.insert().values(flavor_id=flavor_id, project_id=project_id))
    return load_flavor(conn, flavor_id)


def remove_access(conn: Connection, flavor_id: str, project_id: str) -> FlavorRecord:
    """Stop sharing a flavor with a project; NotFound when it was not (nova's words)."""
    catalog_state.bump(conn, definitions=True)
    load_flavor(conn, flavor_id)
    removed = conn.execute(flavor_projects.delete().where(
        flavor_projects.c.flavor_id == flavor_id,
        flavor_projects.c.project_id == project_id)).rowcount
    if not removed:
        raise NotFound(f"Flavor access not found for {flavor_id} / {project_id} "
                       "combination.")
    return load_flavor(conn, flavor_id)
