"""A fleet: many simulated hosts in one process.

Each host of a fleet is a compute service as far as the rest of the cloud can tell:
its own provider tree in placement, written by its own ``ComputeAgent`` with the same
``ProviderTreeSync`` and ownership rules; its own service record and heartbeat; its
own guests, spawned by the same driver classes with the same late checks. What the
hosts share is the machinery around them: one HTTP endpoint (``/hosts/{host}`` + the
agent API, so a host's agent URL is ``{fleet URL}/hosts/{host}``), one placement
client, one heartbeat thread that reports them all in one request per beat
(``registration.FleetHeartbeat``), one thread that keeps them synced with placement
(a sync that finds nothing changed costs placement nothing). So a fleet of 10,000
hosts costs the compute API one request per ``report_interval`` instead of 10,000,
and needs one port instead of 10,000.

Anchors: Kubernetes' KWOK and kubemark (many fake nodes per process), nova's fake
driver with many nodes per compute service. Only simulated drivers belong in a fleet
(fake, simulated VMware, simulated Ironic): a libvirt host is a real hypervisor and
runs as its own agent.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from wsgiref.types import WSGIApplication

from oslo_config import cfg

from moorage.compute.agent import ComputeAgent
from moorage.compute.provider_tree import ProviderTreeSync
from moorage.compute.registration import Beat, FleetHeartbeat, HostReporter
from moorage.compute.service import FLEET_PREFIX, make_fleet_app
from moorage.internal_access import InternalAccess
from moorage.placement.client import PlacementClient
from moorage.virt.driver import ComputeDriver
from moorage.web import ThreadedServer

LOG = logging.getLogger(__name__)

# The drivers a fleet may simulate.
FLEET_DRIVERS = ("fake", "vmware", "ironic")

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class FleetHost:
    """One host of a fleet: its name, its group's configuration (shared by the group's
    hosts) and how to make its driver."""

    name: str
    conf: cfg.ConfigOpts
    make_driver: Callable[[], ComputeDriver]


class FleetError(RuntimeError):
    """The fleet cannot start: what is wrong, naming the host or group."""


@dataclass
class Registration:
    """How the fleet's first sync with placement went."""

    hosts: int = 0
    seconds: float = 0.0
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.hosts / self.seconds if self.seconds else float("inf")


