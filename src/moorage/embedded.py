"""The embedded cloud: placement, the compute API with its conductor and scheduler, and
compute agents, all in one process (``moorage serve``).

The same services as the multi-process deployment, assembled differently: placement
and the compute API are real HTTP servers on 127.0.0.1 (so the CLI, curl and
openstack clients reach them), each agent serves its HTTP API and heart-beats to the
compute API, but the conductor reaches the agents in process (LocalAgentClient).
Nothing is shared through globals: each service has its own configuration object.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from oslo_config import cfg

from moorage.api.app import build_app
from moorage.api.service import ApiServer, make_state
from moorage.api.state import ApiState
from moorage.compute.agent import ComputeAgent
from moorage.compute.launcher import RunningAgent, agent_config, start_agent
from moorage.compute.remote import LocalAgentClient
from moorage.conf import load_config
from moorage.placement.app import make_app
from moorage.placement.client import PlacementClient
from moorage.placement.service import PlacementService
from moorage.stack import attach_workers

LOG = logging.getLogger(__name__)

Override = tuple[str, str, object]


@dataclass(frozen=True)
class HostPlan:
    """One compute host to run: its name, driver and the agent's own options."""

    name: str
    driver: str
    options: Mapping[tuple[str, str], object] = field(default_factory=dict)
    description: str = ""

    def overrides(self) -> list[Override]:
        return [(group, option, value) for (group, option), value in self.options.items()]


def _fake(name: str, description: str, **options: object) -> HostPlan:
    return HostPlan(name, "fake", {("fake_driver", k): v for k, v in options.items()},
                    description)


# The default cloud: hosts that differ in exactly what the prefilters are about.
SAMPLE_HOSTS: tuple[HostPlan, ...] = (
    _fake("kvm-q35", "KVM-like, q35: virtio and e1000 NICs, qcow2 and raw images",
          traits=["COMPUTE_NET_VIF_MODEL_VIRTIO", "COMPUTE_NET_VIF_MODEL_E1000",
                  "COMPUTE_STORAGE_BUS_VIRTIO", "COMPUTE_STORAGE_BUS_SATA",
                  "COMPUTE_GRAPHICS_MODEL_VIRTIO", "HW_ARCH_X86_64"],
          supported_image_types=["raw", "qcow2", "iso"], vcpus=32, memory_mb=65536),
    _fake("kvm-virtio", "KVM-like, virtio only: refuses e1000 NICs and IDE disks at spawn",
          traits=["COMPUTE_NET_VIF_MODEL_VIRTIO", "COMPUTE_STORAGE_BUS_VIRTIO",
                  "COMPUTE_GRAPHICS_MODEL_VIRTIO", "HW_ARCH_X86_64"],
          unsupported_traits=["COMPUTE_NET_VIF_MODEL_E1000", "COMPUTE_STORAGE_BUS_IDE"],
          supported_image_types=["raw", "qcow2"], vcpus=64, memory_mb=131072),
    _fake("ceph", "KVM-like on Ceph RBD: raw images only",
          traits=["COMPUTE_NET_VIF_MODEL_VIRTIO", "COMPUTE_STORAGE_BUS_VIRTIO",
                  "HW_ARCH_X86_64"],
          supported_image_types=["raw"], vcpus=96, memory_mb=262144),
    HostPlan("vcenter", "vmware", {}, "simulated VMware cluster: vmdk images, e1000 and "
             "vmxnet3 NICs"),
)


def parse_host(text: str) -> HostPlan:
    """``NAME=DRIVER[,GROUP.OPTION=VALUE...]`` (list values separated by ``+``), as
    ``moorage serve --host`` takes it; ValueError naming what is wrong."""
    name, sep, rest = text.partition("=")
    if not sep or not name or not rest:
        raise ValueError(f"--host {text!r}: expected NAME=DRIVER[,GROUP.OPTION=VALUE...]")
    driver, *settings = rest.split(",")
    options: dict[tuple[str, str], object] = {}
    for setting in settings:
        key, sep, value = setting.partition("=")
        group, dot, option = key.partition(".")
        if not sep or not dot or not group or not option:
            raise ValueError(f"--host {text!r}: {setting!r} is not GROUP.OPTION=VALUE "
                             "(for example fake_driver.traits=CUSTOM_A+CUSTOM_B)")
        options[(group, option)] = value.split("+") if "+" in value else value
    return HostPlan(name, driver, options)


