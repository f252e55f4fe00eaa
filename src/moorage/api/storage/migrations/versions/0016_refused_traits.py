"""services.refused: the traits each node's driver reports unsupported, of the families an
image property names (and the guest features), as the agent's heartbeat carries them.

Why: placement holds only the traits a host reports supported; a False report removes
the trait and leaves no mark. The dry run (a host the prefilters would not have chosen
will refuse the guest) and the upgrade preflight (a host that reports a family False
cannot, one that reports nothing of it does not yet) need the host's own "no".

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("services") as batch:
        # JSON {node: [trait, ...]}; an agent of an older release sends nothing: {}.
        batch.add_column(sa.Column("refused", sa.Text, nullable=False, server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("services") as batch:
        batch.drop_column("refused")
