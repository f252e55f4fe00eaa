"""Services get a uuid and nodes an integer id, the two names nova's compute API gives
them: a service is named by its uuid from microversion 2.53 (by its integer id before),
a hypervisor by the integer id of its compute node before 2.53. Every existing service
gets a fresh uuid, and every node it last reported a row.

This text is frozen: it names the tables as they are at this revision, never the live
schema (``moorage.api.storage.schema``), so it builds the same tables whatever later
revisions change.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27
"""

from __future__ import annotations

import json
import uuid

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# The columns this revision reads and writes, as they are here.
_services = sa.table("services", sa.column("id", sa.Integer), sa.column("uuid", sa.String),
                     sa.column("nodes", sa.Text))


def upgrade() -> None:
    with op.batch_alter_table("services") as batch:
        batch.add_column(sa.Column("uuid", sa.String(36), nullable=True))
    conn = op.get_bind()
    nodes: list[dict[str, object]] = []
    for service_id, reported in conn.execute(
            sa.select(_services.c.id, _services.c.nodes).order_by(_services.c.id)).all():
        conn.execute(_services.update().where(_services.c.id == service_id)
                     .values(uuid=str(uuid.uuid4())))
        names = json.loads(reported or "[]")
        nodes.extend({"service_id": service_id, "hypervisor_hostname": str(name)}
                     for name in dict.fromkeys(names))
    with op.batch_alter_table("services") as batch:
        batch.alter_column("uuid", existing_type=sa.String(36), nullable=False)
        batch.create_unique_constraint("uq_services_uuid", ["uuid"])
    # Created after the services table is rebuilt (SQLite's batch mode drops and
    # re-creates it), and with no foreign key to it, for that very reason.
    compute_nodes = op.create_table(
        "compute_nodes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("service_id", sa.Integer, nullable=False),
        sa.Column("hypervisor_hostname", sa.String(255), nullable=False),
        sa.UniqueConstraint("service_id", "hypervisor_hostname",
                            name="uq_compute_nodes_service_id_hypervisor_hostname"),
        sqlite_autoincrement=True,
    )
    if nodes:
        op.bulk_insert(compute_nodes, nodes)


def downgrade() -> None:
    op.drop_table("compute_nodes")
    with op.batch_alter_table("services") as batch:
        batch.drop_constraint("uq_services_uuid", type_="unique")
        batch.drop_column("uuid")
