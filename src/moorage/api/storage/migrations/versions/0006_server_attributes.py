"""servers.attributes: what a server's owner said of it (description, hostname,
metadata, tags, key pair, access addresses, user data, scheduler hints), as the
microversioned compute API stores and shows it. Existing servers get "{}", which reads
as every field's default.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("attributes", sa.Text, nullable=False,
                                   server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("attributes")
