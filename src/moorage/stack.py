"""The compute stack, wired in one place: a conductor with its scheduler and the client
of the compute agents, attached to a compute API process or run on its own (after
Nomad's ``NewGenericStack``, which wires its scheduler's pipeline once).

It sits above the services it wires: the compute API knows a conductor only as
something it hands accepted work to (``api.state.Dispatcher``), the conductor knows
nothing of the API, and every process that runs them (``moorage api serve``'s
workers, ``moorage conductor serve``, ``moorage serve``, ``moorage run``, the tests)
assembles them through the functions below.

``create_api_app`` is the compute API's WSGI entry point for server workers: it
builds one worker's state, with its conductor (unless ``[conductor] run_in_api`` is
off), from the configuration the launching process put in the environment
(``moorage.conf.environment``). ``moorage api serve`` runs it under granian; other
WSGI servers can use ``moorage.stack:create_api_app`` the same way. A worker stopping
normally (SIGTERM to the server) stops its conductor: operations under way finish,
those not started are given back at once. A worker that dies leaves its operations
to be taken over when their leases run out.
"""

from __future__ import annotations

import atexit
import logging
from collections.abc import Callable

from oslo_config import cfg

from moorage import heap
from moorage.api.app import WSGIApp, build_app
from moorage.api.catalog import ApiCatalog
from moorage.api.service import make_state
from moorage.api.state import ApiState
from moorage.api.storage import migration as api_migration
from moorage.compute.client import AgentClient, AgentUnreachable
from moorage.compute.remote import HTTPAgentClient
from moorage.conductor.manager import Conductor
from moorage.conf import check_all_options, unknown
from moorage.db.database import Database
from moorage.placement.client import PlacementClient
from moorage.scheduler.manager import Scheduler, check_configuration
from moorage.supervision import refused_unless_started, start_deployed, start_worker

LOG = logging.getLogger(__name__)

# How long the conductor waits for an agent's spawn or destroy.
AGENT_TIMEOUT = 300.0


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


def http_agents(conf: cfg.ConfigOpts, catalog: ApiCatalog, token: str | None,
                timeout: float = AGENT_TIMEOUT) -> HTTPAgentClient:
    """The agents reached over HTTP at the URLs they registered with."""
    return HTTPAgentClient(agent_resolver(catalog), token, timeout,
                           connections=2 * int(conf.conductor.workers))


def make_conductor(conf: cfg.ConfigOpts, database: Database, placement: PlacementClient,
                   agents: AgentClient, catalog: ApiCatalog | None = None) -> Conductor:
    """A conductor (not started) with its scheduler, reading hosts and aggregates from
    ``database`` (through ``catalog`` when given)."""
    catalog = catalog or ApiCatalog(database, float(conf.service_down_time))
    scheduler = Scheduler(conf, placement, catalog)
    return Conductor(conf, database, scheduler, placement, agents, catalog)


def attach_workers(state: ApiState, agents: AgentClient | None = None,
                   agent_timeout: float = AGENT_TIMEOUT) -> Conductor | None:
    """Give ``state`` its agent client (HTTP to the registered agents unless given) and,
    unless ``[conductor] run_in_api`` is off, its conductor (started) and scheduler.
    Stop the conductor with ``state.conductor.stop()``."""
    state.agents = agents if agents is not None else http_agents(
        state.conf, state.catalog, state.service_token, agent_timeout)
    if not state.conf.conductor.run_in_api:
        LOG.info("[conductor] run_in_api = false: this API process records work for the "
                 "`moorage conductor serve` processes")
        return None
    conductor = make_conductor(state.conf, state.database, state.placement, state.agents,
                               state.catalog)
    state.scheduler = conductor.scheduler
    state.conductor = conductor.start()
    return conductor


def create_api_app() -> WSGIApp:
    """One granian worker of ``moorage api serve``: its state, conductor and app."""
    conf = start_worker()
    # Migrations ran once in the launching process.
    state = make_state(conf, migrate=False)
    conductor = attach_workers(state)
    if conductor is not None:
        atexit.register(conductor.stop)
    app = build_app(state)
    heap.settle()
    return app


def deployed_api_app() -> WSGIApp:
    """The compute API for a WSGI server of the operator's (``moorage.wsgi.compute_api``):
    one process's state, conductor and app, its configuration found as upstream's is
    (``moorage.conf.environment.deployed_config``) and checked before anything else.
    StartRefused (one line, logged too) when its configuration or its database cannot
    serve."""
    with refused_unless_started("the compute API"):
        conf = start_deployed(placement=False)
        check_configuration(conf)
        state = make_state(conf)
        if not conf.database.sync_on_startup:
            api_migration.MIGRATIONS.require_current(state.database, "compute API database",
                                                     "moorage api db sync")
        app = build_app(state)
        check_all_options(conf)  # and the options the middleware registered
        unknown.warn(conf, LOG)
    conductor = attach_workers(state)
    if conductor is not None:
        atexit.register(conductor.stop)
    heap.settle()
    return app
