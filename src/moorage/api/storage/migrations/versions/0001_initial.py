"""Initial compute API schema.

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _timestamps() -> list[sa.Column[object]]:
    return [
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "flavors",
        sa.Column("id", sa.String(255), primary_key=True),  # the API id (flavorid)
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("vcpus", sa.Integer, nullable=False),
        sa.Column("memory_mb", sa.Integer, nullable=False),
        sa.Column("root_gb", sa.Integer, nullable=False),
        sa.Column("ephemeral_gb", sa.Integer, nullable=False),
        sa.Column("swap_mb", sa.Integer, nullable=False),
        sa.Column("is_public", sa.Boolean, nullable=False),
        sa.Column("description", sa.Text, nullable=True),
        *_timestamps(),
    )

    op.create_table(
        "flavor_extra_specs",
        sa.Column("flavor_id", sa.String(255),
                  sa.ForeignKey("flavors.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("value", sa.String(255), nullable=False),
    )

    op.create_table(
        "images",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("disk_format", sa.String(16), nullable=False),
        sa.Column("container_format", sa.String(16), nullable=False),
        sa.Column("min_disk", sa.Integer, nullable=False),
        sa.Column("min_ram", sa.Integer, nullable=False),
        sa.Column("owner", sa.String(255), nullable=True),
        sa.Column("visibility", sa.String(16), nullable=False),
        sa.Column("properties", sa.Text, nullable=False),  # JSON object of strings
        *_timestamps(),
    )

    op.create_table(
        "services",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("host", sa.String(255), nullable=False, unique=True),
        sa.Column("binary", sa.String(255), nullable=False),
        sa.Column("driver", sa.String(64), nullable=False),
        sa.Column("nodes", sa.Text, nullable=False),  # JSON list of node names
        sa.Column("agent_url", sa.String(255), nullable=True),
        sa.Column("supported_instances", sa.Text, nullable=False),  # JSON [[arch, hv, mode]]
        sa.Column("hypervisor_version", sa.BigInteger, nullable=True),
        sa.Column("version", sa.String(64), nullable=True),
        sa.Column("disabled", sa.Boolean, nullable=False),
        sa.Column("disabled_reason", sa.String(255), nullable=True),
        sa.Column("forced_down", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        # The last heartbeat.
        sa.Column("updated_at", sa.DateTime, nullable=False),
        sqlite_autoincrement=True,
    )

    op.create_table(
        "aggregates",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("availability_zone", sa.String(255), nullable=True),
        *_timestamps(),
        sqlite_autoincrement=True,
    )

    op.create_table(
        "aggregate_hosts",
        sa.Column("aggregate_id", sa.Integer,
                  sa.ForeignKey("aggregates.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("host", sa.String(255), primary_key=True),
    )

    op.create_table(
        "aggregate_metadata",
        sa.Column("aggregate_id", sa.Integer,
                  sa.ForeignKey("aggregates.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("value", sa.String(255), nullable=False),
    )

    op.create_table(
        "servers",
        sa.Column("uuid", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("flavor_id", sa.String(255), nullable=False),
        sa.Column("flavor", sa.Text, nullable=False),  # JSON snapshot
        sa.Column("image_id", sa.String(36), nullable=False),
        sa.Column("image", sa.Text, nullable=False),  # JSON snapshot
        sa.Column("is_bfv", sa.Boolean, nullable=False),
        sa.Column("availability_zone", sa.String(255), nullable=True),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("task_state", sa.String(64), nullable=True),
        sa.Column("host", sa.String(255), nullable=True, index=True),
        sa.Column("node", sa.String(255), nullable=True),
        sa.Column("attempts", sa.Text, nullable=False),  # JSON list
        sa.Column("scheduling", sa.Text, nullable=False),  # JSON object
        sa.Column("fault", sa.Text, nullable=True),  # JSON object
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
        sa.Column("launched_at", sa.DateTime, nullable=True),
        sa.Column("deleted_at", sa.DateTime, nullable=True),
        sa.Index("ix_servers_project_id", "project_id"),
    )

    op.create_table(
        "migrations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("server_uuid", sa.String(36), nullable=False, index=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("source_host", sa.String(255), nullable=False),
        sa.Column("dest_host", sa.String(255), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
        sqlite_autoincrement=True,
    )
