"""A service's schema migrations (Alembic): its script directory and version table.

Each service keeps its own history (placement's, the compute API's) and may share
one database with another, so each names its own version table. The scripts'
``env.py`` takes the open connection from ``config.attributes["connection"]``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from moorage.db.database import Database


def _quiet_alembic() -> None:
    # Alembic narrates every run at INFO ("Context impl SQLiteImpl."); only real
    # migrations are worth a line, and `db sync` says which ran.
    logging.getLogger("alembic.runtime.migration").setLevel(logging.WARNING)


@dataclass(frozen=True)
class Migrations:
    """The Alembic history in ``scripts``, recorded in the table ``version_table``."""

    scripts: Path
    version_table: str = "alembic_version"

    def _config(self) -> Config:
        config = Config()
        config.set_main_option("script_location", str(self.scripts))
        return config

    def head_revision(self) -> str:
        """The newest migration shipped with this version of Moorage."""
        head = ScriptDirectory.from_config(self._config()).get_current_head()
        assert head is not None
        return head

    def current_revision(self, db: Database) -> str | None:
        """The migration the database is at, or None for an empty database."""
        _quiet_alembic()
        with db.engine.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"version_table": self.version_table})
            return context.get_current_revision()

    def require_current(self, db: Database, what: str, sync: str) -> None:
        """RuntimeError in one line unless the database is at the newest revision:
        ``what`` it is, and the command (``sync``) that brings it there."""
        current, head = self.current_revision(db), self.head_revision()
        if current != head:
            found = f"at revision {current}" if current else "empty (no schema)"
            raise RuntimeError(f"the {what} is {found}; this Moorage needs revision {head}: "
                               f"run `{sync}` first (or set sync_on_startup)")

    def upgrade(self, db: Database) -> None:
        """Bring the schema to the newest revision; nothing when it is current."""
        config = self._config()
        _quiet_alembic()
        with db.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
