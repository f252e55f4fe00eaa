"""quotas, quota_classes, quota_projects: nova's limits per project and user, the
defaults of os-quota-class-sets, and the row each project's quota checks lock; an
index on the live servers of a project, which every create's check counts.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_LIVE = "status <> 'DELETED'"


def upgrade() -> None:
    op.create_table(
        "quotas",
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("resource", sa.String(255), nullable=False),
        sa.Column("hard_limit", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
        sa.PrimaryKeyConstraint("project_id", "user_id", "resource", name="pk_quotas"),
    )
    op.create_table(
        "quota_classes",
        sa.Column("class_name", sa.String(255), nullable=False),
        sa.Column("resource", sa.String(255), nullable=False),
        sa.Column("hard_limit", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
        sa.PrimaryKeyConstraint("class_name", "resource", name="pk_quota_classes"),
    )
    op.create_table(
        "quota_projects",
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("project_id", name="pk_quota_projects"),
    )
    op.create_index("ix_servers_project_id_live", "servers", ["project_id"],
                    sqlite_where=sa.text(_LIVE), postgresql_where=sa.text(_LIVE))


def downgrade() -> None:
    op.drop_index("ix_servers_project_id_live", table_name="servers")
    op.drop_table("quota_projects")
    op.drop_table("quota_classes")
    op.drop_table("quotas")
