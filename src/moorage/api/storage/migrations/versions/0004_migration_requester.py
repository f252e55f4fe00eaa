"""Who asked for each move (migrations.user_id, project_id: GET /os-migrations shows
and filters them from microversion 2.80, as nova does), and the indexes a page of
migrations is read from: (created_at, id), the order it is listed in, and updated_at,
what changes-since and changes-before compare.

Moves recorded before this revision keep NULL for who asked: nova answers the same
for the migrations it made before it kept them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("migrations") as batch:
        batch.add_column(sa.Column("user_id", sa.String(255), nullable=True))
        batch.add_column(sa.Column("project_id", sa.String(255), nullable=True))
    op.create_index("ix_migrations_created_at_id", "migrations", ["created_at", "id"])
    op.create_index("ix_migrations_updated_at", "migrations", ["updated_at"])


def downgrade() -> None:
    op.drop_index("ix_migrations_updated_at", table_name="migrations")
    op.drop_index("ix_migrations_created_at_id", table_name="migrations")
    with op.batch_alter_table("migrations") as batch:
        batch.drop_column("project_id")
        batch.drop_column("user_id")
