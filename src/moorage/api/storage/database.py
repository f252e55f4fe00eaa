"""Opening the compute API database: ``moorage.db``'s ``Database`` (the engines,
SQLite pragmas and transaction disciplines placement's uses too) on the ``[database]``
options."""

from __future__ import annotations

from pathlib import Path

import platformdirs
from oslo_config import cfg

from moorage.conf import where
from moorage.db.database import Database
from moorage.db.engine import url_problem


def default_database_url() -> str:
    """The embedded SQLite database in the user's data directory."""
    data_dir = Path(platformdirs.user_data_dir("moorage"))
    data_dir.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{data_dir / 'api.sqlite'}"


def database_url(conf: cfg.ConfigOpts) -> str:
    """The configured database, or the embedded one; ValueError naming the option and
    its file for a URL Moorage cannot use."""
    url: str = str(conf.database.connection or default_database_url())
    problem = url_problem(url)
    if problem is not None:
        found = where(conf, "database", "connection")
        raise ValueError(f"[database] connection{found}: {problem}")
    return url


def open_database(conf: cfg.ConfigOpts) -> Database:
    return Database(
        database_url(conf),
        sqlite_synchronous=conf.database.sqlite_synchronous,
        pool_size=conf.database.max_pool_size,
    )
