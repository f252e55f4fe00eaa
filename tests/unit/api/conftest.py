"""The compute API's database as most of these tests use it: SQLite, migrated to the
head (a module that runs on both backends defines its own ``db``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from moorage.api.storage import migration
from moorage.db.database import Database


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'api.sqlite'}")
    migration.upgrade(database)
    return database
