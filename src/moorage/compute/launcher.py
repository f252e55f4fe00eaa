"""Run a compute agent in this process: its placement sync, HTTP API and heartbeat.

``start_agent`` starts the three and returns a ``RunningAgent`` to stop them.
``moorage compute run`` runs it in a granian worker (``agent_wsgi``), which serves the
agent's application itself (``serve_at``); the tests and the embedded mode start
several agents in one process, each with its own configuration (host, driver) and
its HTTP API on a free port, served by a thread pool of this process::

    agents = [start_agent(agent_config(f"h{i}", "fake", placement_url=url), port=0)
              for i in range(3)]
    ...
    for running in agents:
        running.stop()
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from oslo_config import cfg

from moorage import systemd
from moorage.compute.agent import ComputeAgent
from moorage.compute.registration import Heartbeat
from moorage.compute.service import AGENT_WRITES, AgentHTTPServer
from moorage.conf import load_config
from moorage.internal_access import InternalAccess
from moorage.placement.client import PlacementClient
from moorage.virt.driver import ComputeDriver
from moorage.virt.loader import load_driver

LOG = logging.getLogger(__name__)


def agent_config(host: str, driver: str = "fake", *, placement_url: str | None = None,
                 api_url: str | None = None, config_files: Iterable[str] = (),
                 overrides: Iterable[tuple[str, str, object]] = ()) -> cfg.ConfigOpts:
    """A configuration of its own for one agent of many in a process."""
    chosen: list[tuple[str, str, object]] = [("DEFAULT", "host", host),
                                             ("DEFAULT", "compute_driver", driver)]
    if placement_url is not None:
        chosen.append(("placement", "endpoint_override", placement_url))
    if api_url is not None:
        chosen.append(("compute_agent", "api_url", api_url))
    return load_config(list(config_files), [*chosen, *overrides])


@dataclass
class RunningAgent:
    """One agent running in this process; ``url`` is its HTTP API."""

    agent: ComputeAgent
    server: AgentHTTPServer | None  # None: another server serves its application
    heartbeat: Heartbeat | None
    url: str
    _stop: threading.Event
    _sync_thread: threading.Thread

    @property
    def host(self) -> str:
        return self.agent.host

    def stop(self, drain: float | None = 10.0) -> None:
        """Stop the heartbeat, the HTTP API and the placement sync (in that order: the
        compute API stops hearing from an agent that no longer answers). The HTTP API
        answers the requests in flight first, ``drain`` seconds at most (None: no
        limit)."""
        self._stop.set()
        if self.heartbeat is not None:
            self.heartbeat.stop()
        if self.server is not None:
            self.server.stop(drain)
        self._sync_thread.join(timeout=30)


def start_agent(conf: cfg.ConfigOpts, driver: ComputeDriver | None = None,
                placement: PlacementClient | None = None, *, listen: str | None = None,
                port: int | None = None, api_url: str | None = None,
                disabled: bool | None = None, serve_at: str | None = None,
                answering: Callable[[], bool] | None = None) -> RunningAgent:
    """Start an agent of ``conf``'s host: one placement sync now (so its providers
    exist when this returns), then every ``[DEFAULT] update_resources_interval``; its
    HTTP API on ``listen``:``port`` (default ``[compute_agent]``; port 0 is any free
    one); and, when the compute API's URL is known, a registration now and a
    heartbeat every ``[DEFAULT] report_interval``.

    ``driver`` and ``placement`` default to the configured ones. ``disabled`` None:
    the compute API's record decides at the first heartbeat (until then
    COMPUTE_STATUS_DISABLED stays as placement has it); without a compute API, the
    service is enabled.

    ``serve_at``: another server (the granian worker of ``moorage compute run``) serves
    the agent's application (``service.make_app``) at this URL; no HTTP API is started
    here, and the registration waits until ``answering()`` says that server answers,
    so the compute API is never told of an agent it cannot reach yet.
    """
    opts = conf.compute_agent
    driver = driver if driver is not None else load_driver(conf)
    placement = placement if placement is not None else PlacementClient.from_conf(conf)
    api_url = api_url or opts.api_url
    if disabled is None and not api_url:
        disabled = False
    agent = ComputeAgent(conf, driver, placement, disabled=disabled)
    access = InternalAccess.of(conf)
    token = access.token
    warning = access.start_warning(f"compute agent of {conf.host}", AGENT_WRITES)
    if warning is not None:
        LOG.warning("%s", warning)
    first = agent.sync()
    if not first.ok:
        LOG.warning("first sync of %s failed (%s); retrying every %ds", conf.host,
                    first.problem, conf.update_resources_interval)
    stop = threading.Event()

    def keep_syncing() -> None:
        while not stop.wait(conf.update_resources_interval):
            agent.sync()

    sync_thread = threading.Thread(target=keep_syncing, daemon=True,
                                   name=f"placement-sync-{conf.host}")
    sync_thread.start()
    server: AgentHTTPServer | None = None
    if serve_at is None:
        server = AgentHTTPServer(agent, access, listen or opts.listen,
                                 opts.port if port is None else port).start()
    url = opts.advertise_url or (server.url if server is not None else serve_at)
    assert url is not None
    heartbeat = None
    if api_url:
        heartbeat = Heartbeat(agent, api_url, url, token=token,
                              interval=conf.report_interval,
                              timeout=float(conf.report_interval))
        if answering is None:
            heartbeat.start()
        else:
            systemd.once(answering, heartbeat.start, stop, f"register-{conf.host}")
    else:
        LOG.warning("compute agent of %s: [compute_agent] api_url is not set: not "
                    "registering with a compute API", conf.host)
    LOG.info("compute agent of %s (%s driver) serving %s", conf.host, driver.name, url)
    return RunningAgent(agent, server, heartbeat, url, stop, sync_thread)
