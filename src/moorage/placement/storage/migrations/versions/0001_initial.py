"""Initial placement schema.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _timestamps() -> list[sa.Column[object]]:
    return [sa.Column("created_at", sa.DateTime), sa.Column("updated_at", sa.DateTime)]


def upgrade() -> None:
    autoinc = {"sqlite_autoincrement": True}
    op.create_table(
        "resource_providers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.Unicode(200), nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("root_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id")),
        sa.Column("parent_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id")),
        sa.Column("change_version", sa.BigInteger, nullable=False),
        *_timestamps(),
        sa.UniqueConstraint("uuid", name="uq_resource_providers_uuid"),
        sa.UniqueConstraint("name", name="uq_resource_providers_name"),
        **autoinc,
    )
    op.create_index("ix_resource_providers_root_provider_id", "resource_providers",
                    ["root_provider_id"])
    op.create_index("ix_resource_providers_parent_provider_id", "resource_providers",
                    ["parent_provider_id"])
    op.create_index("ix_resource_providers_change_version", "resource_providers",
                    ["change_version"])

    op.create_table(
        "resource_classes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(255), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint("name", name="uq_resource_classes_name"),
        **autoinc,
    )
    op.create_table(
        "traits",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.Unicode(255), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint("name", name="uq_traits_name"),
        **autoinc,
    )
    op.create_table(
        "inventories",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
                  nullable=False),
        sa.Column("resource_class_id", sa.Integer, sa.ForeignKey("resource_classes.id"),
                  nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("reserved", sa.Integer, nullable=False),
        sa.Column("min_unit", sa.Integer, nullable=False),
        sa.Column("max_unit", sa.Integer, nullable=False),
        sa.Column("step_size", sa.Integer, nullable=False),
        sa.Column("allocation_ratio", sa.Float, nullable=False),
        *_timestamps(),
        sa.UniqueConstraint("resource_provider_id", "resource_class_id",
                            name="uq_inventories_resource_provider_id_resource_class_id"),
        **autoinc,
    )
    op.create_index("ix_inventories_resource_class_id", "inventories", ["resource_class_id"])

    op.create_table(
        "resource_provider_traits",
        sa.Column("resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
                  primary_key=True),
        sa.Column("trait_id", sa.Integer, sa.ForeignKey("traits.id"), primary_key=True),
        *_timestamps(),
    )
    op.create_index("ix_resource_provider_traits_trait_id", "resource_provider_traits",
                    ["trait_id"])

    op.create_table(
        "placement_aggregates",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", sa.String(36), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint("uuid", name="uq_placement_aggregates_uuid"),
        **autoinc,
    )
    op.create_table(
        "resource_provider_aggregates",
        sa.Column("resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
                  primary_key=True),
        sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("placement_aggregates.id"),
                  primary_key=True),
        *_timestamps(),
    )
    op.create_index("ix_resource_provider_aggregates_aggregate_id",
                    "resource_provider_aggregates", ["aggregate_id"])

    for table in ("projects", "users"):
        op.create_table(
            table,
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("external_id", sa.String(255), nullable=False),
            *_timestamps(),
            sa.UniqueConstraint("external_id", name=f"uq_{table}_external_id"),
            **autoinc,
        )

    op.create_table(
        "consumer_types",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.Unicode(255), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint("name", name="uq_consumer_types_name"),
        **autoinc,
    )
    op.create_table(
        "consumers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("consumer_type_id", sa.Integer, sa.ForeignKey("consumer_types.id")),
        *_timestamps(),
        sa.UniqueConstraint("uuid", name="uq_consumers_uuid"),
        **autoinc,
    )
    op.create_index("ix_consumers_project_id_user_id", "consumers", ["project_id", "user_id"])

    op.create_table(
        "allocations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
                  nullable=False),
        sa.Column("consumer_id", sa.String(36), nullable=False),
        sa.Column("resource_class_id", sa.Integer, sa.ForeignKey("resource_classes.id"),
                  nullable=False),
        sa.Column("used", sa.Integer, nullable=False),
        *_timestamps(),
        **autoinc,
    )
    op.create_index("ix_allocations_resource_provider_id_resource_class_id", "allocations",
                    ["resource_provider_id", "resource_class_id"])
    op.create_index("ix_allocations_consumer_id", "allocations", ["consumer_id"])
    op.create_index("ix_allocations_resource_class_id", "allocations", ["resource_class_id"])

    placement_state = op.create_table(
        "placement_state",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("catalog_version", sa.BigInteger, nullable=False),
    )
    op.bulk_insert(placement_state, [{"id": 1, "version": 0, "catalog_version": 0}])

    op.create_table(
        "deleted_providers",
        sa.Column("provider_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("change_version", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_deleted_providers_change_version", "deleted_providers",
                    ["change_version"])
