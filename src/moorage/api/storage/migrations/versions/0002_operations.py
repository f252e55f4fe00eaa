"""Durable work (operations owned by a conductor under a lease, guest cleanups) and the
catalog versions that keep the schedulers' in-memory host catalogs coherent.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("services") as batch:
        batch.add_column(sa.Column("change_version", sa.BigInteger, nullable=False,
                                   server_default="0"))
        batch.create_index("ix_services_change_version", ["change_version"])
    with op.batch_alter_table("services") as batch:
        batch.alter_column("change_version", server_default=None)
    state = op.create_table(
        "catalog_state",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("aggregates_version", sa.BigInteger, nullable=False),
        sa.Column("reset_version", sa.BigInteger, nullable=False),
        sa.Column("definitions_version", sa.BigInteger, nullable=False),
    )
    op.bulk_insert(state, [{"id": 1, "version": 1, "aggregates_version": 1,
                            "reset_version": 1, "definitions_version": 1}])
    op.create_table(
        "operations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("server_uuid", sa.String(36), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("arguments", sa.Text, nullable=False),
        sa.Column("owner", sa.String(255), nullable=True),
        sa.Column("lease_until", sa.DateTime, nullable=True),
        sa.Column("takeovers", sa.Integer, nullable=False),
        sa.Column("progress", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_operations_server_uuid", "operations", ["server_uuid"])
    op.create_table(
        "cleanups",
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("server_uuid", sa.String(36), primary_key=True),
        sa.Column("reason", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("catalog_state")
    with op.batch_alter_table("services") as batch:
        batch.drop_index("ix_services_change_version")
        batch.drop_column("change_version")
    op.drop_table("cleanups")
    op.drop_index("ix_operations_server_uuid", "operations")
    op.drop_table("operations")
