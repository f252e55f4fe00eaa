"""A small heterogeneous cloud for the server tests, every part a real service.

Placement runs as its own process (``placement_server``); the compute API is a real
HTTP server in this process with its conductor and scheduler; each host is a real
compute agent (its HTTP API, its heartbeat to the compute API, its placement sync)
driving a fake, simulated-VMware or libvirt driver. Servers are created and watched
through the compute API's HTTP interface, as users do.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from moorage.api import microversion
from moorage.api.service import make_state, serve
from moorage.compute.fleet import Fleet
from moorage.compute.launcher import RunningAgent, agent_config, start_agent
from moorage.conf import load_config
from moorage.internal_access import InternalAccess
from moorage.lifecycle import machine
from moorage.placement.client import PlacementClient
from moorage.run.description import HostGroup
from moorage.run.fleet_hosts import fleet_hosts
from moorage.run.stage import UNLIMITED_SERVERS
from moorage.stack import attach_workers

# The compute API's and the agents' [DEFAULT] service_token: the conductor's spawns and
# the agents' heartbeats carry it, as in a cloud.
SERVICE_TOKEN = "servers-test-token"
FINAL = frozenset(str(status) for status in machine.AT_REST)  # the table's


@dataclass
class HostSpec:
    """One compute host of the test cloud: its name, driver and driver options."""

    name: str
    driver: str = "fake"
    options: Mapping[tuple[str, str], object] = field(default_factory=dict)


def fake_host(name: str, *, traits: Sequence[str] = (), unsupported: Sequence[str] = (),
              image_types: Sequence[str] = ("raw", "qcow2"), vcpus: int = 16,
              memory_mb: int = 32768, architecture: str = "x86_64") -> HostSpec:
    """A fake-driver host that reports ``traits`` and refuses ``unsupported`` at spawn."""
    return HostSpec(name, "fake", {
        ("fake_driver", "architecture"): architecture,
        ("fake_driver", "traits"): list(traits),
        ("fake_driver", "unsupported_traits"): list(unsupported),
        ("fake_driver", "supported_image_types"): list(image_types),
        ("fake_driver", "vcpus"): vcpus,
        ("fake_driver", "memory_mb"): memory_mb,
    })


# The version the tests read moves in (its shape: microversion.MIGRATION_PAGING).
MOVES_VERSION = {microversion.HEADER: f"compute {microversion.MIGRATION_PAGING.version}"}


class Cloud:
    """The running services, and the calls the tests make on the compute API."""

    def __init__(self, api_url: str, state: Any, agents: dict[str, RunningAgent],
                 placement: PlacementClient, fleet: Fleet | None = None) -> None:
        self.api_url = api_url
        self.state = state
        self.agents = agents
        self.placement = placement
        self.fleet = fleet
        self.http = requests.Session()
        # As Moorage's own client asks: the newest microversion, with the additions.
        self.http.headers.update({
            "X-Auth-Token": "admin", "Accept": "application/json",
            microversion.HEADER: f"compute {microversion.MAX_VERSION}",
            microversion.ADDITIONS_HEADER: "1"})

    # -- raw calls -------------------------------------------------------------------
    def call(self, method: str, path: str, body: Any = None, token: str | None = None,
             version: str | None = None) -> requests.Response:
        """``version``: asked as that microversion of nova (no additions)."""
        headers = {"X-Auth-Token": token} if token else {}
        if version is not None:
            headers.update({microversion.HEADER: f"compute {version}",
                            microversion.ADDITIONS_HEADER: "0"})
        return self.http.request(method, self.api_url + "/v2.1" + path, json=body,
                                 headers=headers, timeout=60)

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        response = self.call(method, path, body)
        assert response.status_code < 300, (method, path, response.status_code,
                                            response.text)
        return response.json() if response.content else None

    def migrations(self, query: str = "") -> list[dict[str, Any]]:
        """GET /os-migrations at 2.59, the first version showing a move's uuid (its
        placement consumer) and its migration_type."""
        response = self.http.get(f"{self.api_url}/v2.1/os-migrations{query}", timeout=60,
                                 headers=MOVES_VERSION)
        assert response.status_code == 200, (query, response.status_code, response.text)
        return list(response.json()["migrations"])

    # -- catalogue -------------------------------------------------------------------
    def flavor(self, name: str, vcpus: int = 1, ram: int = 512, disk: int = 1,
               extra_specs: Mapping[str, str] | None = None) -> str:
        flavor = self.ok("POST", "/flavors", {"flavor": {
            "name": name, "vcpus": vcpus, "ram": ram, "disk": disk}})["flavor"]
        if extra_specs:
            self.ok("POST", f"/flavors/{flavor['id']}/os-extra_specs",
                    {"extra_specs": dict(extra_specs)})
        return str(flavor["id"])

    def image(self, name: str, disk_format: str = "qcow2",
              properties: Mapping[str, str] | None = None) -> str:
        """A public image of the image service (glance v2 at /image), without data."""
        response = self.http.post(self.api_url + "/image/v2/images", timeout=60, json={
            **dict(properties or {}), "name": name, "disk_format": disk_format,
            "container_format": "bare", "visibility": "public"})
        assert response.status_code == 201, (name, response.status_code, response.text)
        return str(response.json()["id"])

    # -- servers ---------------------------------------------------------------------
    def boot(self, flavor: str, image: str, name: str = "vm", **extra: Any) -> str:
        server = self.ok("POST", "/servers", {"server": {
            "name": name, "flavorRef": flavor, "imageRef": image, "networks": "none",
            **extra}})["server"]
        return str(server["id"])

    def show(self, uuid: str) -> dict[str, Any]:
        return dict(self.ok("GET", f"/servers/{uuid}")["server"])

    def wait(self, uuid: str, *, timeout: float = 120.0,
             until: frozenset[str] = FINAL) -> dict[str, Any]:
        """The server once it reaches a final status with no task in progress."""
        deadline = time.monotonic() + timeout
        while True:
            response = self.call("GET", f"/servers/{uuid}")
            if response.status_code == 404:
                return {"id": uuid, "status": "DELETED"}
            server = dict(response.json()["server"])
            if server["status"] in until and server["OS-EXT-STS:task_state"] is None:
                return server
            if time.monotonic() > deadline:
                raise AssertionError(f"server {uuid} still {server['status']}/"
                                     f"{server['OS-EXT-STS:task_state']} after {timeout}s")
            time.sleep(0.05)

    def boot_and_wait(self, flavor: str, image: str, **extra: Any) -> dict[str, Any]:
        return self.wait(self.boot(flavor, image, **extra))

    def action(self, uuid: str, body: Mapping[str, Any]) -> requests.Response:
        return self.call("POST", f"/servers/{uuid}/action", dict(body))

    def guests(self, host: str) -> list[str]:
        if host in self.agents:
            return self.agents[host].agent.driver.guests()
        assert self.fleet is not None, f"no host {host} in this cloud"
        return self.fleet.agents[host].driver.guests()

    def allocations(self, consumer: str) -> dict[str, Any]:
        found = self.placement.request("GET", f"/allocations/{consumer}")
        return dict(found.get("allocations", {}))

    def free(self, provider_uuid: str) -> dict[str, int]:
        """What the provider has free of VCPU, MEMORY_MB and DISK_GB, read from
        placement: (total - reserved) * allocation_ratio - used (0 of a class it lacks)."""
        inventories = self.placement.request(
            "GET", f"/resource_providers/{provider_uuid}/inventories")["inventories"]
        usages = self.placement.request(
            "GET", f"/resource_providers/{provider_uuid}/usages")["usages"]
        return {rc: int((inventories[rc]["total"] - inventories[rc]["reserved"])
                        * inventories[rc]["allocation_ratio"]) - usages.get(rc, 0)
                if rc in inventories else 0 for rc in ("VCPU", "MEMORY_MB", "DISK_GB")}

    def host_of_provider(self, provider_uuid: str) -> str:
        return str(self.placement.request("GET", f"/resource_providers/{provider_uuid}")
                   ["name"])

    def spawn_attempts(self, server: Mapping[str, Any]) -> list[str]:
        """The hosts a build tried, in order (from the server's scheduling record)."""
        return [a["host"] for a in server["moorage:scheduling"]["attempts"]
                if a["result"] in ("ok", "failed")]


@pytest.fixture
def make_cloud(placement_server: Any, tmp_path: Path) -> Iterator[Any]:
    """``make_cloud(hosts, scheduler={option: value}, ...)`` starts a cloud."""
    started: list[tuple[Any, Any, list[RunningAgent]]] = []
    fleets: list[Fleet] = []

    def make(hosts: Sequence[HostSpec], *, scheduler: Mapping[str, object] | None = None,
             filter_scheduler: Mapping[str, object] | None = None,
             default: Mapping[str, object] | None = None,
             conductor: Mapping[str, object] | None = None,
             quota: Mapping[str, object] | None = None,
             placement: Mapping[str, object] | None = None,
             fleet: Sequence[HostGroup] = (),
             database_url: str | None = None) -> Cloud:
        overrides: list[tuple[str, str, object]] = [
            ("DEFAULT", "service_token", SERVICE_TOKEN),
            ("placement", "endpoint_override", placement_server.url),
            ("api", "auth_strategy", "noauth2"),
            ("database", "connection",
             database_url or f"sqlite:///{tmp_path / f'api{len(started)}.db'}"),
            ("image", "filesystem_store_datadir", str(tmp_path / f"images{len(started)}")),
            *UNLIMITED_SERVERS,
        ]
        overrides += [("scheduler", k, v) for k, v in (scheduler or {}).items()]
        overrides += [("filter_scheduler", k, v) for k, v in (filter_scheduler or {}).items()]
        overrides += [("DEFAULT", k, v) for k, v in (default or {}).items()]
        overrides += [("conductor", k, v) for k, v in (conductor or {}).items()]
        overrides += [("quota", k, v) for k, v in (quota or {}).items()]
        overrides += [("placement", k, v) for k, v in (placement or {}).items()]
        conf = load_config([], overrides)
        state = make_state(conf, migrate=True)
        attach_workers(state)
        server = serve(state, "127.0.0.1", 0).start()
        agents: list[RunningAgent] = []
        started.append((server, state, agents))
        placement = PlacementClient(placement_server.url, "admin")
        for spec in hosts:
            agent_conf = agent_config(spec.name, spec.driver,
                                      placement_url=placement_server.url,
                                      api_url=server.url,
                                      overrides=[("DEFAULT", "service_token",
                                                  conf.service_token),
                                                 *((g, o, v)
                                                   for (g, o), v in spec.options.items())])
            agents.append(start_agent(agent_conf, placement=placement, port=0))
        running_fleet = None
        if fleet:
            running_fleet = Fleet(fleet_hosts("test", fleet, overrides=[
                (g, o, v) for g, o, v in overrides if g == "DEFAULT"]), placement,
                api_url=server.url, access=InternalAccess.of(conf),
                report_interval=float(conf.report_interval)).start()
            fleets.append(running_fleet)
        cloud = Cloud(server.url, state, {a.host: a for a in agents}, placement,
                      running_fleet)
        registered = {s["host"] for s in cloud.ok("GET", "/os-services")["services"]}
        assert registered >= {h.name for h in hosts}, registered
        return cloud

    yield make
    for running in fleets:
        running.stop()
    for server, state, agents in reversed(started):
        for agent in agents:
            agent.stop()
        if state.conductor is not None:
            state.conductor.stop()
        server.stop()
