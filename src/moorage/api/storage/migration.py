"""Schema migrations (Alembic) of the compute API database."""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from moorage.api.storage.migrations.env_names import VERSION_TABLE
from moorage.db.database import Database

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
    logging.getLogger("alembic.runtime.migration").setLevel(logging.WARNING)
    with db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        return context.get_current_revision()


def upgrade(db: Database) -> None:
    """Bring the schema to the newest revision; nothing when it is current."""
    cfg = _alembic_config()
    logging.getLogger("alembic.runtime.migration").setLevel(logging.WARNING)
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
