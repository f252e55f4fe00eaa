"""Assembling a compute API process: its state from the configuration, and a threaded
HTTP server for it.

The conductor (and the scheduler and agent client it uses) is attached by whoever
assembles the full service (``moorage api serve`` does, when the conductor package
provides it); the API answers 503 for server operations while it is missing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from oslo_config import cfg

from moorage.api.app import WSGIApp, build_app
from moorage.api.catalog import ApiCatalog
from moorage.api.policy import Policy
from moorage.api.state import ApiState
from moorage.api.storage import migration
from moorage.api.storage import services as service_store
from moorage.api.storage.database import open_database
from moorage.compute.client import AgentClient, AgentUnreachable
from moorage.compute.remote import HTTPAgentClient
from moorage.conductor import Conductor
from moorage.placement.client import PlacementClient
from moorage.placement.storage.database import Database
from moorage.scheduler.manager import Scheduler

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
    return ApiState(conf=conf, database=db, placement=client, policy=Policy(conf))


def agent_resolver(database: Database) -> Callable[[str], str]:
    """``resolve(host)`` for HTTPAgentClient: the agent URL the host last heart-beat with."""

    def resolve(host: str) -> str:
        with database.reader() as conn:
            service = service_store.find_service_by_host(conn, host)
        if service is None or not service.agent_url:
            raise AgentUnreachable(f"no compute agent of host {host} has registered with "
                                   "the compute API")
        return service.agent_url

    return resolve


def attach_workers(state: ApiState, agents: AgentClient | None = None,
                   agent_timeout: float = 300.0) -> Conductor:
    """Give ``state`` its agent client (HTTP to the registered agents unless given), its
    scheduler and its conductor (started). Stop the conductor with ``state.conductor.stop()``."""
    catalog = ApiCatalog(state.database, float(state.conf.service_down_time))
    state.agents = agents if agents is not None else HTTPAgentClient(
        agent_resolver(state.database), state.service_token, agent_timeout)
    state.scheduler = Scheduler(state.conf, state.placement, catalog)
    conductor = Conductor(state.conf, state.database, state.scheduler, state.placement,
                          state.agents, catalog)
    conductor.start()
    state.conductor = conductor
    return conductor


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
    """Request lines go to the log at DEBUG, not to stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        LOG.debug("%s " + format, self.address_string(), *args)


class ApiServer:
    """A threaded WSGI server of one compute API application, in a background thread."""

    def __init__(self, app: WSGIApp, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = make_server(host, port, app, server_class=_ThreadingWSGIServer,
                                   handler_class=_QuietHandler)
        self.host = host
        self.port = int(self._server.server_address[1])
        self.url = f"http://{host}:{self.port}"
        self._thread: threading.Thread | None = None

    def start(self) -> ApiServer:
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="compute-api", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)


def serve(state: ApiState, host: str, port: int) -> ApiServer:
    """A server of ``state`` (not started)."""
    return ApiServer(build_app(state), host, port)
