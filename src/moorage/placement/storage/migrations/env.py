"""Alembic environment for the placement database.

Run programmatically by ``moorage.placement.storage.migration.upgrade``, which
hands over an open connection in ``config.attributes["connection"]``.
"""

from __future__ import annotations

from alembic import context

from moorage.placement.storage.schema import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "run placement migrations with `moorage placement db sync`, not the alembic command"
    )

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
