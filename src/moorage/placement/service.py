"""PlacementService: the configuration, database, index and policy one process serves from."""

from __future__ import annotations

import logging
from pathlib import Path
from wsgiref.types import WSGIEnvironment

import platformdirs
from oslo_config import cfg

from moorage import heap
from moorage.conf import where
from moorage.db.engine import url_problem
from moorage.metrics import HttpMetrics
from moorage.placement.engine.index import ProviderIndex
from moorage.placement.errors import BadRequest, RequestEntityTooLarge
from moorage.placement.policy import Policy
from moorage.placement.storage import migration
from moorage.placement.storage.database import Database
from moorage.placement.storage.statistics import StatisticsKeeper

LOG = logging.getLogger(__name__)


def default_database_url() -> str:
    """The embedded SQLite database in the user's data directory."""
    data_dir = Path(platformdirs.user_data_dir("moorage"))
    data_dir.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{data_dir / 'placement.sqlite'}"


def database_url(conf: cfg.ConfigOpts) -> str:
    """The configured database, or the embedded one; ValueError naming the option and
    its file for a URL Moorage cannot use."""
    url: str = conf.placement_database.connection or default_database_url()
    problem = url_problem(url)
    if problem is not None:
        found = where(conf, "placement_database", "connection")
        raise ValueError(f"[placement_database] connection{found}: {problem}")
    return url


def open_database(conf: cfg.ConfigOpts) -> Database:
    return Database(
        database_url(conf),
        sqlite_synchronous=conf.placement_database.sqlite_synchronous,
        pool_size=conf.placement_database.max_pool_size,
        group_commit=True,
    )


class PlacementService:
    """What every request handler reaches through ``req.service``."""

    def __init__(self, conf: cfg.ConfigOpts, db: Database | None = None) -> None:
        self.conf = conf
        self.db = db if db is not None else open_database(conf)
        self.index = ProviderIndex(self.db)
        self.policy = Policy(conf)
        self.max_body = int(conf.api.max_request_body_size)
        self.statistics = StatisticsKeeper(self.db)
        self.metrics = HttpMetrics()

    def prepare(self, *, migrate: bool | None = None, settle: bool = True) -> None:
        """Apply migrations (when configured) and load the index. ``settle`` False:
        leave the process's garbage collector as it is (a service in a process that
        builds many, the tests')."""
        if migrate if migrate is not None else self.conf.placement_database.sync_on_startup:
            migration.upgrade(self.db)
        self.index.catch_up()
        # The index is a large, long-lived heap: keep the garbage collector's full
        # collections from walking it on every request (they cost tens of ms at
        # 10,000 providers).
        if settle:
            heap.settle()
        LOG.info("placement index loaded: %d providers at version %d",
                 len(self.index.by_id), self.index.version)
        self.statistics.start()

    def close(self) -> None:
        """Stop the background work and close the database's connections."""
        self.statistics.stop()
        self.db.dispose()

    def read_body(self, environ: WSGIEnvironment) -> bytes:
        """The request body, refusing bodies over ``[api] max_request_body_size``."""
        stream = environ.get("wsgi.input")
        if stream is None:
            return b""
        length_header = environ.get("CONTENT_LENGTH") or ""
        if length_header:
            try:
                length = int(length_header)
            except ValueError:
                raise BadRequest("content-length header must be an integer") from None
            if length > self.max_body:
                raise RequestEntityTooLarge(
                    f"Request body is {length} bytes; the limit is {self.max_body} "
                    "([api] max_request_body_size)."
                )
            return bytes(stream.read(length)) if length > 0 else b""
        data = bytes(stream.read(self.max_body + 1))
        if len(data) > self.max_body:
            raise RequestEntityTooLarge(
                f"Request body exceeds the limit of {self.max_body} bytes "
                "([api] max_request_body_size)."
            )
        return data
