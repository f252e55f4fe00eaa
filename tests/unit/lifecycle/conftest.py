"""The lifecycle's database on both backends (the servers in it are brought to their
states by ``tests/lifecycle_paths.py``)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from moorage.api.storage import migration
from moorage.db.database import Database


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """The compute API's database on both backends: on PostgreSQL the lifecycle's
    statements run as driver SQL (``Statement``), on SQLite through SQLAlchemy."""
    url = (f"sqlite:///{tmp_path / 'api.sqlite'}" if request.param == "sqlite"
           else request.getfixturevalue("postgresql_url"))
    database = Database(url)
    migration.upgrade(database)
    yield database
    database.dispose()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def shared_db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[Database]:
    """One database per module and backend, for tests that name their own servers
    (``unique``): creating and migrating a database costs more than most tests."""
    url = (f"sqlite:///{tmp_path_factory.mktemp('lifecycle') / 'api.sqlite'}"
           if request.param == "sqlite" else request.getfixturevalue("module_postgresql_url"))
    database = Database(url)
    migration.upgrade(database)
    yield database
    database.dispose()


_NAMES = itertools.count()


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Names no other test of the module uses: ``unique("s1")``."""
    prefix = f"t{next(_NAMES)}-"
    return lambda name: prefix + name


