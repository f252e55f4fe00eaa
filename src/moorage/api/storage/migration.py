"""Schema migrations (Alembic) of the compute API database."""

from __future__ import annotations

from pathlib import Path

from moorage.api.storage.migrations.env_names import VERSION_TABLE
from moorage.db.migration import Migrations

MIGRATIONS = Migrations(Path(__file__).with_name("migrations"), VERSION_TABLE)

head_revision = MIGRATIONS.head_revision
current_revision = MIGRATIONS.current_revision
upgrade = MIGRATIONS.upgrade
