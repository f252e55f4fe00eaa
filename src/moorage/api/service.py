"""Assembling a compute API process: its state from the configuration, and a threaded
HTTP server for it.

The conductor (and the scheduler and agent client it uses) is attached by whoever
assembles the full service (``moorage api serve`` does, when the conductor package
provides it); the API answers 503 for server operations while it is missing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from oslo_config import cfg

from moorage.api.app import WSGIApp, build_app
from moorage.api.catalog import ApiCatalog
from moorage.api.lookups import Definitions
from moorage.api.policy import Policy
from moorage.api.state import ApiState
from moorage.api.storage import migration
from moorage.api.storage.database import open_database
from moorage.compute.client import AgentClient, AgentUnreachable
from moorage.compute.remote import HTTPAgentClient
from moorage.conductor import Conductor
from moorage.db.database import Database
from moorage.placement.client import PlacementClient
from moorage.scheduler.bootability import configured_prefilters
from moorage.scheduler.host_traits import startup_warnings
from moorage.scheduler.manager import Scheduler
from moorage.web import ThreadedServer

LOG = logging.getLogger(__name__)


def make_state(conf: cfg.ConfigOpts, *, database: Database | None = None,
               placement: PlacementClient | None = None,
               migrate: bool | None = None) -> ApiState:
    """The state of one API process; migrations applied when configured."""
    db = database if database is not None else open_database(conf)
    if migrate if migrate is not None else conf.database.sync_on_startup:
        migration.upgrade(db)
    client = placement if placement is not None else PlacementClient(
        conf.placement.endpoint_override, conf.placement.token)
    return ApiState(conf=conf, database=db, placement=client, policy=Policy(conf),
                    catalog=ApiCatalog(db, float(conf.service_down_time)),
                    definitions=Definitions(db))


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
    client = placement if placement is not None else PlacementClient(
        conf.placement.endpoint_override, conf.placement.token,
        timeout=PREFILTER_CHECK_TIMEOUT)
    lines = startup_warnings(prefilters, client)
    for line in lines:
        LOG.warning("%s", line)
    return lines


def agent_resolver(catalog: ApiCatalog) -> Callable[[str], str]:
    """``resolve(host)`` for HTTPAgentClient: the agent URL the host last heart-beat
    with, from the in-memory catalog as the scheduling that chose the host left it."""

    def resolve(host: str) -> str:
        info = catalog.known(host)
        if info is None or not info.agent_url:
            raise AgentUnreachable(f"no compute agent of host {host} has registered with "
                                   "the compute API")
        return info.agent_url

    return resolve


def make_conductor(conf: cfg.ConfigOpts, database: Database, placement: PlacementClient,
                   agents: AgentClient, catalog: ApiCatalog | None = None) -> Conductor:
    """A conductor (not started) with its scheduler, reading hosts and aggregates from
    ``database`` (through ``catalog`` when given)."""
    catalog = catalog or ApiCatalog(database, float(conf.service_down_time))
    scheduler = Scheduler(conf, placement, catalog)
    return Conductor(conf, database, scheduler, placement, agents, catalog)


def attach_workers(state: ApiState, agents: AgentClient | None = None,
                   agent_timeout: float = 300.0) -> Conductor | None:
    """Give ``state`` its agent client (HTTP to the registered agents unless given) and,
    unless ``[conductor] run_in_api`` is off, its conductor (started) and scheduler.
    Stop the conductor with ``state.conductor.stop()``."""
    state.agents = agents if agents is not None else HTTPAgentClient(
        agent_resolver(state.catalog), state.service_token, agent_timeout,
        connections=2 * int(state.conf.conductor.workers))
    if not state.conf.conductor.run_in_api:
        LOG.info("[conductor] run_in_api = false: this API process records work for the "
                 "`moorage conductor serve` processes")
        return None
    conductor = make_conductor(state.conf, state.database, state.placement, state.agents,
                               state.catalog)
    state.scheduler = conductor.scheduler
    state.conductor = conductor.start()
    return conductor


class ApiServer(ThreadedServer):
    """A threaded WSGI server of one compute API application."""

    def __init__(self, app: WSGIApp, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(app, host, port, name="compute-api")


def serve(state: ApiState, host: str, port: int) -> ApiServer:
    """A server of ``state`` (not started)."""
    return ApiServer(build_app(state), host, port)
