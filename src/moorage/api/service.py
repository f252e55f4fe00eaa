"""Assembling a compute API process: its state from the configuration, and a threaded
HTTP server for it.

The conductor (and the scheduler and agent client it uses) is attached by whoever
assembles the full service (``moorage.stack``); the API answers 503 for server
operations while it is missing.
"""

from __future__ import annotations

import logging

from oslo_config import cfg

from moorage.api.app import WSGIApp, build_app
from moorage.api.catalog import ApiCatalog
from moorage.api.glance_images import GlanceImages
from moorage.api.lookups import Definitions
from moorage.api.policy import Policy
from moorage.api.state import ApiState
from moorage.api.storage import migration
from moorage.api.storage.database import open_database
from moorage.db.database import Database
from moorage.placement.client import PlacementClient
from moorage.scheduler.bootability import configured_prefilters
from moorage.scheduler.host_traits import startup_warnings
from moorage.web import ThreadedServer

LOG = logging.getLogger(__name__)


def make_state(conf: cfg.ConfigOpts, *, database: Database | None = None,
               placement: PlacementClient | None = None,
               migrate: bool | None = None) -> ApiState:
    """The state of one API process; migrations applied when configured."""
    db = database if database is not None else open_database(conf)
    if migrate if migrate is not None else conf.database.sync_on_startup:
        migration.upgrade(db)
    client = placement if placement is not None else PlacementClient.from_conf(conf)
    return ApiState(conf=conf, database=db, placement=client, policy=Policy(conf),
                    catalog=ApiCatalog(db, float(conf.service_down_time)),
                    definitions=Definitions(db),
                    glance=GlanceImages(conf) if conf.api.image_service == "glance"
                    else None)


# How long the start-up check waits for placement before it gives up (and says so).
PREFILTER_CHECK_TIMEOUT = 5.0


def check_prefilter_traits(conf: cfg.ConfigOpts,
                           placement: PlacementClient | None = None) -> list[str]:
    """Warn (and return the lines) when a prefilter is on while no provider reports
    any trait of a family it requires: every boot of an image that needs that family
    would be a NoValidHost. A placement that does not answer is a warning too; the
    service starts either way."""
    prefilters = configured_prefilters(conf)
    if not prefilters:
        return []
    client = placement if placement is not None else PlacementClient.from_conf(
        conf, timeout=PREFILTER_CHECK_TIMEOUT)
    lines = startup_warnings(prefilters, client)
    for line in lines:
        LOG.warning("%s", line)
    return lines


class ApiServer(ThreadedServer):
    """A threaded WSGI server of one compute API application."""

    def __init__(self, app: WSGIApp, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(app, host, port, name="compute-api")


def serve(state: ApiState, host: str, port: int) -> ApiServer:
    """A server of ``state`` (not started)."""
    return ApiServer(build_app(state), host, port)
