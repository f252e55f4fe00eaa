"""keypairs: the users' key pairs (os-keypairs), one name per user; the public key and
its fingerprint, never a private key.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "keypairs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("type", sa.String(8), nullable=False),
        sa.Column("fingerprint", sa.String(255), nullable=False),
        sa.Column("public_key", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("user_id", "name", name="uniq_keypairs0user_id0name"),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("keypairs")
