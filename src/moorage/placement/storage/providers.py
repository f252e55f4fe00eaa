"""Resource providers: create, rename, re-parent, delete, and the generation guard.

Every function takes the ``Writer`` of an open write transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.placement import errors
from moorage.placement.storage import schema
from moorage.placement.storage.database import Writer
from moorage.placement.storage.errors import Conflict, InvalidData, NotFound

_rp = schema.resource_providers


@dataclass(slots=True)
class ProviderRow:
    """A provider's own row: what a write reads and guards (its generation). The
    index's ``ProviderRecord`` is this and everything else known of the provider."""

    id: int
    uuid: str
    name: str
    generation: int
    parent_id: int | None
    root_id: int


# Statements run by every provider write are built once: building one costs more
# CPU than SQLite takes to run it.
# SELECT id, uuid, name, generation, parent_provider_id, root_provider_id
# FROM resource_providers WHERE ... [FOR UPDATE]
_SELECT_ROW = sa.select(
    _rp.c.id, _rp.c.uuid, _rp.c.name, _rp.c.generation, _rp.c.parent_provider_id,
    _rp.c.root_provider_id,
)
_ROW_BY_UUID = _SELECT_ROW.where(_rp.c.uuid == sa.bindparam("rp_uuid"))
_ROW_BY_UUID_LOCKED = _ROW_BY_UUID.with_for_update()
# SELECT uuid, name FROM resource_providers WHERE uuid = :uuid OR name = :name
_TAKEN = sa.select(_rp.c.uuid, _rp.c.name).where(
    (_rp.c.uuid == sa.bindparam("rp_uuid")) | (_rp.c.name == sa.bindparam("rp_name")))
# SELECT uuid FROM resource_providers WHERE id = :id
_UUID_BY_ID = sa.select(_rp.c.uuid).where(_rp.c.id == sa.bindparam("rp_id"))
# INSERT INTO resource_providers (uuid, name, generation, ...) VALUES (...)
_INSERT = sa.insert(_rp)
# PostgreSQL: WITH new AS (SELECT nextval(<the id sequence>) AS id)
# INSERT INTO resource_providers (id, root_provider_id, ...) SELECT id, id, ... FROM new
_INSERT_ROOT = sa.text("""
    WITH new AS (SELECT nextval(pg_get_serial_sequence('resource_providers', 'id')) AS id)
    INSERT INTO resource_providers (id, uuid, name, generation, root_provider_id,
                                    parent_provider_id, change_version, created_at,
                                    updated_at)
    SELECT id, :uuid, :name, 0, id, NULL, 0, :created_at, :updated_at FROM new
    RETURNING id""").bindparams(
    sa.bindparam("created_at", type_=sa.DateTime), sa.bindparam("updated_at", type_=sa.DateTime))
# UPDATE resource_providers SET root_provider_id = id WHERE id = :id
_ROOT_OF_ITSELF = (sa.update(_rp).where(_rp.c.id == sa.bindparam("rp_id"))
                   .values(root_provider_id=_rp.c.id))


def _provider(row: sa.Row[int, str, str, int, int | None, int | None] | None
              ) -> ProviderRow | None:
    if row is None:
        return None
    return ProviderRow(row[0], row[1], row[2], row[3], row[4], row[5] or row[0])


def find(conn: Connection, uuid: str, *, lock: bool = False) -> ProviderRow | None:
    """The provider with ``uuid``, or None. ``lock`` holds its row until commit."""
    query = _ROW_BY_UUID_LOCKED if lock else _ROW_BY_UUID
    return _provider(conn.execute(query, {"rp_uuid": uuid}).first())


def get(conn: Connection, uuid: str, *, lock: bool = False) -> ProviderRow:
    """The provider with ``uuid``; NotFound otherwise."""
    row = find(conn, uuid, lock=lock)
    if row is None:
        raise NotFound(f"No resource provider with uuid {uuid} found",
                       code=errors.RESOURCE_PROVIDER_NOT_FOUND)
    return row


def bump_generation(w: Writer, provider: ProviderRow) -> int:
    """The provider's next generation, written at commit (``Writer.new_generation``).

    The caller holds the provider's row, read with ``find(lock=True)``, and has
    checked the generation its client named: no other writer can move it before the
    commit, so the generation read is the one incremented."""
    w.new_generation([provider.id])
    return provider.generation + 1


@dataclass(frozen=True)
class NewProvider:
    """A provider just created, with the uuids of its tree that its answer shows."""

    row: ProviderRow
    parent_uuid: str | None
    root_uuid: str


