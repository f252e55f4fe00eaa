"""instance_actions and instance_actions_events: what was asked of each server under
which request id, and the steps the conductor took for it (nova's os-instance-actions).

Revision ID: 0013
Revises: 0010
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "instance_actions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("server_uuid", sa.String(36), nullable=False),
        sa.Column("request_id", sa.String(255), nullable=False),
        sa.Column("action", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=True),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("start_time", sa.DateTime, nullable=False),
        sa.Column("finish_time", sa.DateTime, nullable=True),
        sa.Column("message", sa.String(255), nullable=True),
        sa.Column("updated_at", sa.DateTime, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_instance_actions_server_uuid_request_id", "instance_actions",
                    ["server_uuid", "request_id"])
    op.create_table(
        "instance_actions_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("action_id", sa.Integer,
                  sa.ForeignKey("instance_actions.id",
                                name="fk_instance_actions_events_action_id_instance_actions"),
                  nullable=False),
        sa.Column("event", sa.String(255), nullable=False),
        sa.Column("start_time", sa.DateTime, nullable=False),
        sa.Column("finish_time", sa.DateTime, nullable=True),
        sa.Column("result", sa.String(255), nullable=True),
        sa.Column("traceback", sa.Text, nullable=True),
        sa.Column("host", sa.String(255), nullable=True),
        sa.Column("details", sa.Text, nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_instance_actions_events_action_id", "instance_actions_events",
                    ["action_id"])


def downgrade() -> None:
    op.drop_table("instance_actions_events")
    op.drop_table("instance_actions")
