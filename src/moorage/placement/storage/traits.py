"""Traits: the catalogue of names, and the set of traits each provider has.

Standard traits (os-traits) are synced on start; only ``CUSTOM_*`` traits are
created or deleted here. A provider's traits replace as a whole and bump its
generation when they change.
"""

from __future__ import annotations

import datetime
from collections.abc import Collection
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.db.statements import insert_if_absent, insert_rows
from moorage.model.vocabulary import is_custom
from moorage.placement.storage import providers, schema
from moorage.placement.storage.database import Writer
from moorage.placement.storage.errors import Conflict, InvalidData, NotFound

_traits = schema.traits
_rpt = schema.resource_provider_traits


@dataclass(frozen=True)
class Trait:
    name: str
    created_at: datetime.datetime | None
    updated_at: datetime.datetime | None

    @property
    def modified(self) -> datetime.datetime | None:
        return self.updated_at or self.created_at


def _select() -> sa.Select[str, datetime.datetime | None, datetime.datetime | None]:
    return sa.select(_traits.c.name, _traits.c.created_at, _traits.c.updated_at)


def listing(
    conn: Connection,
    *,
    names: Collection[str] | None = None,
    prefix: str | None = None,
    associated: bool | None = None,
) -> list[Trait]:
    """Traits by name, optionally only ``names``, those starting with ``prefix``, and
    those that some provider has (``associated`` True) or that none has (False)."""
    # SELECT name, created_at, updated_at FROM traits
    # [WHERE name IN (:names)] [AND [NOT] EXISTS (SELECT 1 FROM resource_provider_traits
    #  WHERE trait_id = traits.id)] ORDER BY name
    query = _select().order_by(_traits.c.name)
    if names is not None:
        query = query.where(_traits.c.name.in_(sorted(set(names))))
    if associated is not None:
        used = sa.exists().where(_rpt.c.trait_id == _traits.c.id)
        query = query.where(used if associated else ~used)
    rows = [Trait(*row) for row in conn.execute(query)]
    if prefix is not None:
        # A plain prefix test: LIKE would treat "_", common in trait names, as a wildcard.
        rows = [row for row in rows if row.name.startswith(prefix)]
    return rows


def find(conn: Connection, name: str) -> Trait | None:
    # SELECT name, created_at, updated_at FROM traits WHERE name = :name
    row = conn.execute(_select().where(_traits.c.name == name)).first()
    return Trait(*row) if row is not None else None


def ensure(w: Writer, name: str) -> tuple[Trait, bool]:
    """The trait ``name``, created if missing; and whether this call created it."""
    # INSERT INTO traits (name, created_at) VALUES (...) ON CONFLICT DO NOTHING
    created = insert_if_absent(w.conn, _traits, {"name": name, "created_at": w.now})
    if created:
        w.change_catalog()
    trait = find(w.conn, name)
    assert trait is not None
    return trait, created


def delete(w: Writer, name: str) -> None:
    """Delete a custom trait that no provider has."""
    conn = w.conn
    # SELECT id FROM traits WHERE name = :name
    trait_id = conn.execute(sa.select(_traits.c.id).where(_traits.c.name == name)).scalar()
    if trait_id is None:
        raise NotFound(f"No such trait(s): {name}.")
    if not is_custom(name):
        raise InvalidData(f"Cannot delete standard trait {name}.")
    # SELECT 1 FROM resource_provider_traits WHERE trait_id = :id LIMIT 1
    if conn.execute(sa.select(sa.literal(1)).where(_rpt.c.trait_id == trait_id).limit(1)).first():
        raise Conflict(f"The trait {name} is in use by a resource provider.")
    # DELETE FROM traits WHERE id = :id
    conn.execute(sa.delete(_traits).where(_traits.c.id == trait_id))
    w.change_catalog()


# Built once: the statement of every PUT of a provider's traits, two index lookups
# (an OR of the two conditions made PostgreSQL scan the whole traits table):
# SELECT id, name, created_at, updated_at, false AS held FROM traits WHERE name IN (:names)
# UNION ALL SELECT t.id, t.name, t.created_at, t.updated_at, true FROM traits t
#   JOIN resource_provider_traits rpt ON rpt.trait_id = t.id
#   WHERE rpt.resource_provider_id = :rp_id
_TRAIT_COLUMNS = (_traits.c.id, _traits.c.name, _traits.c.created_at, _traits.c.updated_at)
_NAMED_OR_HELD = sa.union_all(
    sa.select(*_TRAIT_COLUMNS, sa.false().label("held"))
    .where(_traits.c.name.in_(sa.bindparam("names", expanding=True))),
    sa.select(*_TRAIT_COLUMNS, sa.true())
    .join_from(_traits, _rpt, _rpt.c.trait_id == _traits.c.id)
    .where(_rpt.c.resource_provider_id == sa.bindparam("rp_id")),
)


def set_for_provider(
    w: Writer, provider: providers.ProviderRow, names: Collection[str]
) -> tuple[list[Trait], int]:
    """Replace the provider's traits with ``names`` (which must all exist).

    Returns the traits and the provider's generation, incremented only if the set
    changed (as upstream does).
    """
    conn = w.conn
    wanted = sorted(set(names))
    named = set(wanted)
    found = {}
    have_ids = set()
    # The named traits and the provider's own, in one query.
    for row in conn.execute(_NAMED_OR_HELD, {"names": wanted, "rp_id": provider.id}):
        if row.held:
            have_ids.add(row.id)
        if row.name in named:
            found[row.name] = row
    missing = [name for name in wanted if name not in found]
    if missing:
        raise InvalidData(f"No such trait {', '.join(missing)}")
    want_ids = {row.id for row in found.values()}
    # In catalogue (id) order, the order upstream lists a provider's traits in.
    traits = [Trait(row.name, row.created_at, row.updated_at)
              for row in sorted(found.values(), key=lambda row: row.id)]
    if want_ids == have_ids:
        return traits, provider.generation
    if have_ids - want_ids:
        # DELETE FROM resource_provider_traits WHERE resource_provider_id = :id
        # AND trait_id IN (:removed)
        conn.execute(
            sa.delete(_rpt).where(
                _rpt.c.resource_provider_id == provider.id,
                _rpt.c.trait_id.in_(sorted(have_ids - want_ids)),
            )
        )
    insert_rows(conn, _rpt, [
        {"resource_provider_id": provider.id, "trait_id": trait_id, "created_at": w.now}
        for trait_id in sorted(want_ids - have_ids)
    ])
    return traits, providers.bump_generation(w, provider)