class Fleet:
    """Runs ``hosts`` in this process; ``start`` registers them, ``stop`` ends them."""

    def __init__(self, hosts: Sequence[FleetHost], placement: PlacementClient, *,
                 api_url: str | None, access: InternalAccess, listen: str = "127.0.0.1",
                 port: int = 0, advertise_url: str | None = None,
                 report_interval: float = 10.0, sync_interval: float = 60.0,
                 sync_threads: int = 8) -> None:
        twice = sorted(n for n, k in Counter(h.name for h in hosts).items() if k > 1)
        if twice:
            raise FleetError(f"host names must be unique in a fleet: {', '.join(twice[:5])} "
                             "appear more than once")
        self.hosts = list(hosts)
        self.placement = placement
        self.api_url = api_url
        # The token its hosts send and expect; anonymous writes refused without one.
        self.access = access
        self.listen = listen
        self.port = port
        self.advertise_url = advertise_url
        self.report_interval = report_interval
        self.sync_interval = sync_interval
        self.sync_threads = sync_threads
        self.agents: dict[str, ComputeAgent] = {}
        self.silent: set[str] = set()
        self.registration = Registration()
        self.server: ThreadedServer | None = None
        self.heartbeat: FleetHeartbeat | None = None
        self._stop = threading.Event()
        self._sync_thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self.advertise_url:
            return self.advertise_url.rstrip("/")
        assert self.server is not None, "the fleet is not serving yet"
        return self.server.url

    def agent_url(self, host: str) -> str:
        return f"{self.url}{FLEET_PREFIX}{host}"

    # -- starting and stopping ------------------------------------------------------
    @property
    def app(self) -> WSGIApplication:
        """The WSGI application of every host's agent API (``/hosts/{host}/...``)."""
        return make_fleet_app(self.agents, self.access, silent=self.silent)

    def start(self, progress: Progress | None = None, *, serve: bool = True) -> Fleet:
        """Make every host's driver and agent, register them all with placement (their
        providers exist when this returns), serve their APIs (unless ``serve`` is off:
        a WSGI server of the caller's serves ``app`` at ``advertise_url``), and register
        them with the compute API (a first heartbeat), then keep both up to date."""
        try:
            self._make_agents()
            self._register(progress)
            if serve:
                self.server = ThreadedServer(self.app, self.listen, self.port,
                                             name="fleet-http").start()
            elif not self.advertise_url:
                raise FleetError("a fleet served by another server needs its URL "
                                 "(advertise_url)")
            if self.api_url:
                self.report_to(self.api_url)
            self._sync_thread = threading.Thread(target=self._keep_syncing, daemon=True,
                                                 name="fleet-placement-sync")
            self._sync_thread.start()
        except BaseException:
            self.stop()
            raise
        LOG.info("fleet of %d hosts serving %s", len(self.agents), self.url)
        return self

    def report_to(self, api_url: str) -> Beat | None:
        """Heart-beat to the compute API at ``api_url`` from now on, registering every
        host there at once (a new API learns them all in one beat). The first beat."""
        self.stop_reporting()
        self.api_url = api_url
        reporters = {h: HostReporter(a, self.agent_url(h)) for h, a in self.agents.items()}
        self.heartbeat = FleetHeartbeat(reporters, api_url, token=self.access.token,
                                        interval=self.report_interval,
                                        timeout=max(30.0, self.report_interval))
        self.heartbeat.silent = self.silent
        first = self.heartbeat.start().last
        if first is not None and not first.ok:
            LOG.warning("the fleet's first heartbeat failed (%s); retrying every %gs",
                        first.problem, self.report_interval)
        return first

    def stop_reporting(self) -> None:
        """Stop heart-beating (the compute API is going away); ``report_to`` starts
        again."""
        if self.heartbeat is not None:
            self.heartbeat.stop()
            self.heartbeat = None

    def _make_agents(self) -> None:
        custom: set[str] = set()
        for host in self.hosts:
            try:
                driver = host.make_driver()
            except Exception as exc:
                raise FleetError(f"host {host.name}: its driver cannot start: {exc}") from None
            sync = ProviderTreeSync(
                self.placement, known_custom=custom,
                refresh_seconds=float(host.conf.compute.resource_provider_association_refresh))
            # With a compute API its record decides the disabled state at the first
            # heartbeat; until then the trait stays as placement has it.
            self.agents[host.name] = ComputeAgent(host.conf, driver, self.placement,
                                                  host=host.name, tree_sync=sync,
                                                  disabled=None if self.api_url else False)

    def _register(self, progress: Progress | None) -> None:
        """Every host's first sync, on ``sync_threads`` threads."""
        started = time.perf_counter()
        total = len(self.agents)
        done = 0
        lock = threading.Lock()

        def sync(agent: ComputeAgent) -> tuple[str, str | None]:
            nonlocal done
            result = agent.sync()
            with lock:
                done += 1
                if progress is not None:
                    progress(done, total)
            return agent.host, result.problem

        with ThreadPoolExecutor(self.sync_threads, thread_name_prefix="fleet-sync") as pool:
            failed = {host: problem for host, problem in pool.map(sync, self.agents.values())
                      if problem is not None}
        self.registration = Registration(total, time.perf_counter() - started, failed)
        if failed:
            first = next(iter(failed.items()))
            LOG.warning("%d of %d hosts could not register with placement (first: %s: "
                        "%s); they retry at every sync", len(failed), total, *first)

    def _keep_syncing(self) -> None:
        while not self._stop.wait(self.sync_interval):
            for agent in list(self.agents.values()):
                if self._stop.is_set():
                    return
                if agent.host not in self.silent:
                    agent.sync()

    def stop(self) -> None:
        """Stop beating, serving and syncing (the compute API sees the hosts go down)."""
        self._stop.set()
        if self.heartbeat is not None:
            self.heartbeat.stop()
        if self.server is not None:
            self.server.stop()
        if self._sync_thread is not None:
            self._sync_thread.join(timeout=30)

    # -- hosts that stop and come back (for tests and drills) -------------------------
    def silence(self, host: str) -> None:
        """``host`` stops heart-beating and answering, as if its agent died."""
        self._known(host)
        self.silent.add(host)

    def revive(self, host: str) -> None:
        self._known(host)
        self.silent.discard(host)

    def _known(self, host: str) -> None:
        if host not in self.agents:
            raise KeyError(f"no host {host} in this fleet")
