"""The projects a private flavor is shared with (nova's flavor_projects): the
os-flavor-access API writes them, and a project's members see, list and boot the
private flavors shared with it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "flavor_projects",
        sa.Column("flavor_id", sa.String(255),
                  sa.ForeignKey("flavors.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("project_id", sa.String(255), primary_key=True),
    )
    op.create_index("ix_flavor_projects_project_id", "flavor_projects", ["project_id"])


def downgrade() -> None:
    op.drop_index("ix_flavor_projects_project_id", table_name="flavor_projects")
    op.drop_table("flavor_projects")
