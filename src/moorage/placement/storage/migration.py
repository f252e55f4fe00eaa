"""Schema migrations (Alembic) and the catalogue sync that follows them."""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from moorage.placement.storage import catalog
from moorage.placement.storage.database import Database

_SCRIPTS = Path(__file__).with_name("migrations")


def _alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_SCRIPTS))
    return cfg


def head_revision() -> str:
    """The newest migration shipped with this version of Moorage."""
    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(db: Database) -> str | None:
    """The migration the database is at, or None for an empty database."""
    with db.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(db: Database) -> None:
    """Bring the schema to the newest revision and sync the standard catalogues.

    Safe to run on every start: it does nothing when the database is current.
    """
    cfg = _alembic_config()
    # Alembic narrates every run at INFO ("Context impl SQLiteImpl."); only real
    # migrations are worth a line, and upgrade() says which ran through the CLI.
    logging.getLogger("alembic.runtime.migration").setLevel(logging.WARNING)
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
    catalog.sync_standard(db)