def create(w: Writer, uuid: str, name: str, parent_uuid: str | None) -> NewProvider:
    """Insert a provider (a root, or a child of ``parent_uuid``)."""
    conn = w.conn
    taken = conn.execute(_TAKEN, {"rp_uuid": uuid, "rp_name": name}).all()
    duplicates = []
    if any(row.uuid == uuid for row in taken):
        duplicates.append(f"uuid: {uuid}")
    if any(row.name == name for row in taken):
        duplicates.append(f"name: {name}")
    if duplicates:
        raise Conflict(
            f"Conflicting resource provider {', '.join(duplicates)} already exists.",
            code=errors.DUPLICATE_NAME,
        )
    parent: ProviderRow | None = None
    root_uuid = uuid
    if parent_uuid is not None:
        if parent_uuid == uuid:
            raise InvalidData(
                f'Unable to create resource provider "{name}", {uuid}: Object action create '
                "failed because: parent provider UUID cannot be same as UUID. Please set "
                "parent provider UUID to None if there is no parent."
            )
        parent = find(conn, parent_uuid, lock=True)
        if parent is None:
            raise InvalidData(
                f'Unable to create resource provider "{name}", {uuid}: Object action create '
                "failed because: parent provider UUID does not exist."
            )
        root_uuid = parent.uuid if parent.root_id == parent.id else str(
            conn.execute(_UUID_BY_ID, {"rp_id": parent.root_id}).scalar_one())
    values = {"uuid": uuid, "name": name, "created_at": w.now, "updated_at": w.now}
    if parent is None and conn.dialect.name == "postgresql":
        # A root is its own root: its id drawn first, one statement.
        new_id = int(conn.execute(_INSERT_ROOT, values).scalar_one())
    else:
        new_id = conn.execute(_INSERT, {
            **values, "generation": 0, "change_version": 0,
            "parent_provider_id": parent.id if parent else None,
            "root_provider_id": parent.root_id if parent else None,
        }).inserted_primary_key[0]  # type: ignore[index]
        if parent is None:
            conn.execute(_ROOT_OF_ITSELF, {"rp_id": new_id})
    root_id = parent.root_id if parent else new_id
    w.touch(new_id)
    row = ProviderRow(new_id, uuid, name, 0, parent.id if parent else None, root_id)
    return NewProvider(row, parent.uuid if parent else None, root_uuid)


def _subtree_ids(conn: Connection, provider_id: int) -> list[int]:
    """Ids of ``provider_id`` and everything below it."""
    found = [provider_id]
    frontier = [provider_id]
    while frontier:
        # SELECT id FROM resource_providers WHERE parent_provider_id IN (...)
        frontier = list(
            conn.execute(sa.select(_rp.c.id).where(_rp.c.parent_provider_id.in_(frontier)))
            .scalars()
        )
        found.extend(frontier)
    return found


_UNCHANGED = object()


def update(
    w: Writer,
    provider: ProviderRow,
    *,
    name: str | None = None,
    parent_uuid: str | object | None = _UNCHANGED,
    allow_reparenting: bool = False,
) -> None:
    """Rename and/or (re-, un-)parent a provider. The generation does not change."""
    conn = w.conn
    values: dict[str, object] = {"updated_at": w.now}
    if name is not None and name != provider.name:
        # SELECT id FROM resource_providers WHERE name = :name
        if conn.execute(sa.select(_rp.c.id).where(_rp.c.name == name)).first() is not None:
            raise Conflict(
                f"Conflicting resource provider {name} already exists.",
                code=errors.DUPLICATE_NAME,
            )
        values["name"] = name
    subtree: list[int] = []
    new_root: int | None = None
    if parent_uuid is not _UNCHANGED:
        prefix = f"Unable to save resource provider {provider.uuid}: Object action"
        if parent_uuid is not None:
            assert isinstance(parent_uuid, str)
            parent = find(conn, parent_uuid, lock=True)
            if parent is None:
                raise InvalidData(
                    f"{prefix} create failed because: parent provider UUID does not exist."
                )
            if (provider.parent_id is not None and provider.parent_id != parent.id
                    and not allow_reparenting):
                raise InvalidData(
                    f"{prefix} update failed because: re-parenting a provider is not "
                    "currently allowed."
                )
            subtree = _subtree_ids(conn, provider.id)
            if parent.id in subtree:
                raise InvalidData(
                    f"{prefix} update failed because: creating loop in the provider tree is "
                    "not allowed."
                )
            values["parent_provider_id"] = parent.id
            new_root = parent.root_id
        elif provider.parent_id is not None:
            if not allow_reparenting:
                raise InvalidData(
                    f"{prefix} update failed because: un-parenting a provider is not "
                    "currently allowed."
                )
            subtree = _subtree_ids(conn, provider.id)
            values["parent_provider_id"] = None
            new_root = provider.id
    # UPDATE resource_providers SET name = ..., parent_provider_id = ... WHERE id = :id
    conn.execute(sa.update(_rp).where(_rp.c.id == provider.id).values(**values))
    if new_root is not None and subtree:
        # UPDATE resource_providers SET root_provider_id = :root WHERE id IN (subtree)
        conn.execute(sa.update(_rp).where(_rp.c.id.in_(subtree)).values(root_provider_id=new_root))
    w.touch(provider.id, *subtree)


def delete(w: Writer, uuid: str) -> None:
    """Delete a provider that has no children and no allocations."""
    conn = w.conn
    provider = find(conn, uuid, lock=True)
    if provider is None:
        raise NotFound(f"No resource provider with uuid {uuid} found for delete")
    # SELECT id FROM resource_providers WHERE parent_provider_id = :id LIMIT 1
    if conn.execute(
        sa.select(_rp.c.id).where(_rp.c.parent_provider_id == provider.id).limit(1)
    ).first():
        raise Conflict(
            f"Unable to delete parent resource provider {uuid}: It has child resource "
            "providers.",
            code=errors.PROVIDER_CANNOT_DELETE_PARENT,
        )
    alloc = schema.allocations
    # SELECT id FROM allocations WHERE resource_provider_id = :id LIMIT 1
    if conn.execute(
        sa.select(alloc.c.id).where(alloc.c.resource_provider_id == provider.id).limit(1)
    ).first():
        raise Conflict(
            f"Unable to delete resource provider {uuid}: Resource provider has allocations.",
            code=errors.PROVIDER_IN_USE,
        )
    for table in (schema.inventories, schema.resource_provider_aggregates,
                  schema.resource_provider_traits):
        conn.execute(sa.delete(table).where(table.c.resource_provider_id == provider.id))
    conn.execute(
        sa.update(_rp).where(_rp.c.id == provider.id).values(root_provider_id=None)
    )
    conn.execute(sa.delete(_rp).where(_rp.c.id == provider.id))
    w.delete(provider.id)
