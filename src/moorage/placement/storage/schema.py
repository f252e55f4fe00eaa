"""SQL tables of the placement database (SQLAlchemy Core).

The shape follows upstream placement's tables so that operators recognise it,
plus two tables of our own for cache coherence: ``placement_state`` (one row,
the global change version) and ``deleted_providers`` (tombstones).
"""

from __future__ import annotations

import sqlalchemy as sa

# How constraints and indexes are named, in the tables and in every migration. The
# compute API's database (moorage.lifecycle.schema) names them the same way.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


def _timestamps() -> list[sa.Column[object]]:
    return [
        sa.Column("created_at", sa.DateTime, nullable=True),
        sa.Column("updated_at", sa.DateTime, nullable=True),
    ]


def _numbering(name: str, column: str, type_: sa.types.TypeEngine[str]) -> sa.Table:
    """A table that gives each ``column`` value (unique) a small integer id, which the
    other tables refer to it by: upstream's shape for resource classes, traits,
    aggregates, projects, users and consumer types."""
    return sa.Table(
        name,
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(column, type_, nullable=False, unique=True),
        *_timestamps(),
        sqlite_autoincrement=True,
    )


def _of_providers(name: str, column: str, referred: str) -> sa.Table:
    """The ``referred`` rows (traits, aggregates) each provider has: one row a pair,
    indexed both ways."""
    return sa.Table(
        name,
        metadata,
        sa.Column(
            "resource_provider_id",
            sa.Integer,
            sa.ForeignKey("resource_providers.id"),
            primary_key=True,
        ),
        sa.Column(column, sa.Integer, sa.ForeignKey(f"{referred}.id"), primary_key=True),
        *_timestamps(),
        sa.Index(f"ix_{name}_{column}", column),
    )


resource_providers = sa.Table(
    "resource_providers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    sa.Column("name", sa.Unicode(200), nullable=False, unique=True),
    sa.Column("generation", sa.Integer, nullable=False, default=0),
    # Set to the provider's own id for a root provider.
    sa.Column(
        "root_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"), nullable=True
    ),
    sa.Column(
        "parent_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"), nullable=True
    ),
    # Global change version of the last write that touched this provider.
    sa.Column("change_version", sa.BigInteger, nullable=False, default=0),
    *_timestamps(),
    sa.Index("ix_resource_providers_root_provider_id", "root_provider_id"),
    sa.Index("ix_resource_providers_parent_provider_id", "parent_provider_id"),
    sa.Index("ix_resource_providers_change_version", "change_version"),
    sqlite_autoincrement=True,
)

resource_classes = _numbering("resource_classes", "name", sa.String(255))

traits = _numbering("traits", "name", sa.Unicode(255))

inventories = sa.Table(
    "inventories",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"), nullable=False
    ),
    sa.Column(
        "resource_class_id", sa.Integer, sa.ForeignKey("resource_classes.id"), nullable=False
    ),
    sa.Column("total", sa.Integer, nullable=False),
    sa.Column("reserved", sa.Integer, nullable=False),
    sa.Column("min_unit", sa.Integer, nullable=False),
    sa.Column("max_unit", sa.Integer, nullable=False),
    sa.Column("step_size", sa.Integer, nullable=False),
    sa.Column("allocation_ratio", sa.Float, nullable=False),
    *_timestamps(),
    sa.UniqueConstraint("resource_provider_id", "resource_class_id"),
    sa.Index("ix_inventories_resource_class_id", "resource_class_id"),
    sqlite_autoincrement=True,
)

resource_provider_traits = _of_providers("resource_provider_traits", "trait_id", "traits")

placement_aggregates = _numbering("placement_aggregates", "uuid", sa.String(36))

resource_provider_aggregates = _of_providers("resource_provider_aggregates", "aggregate_id",
                                             "placement_aggregates")

projects = _numbering("projects", "external_id", sa.String(255))

users = _numbering("users", "external_id", sa.String(255))

consumer_types = _numbering("consumer_types", "name", sa.Unicode(255))

consumers = sa.Table(
    "consumers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
    sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
    sa.Column("generation", sa.Integer, nullable=False, default=0),
    sa.Column("consumer_type_id", sa.Integer, sa.ForeignKey("consumer_types.id"), nullable=True),
    *_timestamps(),
    sa.Index("ix_consumers_project_id_user_id", "project_id", "user_id"),
    sqlite_autoincrement=True,
)

allocations = sa.Table(
    "allocations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"), nullable=False
    ),
    # The consumer's uuid, as upstream stores it.
    sa.Column("consumer_id", sa.String(36), nullable=False),
    sa.Column(
        "resource_class_id", sa.Integer, sa.ForeignKey("resource_classes.id"), nullable=False
    ),
    sa.Column("used", sa.Integer, nullable=False),
    *_timestamps(),
    sa.Index(
        "ix_allocations_resource_provider_id_resource_class_id",
        "resource_provider_id",
        "resource_class_id",
    ),
    sa.Index("ix_allocations_consumer_id", "consumer_id"),
    sa.Index("ix_allocations_resource_class_id", "resource_class_id"),
    sqlite_autoincrement=True,
)

placement_state = sa.Table(
    "placement_state",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    # Bumped by every write transaction, last, so commit order equals version order.
    sa.Column("version", sa.BigInteger, nullable=False),
    # Version of the last write that changed the trait, resource class or
    # consumer type catalogues.
    sa.Column("catalog_version", sa.BigInteger, nullable=False),
)

deleted_providers = sa.Table(
    "deleted_providers",
    metadata,
    sa.Column("provider_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("change_version", sa.BigInteger, nullable=False),
    sa.Index("ix_deleted_providers_change_version", "change_version"),
)
