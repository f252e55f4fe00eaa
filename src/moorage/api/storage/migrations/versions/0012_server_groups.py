"""server_groups and server_group_members: os-server-groups, their members, and the
host a member's build reserved under the group's lock (the late check).

Revision ID: 0012
Revises: 0010
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "server_groups",
        sa.Column("uuid", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("policy", sa.String(32), nullable=False),
        sa.Column("rules", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_server_groups_project_id", "server_groups", ["project_id"])
    op.create_table(
        "server_group_members",
        sa.Column("group_uuid", sa.String(36),
                  sa.ForeignKey("server_groups.uuid", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("server_uuid", sa.String(36), primary_key=True),
        sa.Column("host", sa.String(255), nullable=True),
    )
    op.create_index("ix_server_group_members_server_uuid", "server_group_members",
                    ["server_uuid"])


def downgrade() -> None:
    op.drop_table("server_group_members")
    op.drop_table("server_groups")
