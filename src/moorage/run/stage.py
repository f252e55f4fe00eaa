"""The stage a run plays on: the hosts, started once, and per configuration a fresh
placement and compute API.

Why: a run plays the same workload under several scheduling configurations, each on
a fresh cloud so that they share nothing. Starting thousands of simulated hosts and
registering them with placement once per configuration would take most of the run,
and so would a libvirt host's first look at QEMU (seconds). So the hosts start once:
the simulated hosts as one in-process fleet (``moorage.compute.fleet``), the libvirt
hosts (real QEMU, or recorded) as agents of their own, all registered with a
placement server whose database then serves as a template. Each configuration runs
a placement server (on the same port) on a fresh copy of that database, where every
host is registered and nothing is allocated, and a compute API with its conductor (on
the same port) on a fresh database, which every host registers with at once. With
``api_workers`` 0 (a small cloud) both run in this process: starting a placement
process, mostly Python's imports, took a second of each configuration's 1.7 s of
set-up. Otherwise both are processes of their own, as in a cloud. The agents
remember what they wrote, and the copy holds exactly that, so they owe placement
nothing. Between configurations each host's guests are destroyed by its own driver.

What is real: placement, the compute API, its scheduler and conductor, and the
hosts' agents and drivers are the services' own code, over HTTP where users and
agents use HTTP; the conductor reaches the agents of this process in process (as
``moorage serve`` does).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import shutil
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from moorage import heap
from moorage.api.app import build_app
from moorage.api.launcher import ComputeApiProcess
from moorage.api.service import ApiServer, make_state
from moorage.api.state import ApiState
from moorage.compute.agent import ComputeAgent
from moorage.compute.fleet import Fleet, FleetHost, Progress
from moorage.compute.launcher import RunningAgent, agent_config, start_agent
from moorage.compute.registration import Heartbeat
from moorage.compute.remote import LocalAgentClient
from moorage.conf import load_config
from moorage.embedded import HostPlan, serve_placement
from moorage.internal_access import InternalAccess
from moorage.placement.client import PlacementClient
from moorage.placement.launcher import PlacementProcess, free_port
from moorage.placement.service import PlacementService
from moorage.stack import attach_workers

LOG = logging.getLogger(__name__)

Override = tuple[str, str, object]

# A run's databases are thrown away afterwards: no fsync per commit (synchronous=NORMAL,
# still safe against a crash of the process).
THROWAWAY_DATABASES: tuple[Override, ...] = (
    ("database", "sqlite_synchronous", False),
    ("placement_database", "sqlite_synchronous", False),
)
# A run boots its workload in one project: no quota on servers stops it (key pairs and
# metadata keep nova's defaults).
UNLIMITED_SERVERS: tuple[Override, ...] = (
    ("quota", "instances", -1), ("quota", "cores", -1), ("quota", "ram", -1))


class Stage:
    """The hosts of a run, and the services each configuration gets afresh."""

    def __init__(self, workdir: Path, fleet_hosts: Sequence[FleetHost],
                 agent_plans: Sequence[HostPlan], *,
                 overrides: Iterable[Override] = (), api_workers: int = 0) -> None:
        self.workdir = workdir
        # 0: the compute API and its conductor in this process (the conductor reaches
        # the agents in process); N: an `moorage api serve --workers N` of its own,
        # reaching them over HTTP, as it would in a cloud.
        self.api_workers = api_workers
        self.fleet_hosts = list(fleet_hosts)
        self.agent_plans = list(agent_plans)
        overrides = list(overrides)
        # The hosts and each configuration's compute API share a token made for this
        # run, unless the overrides name one: nothing is left open (as `moorage serve`).
        named = [v for g, o, v in overrides if (g, o) == ("DEFAULT", "service_token")]
        self.token = str(named[-1]) if named and named[-1] else secrets.token_urlsafe(24)
        self.access = InternalAccess(self.token)
        self.overrides = [("DEFAULT", "service_token", self.token), *THROWAWAY_DATABASES,
                          *UNLIMITED_SERVERS, *overrides]
        self.placement_port = free_port()
        self.api_port = free_port()
        self.fleet: Fleet | None = None
        self.agents: list[RunningAgent] = []
        self._template = workdir / "placement-template.sqlite"

    @property
    def placement_url(self) -> str:
        return f"http://127.0.0.1:{self.placement_port}"

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def _placement(self, name: str, database: Path) -> PlacementProcess:
        process = PlacementProcess(self.workdir / name, port=self.placement_port,
                                   database_url=f"sqlite:///{database}", config={
                                       "placement_database": {"sqlite_synchronous": False}})
        process.quiet = _quiet()
        return process

    def _placement_in_process(self, database: Path) -> tuple[PlacementService, ApiServer]:
        """The same placement service as ``_placement``'s, served from this process."""
        conf = load_config([], [("api", "auth_strategy", "noauth2"),
                                ("placement_database", "connection", f"sqlite:///{database}"),
                                ("placement_database", "sqlite_synchronous", False)])
        return serve_placement(conf, "127.0.0.1", self.placement_port)

    @contextlib.contextmanager
    def _template_placement(self) -> Iterator[str]:
        """The placement the hosts register with once (its URL), stopped after: in
        this process for a small cloud (``api_workers`` 0, as each scene's), where a
        process of its own would spend a second on Python's imports."""
        if self.api_workers:
            process = self._placement("placement-template", self._template).start()
            try:
                yield process.url
            finally:
                process.stop()
            return
        service, server = self._placement_in_process(self._template)
        try:
            yield server.url
        finally:
            server.stop()
            service.close()

    def start(self, progress: Progress | None = None) -> Stage:
        """Start every host and register it, once, in the template database: the fleet,
        then the libvirt agents (in that order, every time: placement offers equally
        good hosts in the order they registered, so the same seed plays the same)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self._template_placement() as template_url:
            self.fleet = Fleet(self.fleet_hosts, PlacementClient(template_url, "admin"),
                               api_url=None, access=self.access,
                               # The hosts do not change during a run.
                               sync_interval=24 * 3600.0,
                               # One at a time, in order: placement offers equally good
                               # hosts in the order they registered, so the same seed
                               # plays the same (and placement, one writer, registers
                               # 2,000 hosts no faster on 8 threads: 13.3 s and 13.8 s).
                               sync_threads=1).start(progress)
            if self.fleet.registration.failed:
                host, problem = next(iter(self.fleet.registration.failed.items()))
                raise RuntimeError(f"{len(self.fleet.registration.failed)} hosts could "
                                   f"not register with placement (first: {host}: "
                                   f"{problem})")
            self._start_agents()
        # The thousands of simulated hosts live until the end of the run.
        heap.settle()
        return self

    def _start_agents(self) -> None:
        placement = PlacementClient(self.placement_url, "admin")
        for plan in self.agent_plans:
            conf = agent_config(plan.name, plan.driver, placement_url=self.placement_url,
                                overrides=[*plan.overrides(), *self.overrides,
                                           # The hosts do not change during a run.
                                           ("DEFAULT", "update_resources_interval",
                                            24 * 3600)])
            # No compute API yet: each scene's registers them (Scene.start).
            running = start_agent(conf, placement=placement, port=0)
            self.agents.append(running)
            # Its first sync ran in start_agent: this one only says how it went.
            synced = running.agent.sync()
            if not synced.ok:
                raise RuntimeError(f"host {running.host} could not register with "
                                   f"placement: {synced.problem}")

    def stop(self) -> None:
        for running in reversed(self.agents):
            running.stop()
        self.agents.clear()
        if self.fleet is not None:
            self.fleet.stop()
            self.fleet = None

    def agent_of(self, host: str) -> ComputeAgent | None:
        """The agent of ``host``, a fleet host's or a libvirt host's."""
        if self.fleet is not None and host in self.fleet.agents:
            return self.fleet.agents[host]
        return next((r.agent for r in self.agents if r.host == host), None)

    def open(self, name: str, options: Iterable[Override]) -> Scene:
        """The services of one configuration, started: placement on a fresh copy of the
        template, a compute API configured with ``options``, the libvirt agents."""
        assert self.fleet is not None, "start the stage first"
        directory = self.workdir / name
        # A configuration played again starts afresh too.
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        database = directory / "placement.sqlite"
        copy_database(self._template, database)
        scene = Scene(self, directory)
        try:
            scene.start(database, list(options))
        except BaseException:
            scene.stop()
            raise
        return scene


def _sections(overrides: Iterable[Override]) -> dict[str, dict[str, object]]:
    """Options as a configuration file's sections (lists comma-separated)."""
    sections: dict[str, dict[str, object]] = {}
    for group, option, value in overrides:
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        sections.setdefault(group, {})[option] = value
    return sections