def serve_placement(conf: cfg.ConfigOpts, listen: str, port: int, *,
                    settle: bool = True) -> tuple[PlacementService, ApiServer]:
    """The placement service of ``conf`` (its database migrated), served from this
    process on ``listen``:``port`` (0: a free port). ``settle``: as
    ``PlacementService.prepare``'s (False in a process that serves many in turn)."""
    service = PlacementService(conf)
    try:
        service.prepare(migrate=True, settle=settle)
        return service, ApiServer(make_app(service), listen, port).start()
    except BaseException:
        service.close()
        raise


class EmbeddedCloud:
    """Placement, the compute API and agents, started and stopped together."""

    def __init__(self, workdir: Path, hosts: Sequence[HostPlan], *,
                 config_files: Iterable[str] = (), overrides: Iterable[Override] = (),
                 listen: str = "127.0.0.1", api_port: int = 8774,
                 placement_port: int = 8778) -> None:
        self.workdir = workdir
        self.hosts = list(hosts)
        self.config_files = list(config_files)
        self.overrides = list(overrides)
        self.listen = listen
        self.api_port = api_port
        self.placement_port = placement_port
        self.placement_server: ApiServer | None = None
        self.api_server: ApiServer | None = None
        self.api_state: ApiState | None = None
        self.agents: list[RunningAgent] = []
        probe = load_config(self.config_files, self.overrides)
        self._token: str = probe.service_token or secrets.token_urlsafe(24)

    def _conf(self, extra: Iterable[Override]) -> cfg.ConfigOpts:
        # The agents and the API share a token made for this process, unless the
        # configuration names one: nothing is left open by default.
        return load_config(self.config_files,
                           [("DEFAULT", "service_token", self._token), *extra,
                            *self.overrides])

    @property
    def placement_url(self) -> str:
        assert self.placement_server is not None
        return self.placement_server.url

    @property
    def api_url(self) -> str:
        assert self.api_server is not None
        return self.api_server.url

    def start(self) -> EmbeddedCloud:
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        placement_conf = self._conf([
            ("api", "auth_strategy", "noauth2"),
            ("placement_database", "connection",
             f"sqlite:///{self.workdir / 'placement.sqlite'}"),
        ])
        _service, self.placement_server = serve_placement(placement_conf, self.listen,
                                                          self.placement_port)
        LOG.info("placement serving %s", self.placement_server.url)
        api_conf = self._conf([
            ("api", "auth_strategy", "noauth2"),
            ("database", "connection", f"sqlite:///{self.workdir / 'compute-api.sqlite'}"),
            ("placement", "endpoint_override", self.placement_server.url),
        ])
        state = make_state(api_conf, migrate=True)
        self.api_state = state
        by_host: dict[str, ComputeAgent] = {}
        attach_workers(state, LocalAgentClient(by_host))
        self.api_server = ApiServer(build_app(state), self.listen, self.api_port).start()
        LOG.info("compute API serving %s", self.api_server.url)
        placement = PlacementClient(self.placement_server.url, "admin")
        for plan in self.hosts:
            conf = agent_config(plan.name, plan.driver,
                                placement_url=self.placement_server.url,
                                api_url=self.api_server.url,
                                config_files=self.config_files,
                                overrides=[("DEFAULT", "service_token", self._token),
                                           *plan.overrides(), *self.overrides])
            running = start_agent(conf, placement=placement, port=0)
            self.agents.append(running)
            by_host[running.host] = running.agent

    def stop(self) -> None:
        for running in reversed(self.agents):
            running.stop()
        self.agents.clear()
        if self.api_state is not None and self.api_state.conductor is not None:
            self.api_state.conductor.stop()
        for server in (self.api_server, self.placement_server):
            if server is not None:
                server.stop()
        self.api_server = self.placement_server = None
