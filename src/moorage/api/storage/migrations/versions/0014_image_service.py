"""The image service's columns and tables: an image's status, its data's size and
hashes, protected, os_hidden and soft deletion on ``images``; ``image_tags`` and
``image_members`` beside it. Formats may be null (glance creates images without
them). Images registered before have no data and were bootable: they are ``active``.

Revision ID: 0014
Revises: 0010
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("images") as batch:
        batch.alter_column("name", existing_type=sa.String(255), nullable=True)
        batch.alter_column("disk_format", existing_type=sa.String(16), nullable=True)
        batch.alter_column("container_format", existing_type=sa.String(16), nullable=True)
        batch.add_column(sa.Column("status", sa.String(16), nullable=False,
                                   server_default="active"))
        batch.add_column(sa.Column("size", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("virtual_size", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("checksum", sa.String(32), nullable=True))
        batch.add_column(sa.Column("os_hash_algo", sa.String(64), nullable=True))
        batch.add_column(sa.Column("os_hash_value", sa.String(128), nullable=True))
        batch.add_column(sa.Column("protected", sa.Boolean, nullable=False,
                                   server_default=sa.false()))
        batch.add_column(sa.Column("os_hidden", sa.Boolean, nullable=False,
                                   server_default=sa.false()))
        batch.add_column(sa.Column("deleted", sa.Boolean, nullable=False,
                                   server_default=sa.false()))
        batch.add_column(sa.Column("deleted_at", sa.DateTime, nullable=True))
    op.create_table(
        "image_tags",
        sa.Column("image_id", sa.String(36), sa.ForeignKey("images.id"), primary_key=True),
        sa.Column("value", sa.String(255), primary_key=True),
    )
    op.create_table(
        "image_members",
        sa.Column("image_id", sa.String(36), sa.ForeignKey("images.id"), primary_key=True),
        sa.Column("member", sa.String(255), primary_key=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_image_members_member", "image_members", ["member"])


def downgrade() -> None:
    op.drop_index("ix_image_members_member", table_name="image_members")
    op.drop_table("image_members")
    op.drop_table("image_tags")
    with op.batch_alter_table("images") as batch:
        for column in ("deleted_at", "deleted", "os_hidden", "protected", "os_hash_value",
                       "os_hash_algo", "checksum", "virtual_size", "size", "status"):
            batch.drop_column(column)
        batch.alter_column("container_format", existing_type=sa.String(16), nullable=False)
        batch.alter_column("disk_format", existing_type=sa.String(16), nullable=False)
        batch.alter_column("name", existing_type=sa.String(255), nullable=False)