def copy_database(source: Path, target: Path) -> None:
    """A consistent copy of the SQLite database ``source``, what its write-ahead log
    holds included (a copy of the main file alone may miss the last commits)."""
    target.unlink(missing_ok=True)
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()


def _quiet() -> bool:
    """The services log what this process logs: a run that keeps its own log to
    warnings (`moorage run` without --verbose-services) starts them with
    ``moorage -q``, else each would log a line per request (a fourteenth of
    placement's CPU under a burst)."""
    return not logging.getLogger("moorage").isEnabledFor(logging.INFO)


class Scene:
    """One configuration's services on the stage."""

    def __init__(self, stage: Stage, directory: Path) -> None:
        self.stage = stage
        self.directory = directory
        self.placement: PlacementProcess | None = None
        self.placement_service: PlacementService | None = None
        self.placement_server: ApiServer | None = None
        self.api_state: ApiState | None = None
        self.api_server: ApiServer | None = None
        self.api_process: ComputeApiProcess | None = None
        self.api_url = ""
        self.heartbeats: list[Heartbeat] = []

    def start(self, database: Path, options: list[Override]) -> None:
        stage = self.stage
        assert stage.fleet is not None
        overrides = [*stage.overrides, *options,
                     ("api", "auth_strategy", "noauth2"),
                     ("database", "connection",
                      f"sqlite:///{self.directory / 'compute-api.sqlite'}"),
                     ("placement", "endpoint_override", stage.placement_url)]
        if stage.api_workers:
            placement = stage._placement("placement", database)
            self.placement = placement
            # Both processes start side by side.
            placement.launch()
            api = ComputeApiProcess(self.directory / "api", placement_url=placement.url,
                                    port=stage.api_port, workers=stage.api_workers,
                                    config=_sections(overrides))
            api.quiet = _quiet()
            self.api_process = api
            api.launch()
            placement.wait_ready()
            api.wait_ready()
            api_url = api.url
        else:
            self.placement_service, self.placement_server = stage._placement_in_process(
                database)
            state = make_state(load_config([], overrides), migrate=True)
            self.api_state = state
            by_host = dict(stage.fleet.agents)
            by_host.update((running.host, running.agent) for running in stage.agents)
            attach_workers(state, LocalAgentClient(by_host))
            self.api_server = ApiServer(build_app(state), "127.0.0.1",
                                        stage.api_port).start()
            api_url = self.api_server.url
        self.api_url = api_url
        # Every host registers with the new compute API at once: the fleet's in one beat.
        beat = stage.fleet.report_to(api_url)
        if beat is not None and not beat.ok:
            raise RuntimeError(f"the fleet could not register with the compute API: "
                               f"{beat.problem}")
        for running in stage.agents:
            conf = running.agent.conf
            heartbeat = Heartbeat(running.agent, api_url, running.url,
                                  token=stage.token, interval=conf.report_interval,
                                  timeout=float(conf.report_interval))
            self.heartbeats.append(heartbeat.start())
            if heartbeat.last is not None and not heartbeat.last.ok:
                raise RuntimeError(f"host {running.host} could not register with the "
                                   f"compute API: {heartbeat.last.problem}")

    def stop(self) -> None:
        if self.stage.fleet is not None:
            self.stage.fleet.stop_reporting()
        for heartbeat in self.heartbeats:
            heartbeat.stop()
        self.heartbeats.clear()
        if self.api_state is not None and self.api_state.conductor is not None:
            self.api_state.conductor.stop()
        if self.api_server is not None:
            self.api_server.stop()
            self.api_server = None
        if self.api_process is not None:
            self.api_process.stop()
            self.api_process = None
        if self.placement is not None:
            self.placement.stop()
            self.placement = None
        if self.placement_server is not None:
            self.placement_server.stop()
            self.placement_server = None
        if self.placement_service is not None:
            self.placement_service.close()
            self.placement_service = None
