"""Names the migration environment and ``migration.py`` share."""

from __future__ import annotations

# Its own name, so that the API and placement may share one database.
VERSION_TABLE = "api_alembic_version"
