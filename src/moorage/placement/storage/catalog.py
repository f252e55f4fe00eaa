"""The trait, resource class and consumer type catalogues.

Standard names come from os-traits and os-resource-classes and are synced into
the database on start; ``CUSTOM_*`` names are created through the API.
"""

from __future__ import annotations

from dataclasses import dataclass

import os_resource_classes
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.model.vocabulary import KNOWN
from moorage.placement.storage import schema
from moorage.placement.storage.database import Database


def standard_traits() -> frozenset[str]:
    """Every standard trait name os-traits knows."""
    return KNOWN


def standard_resource_classes() -> tuple[str, ...]:
    """Standard resource class names, in os-resource-classes order."""
    return tuple(os_resource_classes.STANDARDS)


@dataclass(frozen=True)
class Catalog:
    """Name <-> id maps of traits, resource classes and consumer types."""

    trait_ids: dict[str, int]
    rc_ids: dict[str, int]
    consumer_type_ids: dict[str, int]

    @property
    def trait_names(self) -> dict[int, str]:
        return {v: k for k, v in self.trait_ids.items()}

    @property
    def rc_names(self) -> dict[int, str]:
        return {v: k for k, v in self.rc_ids.items()}


def load(conn: Connection) -> Catalog:
    """Read the three catalogues."""
    # SELECT name, id FROM traits / resource_classes / consumer_types
    return Catalog(
        trait_ids={
            n: i for n, i in conn.execute(sa.select(schema.traits.c.name, schema.traits.c.id))
        },
        rc_ids={
            n: i
            for n, i in conn.execute(
                sa.select(schema.resource_classes.c.name, schema.resource_classes.c.id)
            )
        },
        consumer_type_ids={
            n: i
            for n, i in conn.execute(
                sa.select(schema.consumer_types.c.name, schema.consumer_types.c.id)
            )
        },
    )


def sync_standard(db: Database) -> None:
    """Insert the standard traits and resource classes this database lacks."""
    with db.writer() as w:
        conn = w.conn
        have_traits = set(conn.execute(sa.select(schema.traits.c.name)).scalars())
        missing_traits = sorted(standard_traits() - have_traits)
        if missing_traits:
            conn.execute(
                sa.insert(schema.traits),
                [{"name": n, "created_at": w.now} for n in missing_traits],
            )
        have_rcs = set(conn.execute(sa.select(schema.resource_classes.c.name)).scalars())
        missing_rcs = [n for n in standard_resource_classes() if n not in have_rcs]
        if missing_rcs:
            conn.execute(
                sa.insert(schema.resource_classes),
                [{"name": n, "created_at": w.now} for n in missing_rcs],
            )
        if missing_traits or missing_rcs:
            w.change_catalog()
