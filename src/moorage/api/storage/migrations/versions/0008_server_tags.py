"""server_tags: a server's tags a row each, so that GET /servers filters on them (tags,
tags-any, not-tags, not-tags-any) with an indexed EXISTS instead of reading every
server's JSON; the tags servers already have are copied from servers.attributes. And an
index on servers (created_at, uuid), the order a server list pages in.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    tags = op.create_table(
        "server_tags",
        sa.Column("server_uuid", sa.String(36), primary_key=True),
        sa.Column("tag", sa.String(60), primary_key=True),
    )
    op.create_index("ix_server_tags_tag", "server_tags", ["tag"])
    op.create_index("ix_servers_created_at_uuid", "servers", ["created_at", "uuid"])
    rows: list[dict[str, str]] = []
    for uuid, text in op.get_bind().execute(sa.text(
            "SELECT uuid, attributes FROM servers WHERE attributes LIKE '%\"tags\"%'")):
        found = json.loads(text).get("tags") or []
        rows.extend({"server_uuid": uuid, "tag": tag} for tag in dict.fromkeys(found))
    if rows:
        op.bulk_insert(tags, rows)


def downgrade() -> None:
    op.drop_index("ix_servers_created_at_uuid", table_name="servers")
    op.drop_table("server_tags")
