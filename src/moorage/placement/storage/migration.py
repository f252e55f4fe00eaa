"""Schema migrations (Alembic) and the catalogue sync that follows them."""

from __future__ import annotations

from pathlib import Path

from moorage.db.migration import Migrations
from moorage.placement.storage import catalog
from moorage.placement.storage.database import Database

MIGRATIONS = Migrations(Path(__file__).with_name("migrations"))

head_revision = MIGRATIONS.head_revision
current_revision = MIGRATIONS.current_revision


def upgrade(db: Database) -> None:
    """Bring the schema to the newest revision and sync the standard catalogues.

    Safe to run on every start: it does nothing when the database is current.
    """
    MIGRATIONS.upgrade(db)
    catalog.sync_standard(db)
