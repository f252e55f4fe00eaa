"""Alembic environment for the compute API database.

Run programmatically by ``moorage.api.storage.migration.upgrade``, which hands over an
open connection in ``config.attributes["connection"]``.
"""

from __future__ import annotations

from alembic import context

from moorage.api.storage.migrations.env_names import VERSION_TABLE
from moorage.api.storage.schema import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run compute API migrations with `moorage api db sync`, "
                       "not the alembic command")

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True,
                  version_table=VERSION_TABLE)
with context.begin_transaction():
    context.run_migrations()
