"""A cloud of separate processes for the crash and concurrency tests: placement, a
fleet of fake hosts, compute API processes (granian, each worker with its conductor)
and conductor processes, sharing one compute API database, and checks of what the
cloud holds afterwards."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import requests

from moorage.api import microversion
from moorage.api.launcher import ComputeApiProcess, ConductorProcess, FleetProcess
from moorage.lifecycle import machine
from moorage.placement.launcher import PlacementProcess, ServerProcess
from moorage.placement.provider_names import provider_uuid

# One header for both services; the compute API's newest shapes, with the additions.
HEADERS = {"X-Auth-Token": "admin",
           "OpenStack-API-Version": "placement 1.39, compute 2.100",
           "Moorage-Additions": "1"}
# The version the tests read moves in (its shape: microversion.MIGRATION_PAGING).
MOVES_VERSION = {microversion.HEADER: f"compute {microversion.MIGRATION_PAGING.version}"}
# Shared by the compute API processes, the conductors and the fleet.
SERVICE_TOKEN = "process-cloud-token"


class ProcessCloud:
    """Placement, a fleet and compute API processes over one database (``database``)."""

    def __init__(self, workdir: Path, stack: ExitStack, *, hosts: int = 3,
                 memory_mb: int = 8704, database_url: str | None = None,
                 lease_seconds: float = 2.0, failpoint: str | None = None,
                 api_workers: int = 1, run_conductor: bool = True) -> None:
        self.workdir = workdir
        self.stack = stack
        self.database_url = database_url or f"sqlite:///{workdir / 'compute-api.sqlite'}"
        self.config: dict[str, dict[str, object]] = {
            "conductor": {"lease_seconds": lease_seconds, "poll_interval": 0.2},
            "quota": {"instances": -1, "cores": -1, "ram": -1},
            # Heartbeats may stop while an API process is down: hosts stay up.
            "DEFAULT": {"service_down_time": 3600, "report_interval": 2,
                        "service_token": SERVICE_TOKEN},
        }
        self.placement = stack.enter_context(PlacementProcess(workdir / "placement"))
        self.apis: list[ComputeApiProcess] = []
        self.conductors = 0
        api = self.start_api(failpoint=failpoint, workers=api_workers,
                             run_conductor=run_conductor)
        fleet_file = workdir / "fleet.yaml"
        fleet_file.write_text(f"""name: crash
host_groups:
  - name: h
    count: {hosts}
    driver: fake
    capacity: {{vcpus: 64, memory_mb: {memory_mb}, disk_gb: 2000}}
    image_types: [raw]
""")
        self.fleet = FleetProcess(workdir / "fleet", fleet_file,
                                  placement_url=self.placement.url, api_url=api.url,
                                  config={"DEFAULT": {"report_interval": 2,
                                                      "service_token": SERVICE_TOKEN}})
        self.fleet.start(timeout=120)
        stack.callback(self.fleet.stop)
        self.http = requests.Session()
        self.http.headers.update(HEADERS)
        deadline = time.monotonic() + 60
        while len(self.get("/os-services")["services"]) < hosts:
            assert time.monotonic() < deadline, "the fleet's hosts never registered"
            time.sleep(0.2)
        self.flavor = self.post("/flavors", {"flavor": {
            "name": "small", "vcpus": 1, "ram": 512, "disk": 1}})["flavor"]["id"]
        self.bigger = self.post("/flavors", {"flavor": {
            "name": "bigger", "vcpus": 2, "ram": 1024, "disk": 1}})["flavor"]["id"]
        self.image = self.post("/images", {"name": "raw", "disk_format": "raw",
                                           "container_format": "bare"})["id"]

    # -- processes --------------------------------------------------------------------
    def start_api(self, *, failpoint: str | None = None, workers: int = 1,
                  run_conductor: bool = True) -> ComputeApiProcess:
        config = {**self.config, "conductor": {**self.config["conductor"],
                                                "run_in_api": run_conductor}}
        api = ComputeApiProcess(self.workdir / f"api{len(self.apis)}",
                                placement_url=self.placement.url,
                                database_url=self.database_url, workers=workers,
                                config=config, name=f"compute-api{len(self.apis)}")
        api.extra_env = self._failpoints(failpoint)
        api.start()
        self.stack.callback(api.stop)
        self.apis.append(api)
        return api

    def start_conductor(self, *, failpoint: str | None = None,
                        action: str = "kill") -> ConductorProcess:
        """A ``moorage conductor serve`` process; ``failpoint``: armed to ``action``
        (kill: SIGKILL itself there; stop: SIGSTOP itself there)."""
        self.conductors += 1
        conductor = ConductorProcess(self.workdir / f"conductor{self.conductors}",
                                     self.apis[0].config_file,
                                     name=f"conductor-{time.monotonic_ns()}")
        conductor.extra_env = self._failpoints(failpoint, action)
        conductor.start()
        self.stack.callback(conductor.stop)
        return conductor

    def _failpoints(self, name: str | None, action: str = "kill") -> dict[str, str]:
        if name is None:
            return {}
        return {"MOORAGE_FAILPOINTS": f"{name}={action}@{self.workdir / (name + '.fired')}"}

    def fired(self, name: str) -> bool:
        return (self.workdir / (name + ".fired")).exists()

    @property
    def api(self) -> ComputeApiProcess:
        running = [a for a in self.apis if a.running()]
        assert running, "no compute API process is running"
        return running[-1]

    # -- the API -----------------------------------------------------------------------
    def call(self, method: str, path: str, body: Any = None) -> requests.Response:
        return self.http.request(method, self.api.url + "/v2.1" + path, json=body,
                                 timeout=60)

    def get(self, path: str) -> Any:
        response = self.call("GET", path)
        assert response.status_code == 200, (path, response.status_code, response.text)
        return response.json()

    def migrations(self, query: str = "") -> list[dict[str, Any]]:
        """GET /os-migrations at 2.59, the first version showing a move's uuid (its
        placement consumer)."""
        response = self.http.get(f"{self.api.url}/v2.1/os-migrations{query}", timeout=60,
                                 headers=MOVES_VERSION)
        assert response.status_code == 200, (query, response.status_code, response.text)
        return list(response.json()["migrations"])

    def post(self, path: str, body: Any) -> Any:
        response = self.call("POST", path, body)
        assert response.status_code < 300, (path, response.status_code, response.text)
        return response.json() if response.content else None

    def servers(self) -> list[dict[str, Any]]:
        return list(self.get("/servers/detail?all_tenants=1&limit=10000")["servers"])

    def wait_settled(self, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Every server at rest (ACTIVE, ERROR, VERIFY_RESIZE, or gone), within
        ``timeout``; the servers then."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                servers = self.servers()
            except requests.ConnectionError:  # a worker being respawned
                assert time.monotonic() < deadline, "the compute API never came back"
                time.sleep(0.3)
                continue
            busy = [s for s in servers
                    if not machine.at_rest(s["status"], s["OS-EXT-STS:task_state"])]
            if not busy:
                return servers
            assert time.monotonic() < deadline, (
                "servers still busy: " + ", ".join(
                    f"{s['id']} {s['status']}/{s['OS-EXT-STS:task_state']}" for s in busy))
            time.sleep(0.3)

    # -- what the cloud holds ---------------------------------------------------------------
    def placement_get(self, path: str, microversion: str = "1.39") -> Any:
        response = self.http.get(self.placement.url + path, timeout=60, headers={
            "OpenStack-API-Version": f"placement {microversion}"})
        assert response.status_code == 200, (path, response.text)
        return response.json()

    def guests(self) -> dict[str, list[str]]:
        """host -> the guests its fleet agent runs."""
        found: dict[str, list[str]] = {}
        for service in self.get("/os-services")["services"]:
            host = service["host"]
            url = f"{self.fleet.url}/hosts/{host}/guests"
            found[host] = list(self.http.get(url, timeout=30, headers=self.fleet.headers)
                               .json()["guests"])
        return found

    def consistent(self, servers: list[dict[str, Any]]) -> list[str]:
        """What does not match: every ACTIVE server holds exactly one allocation, on its
        host's provider, and runs as exactly one guest, there; nothing else is held
        or runs; no provider is over its capacity."""
        problems: list[str] = []
        guests = self.guests()
        running: dict[str, list[str]] = {}
        for host, uuids in guests.items():
            for uuid in uuids:
                running.setdefault(uuid, []).append(host)
        active = {s["id"]: s for s in servers if s["status"] in ("ACTIVE", "VERIFY_RESIZE")}
        for server in servers:
            held = self.placement_get(f"/allocations/{server['id']}")["allocations"]
            host = server.get("OS-EXT-SRV-ATTR:host")
            if server["id"] in active:
                node = str(server["OS-EXT-SRV-ATTR:hypervisor_hostname"])
                if list(held) != [provider_uuid(node)]:
                    problems.append(f"{server['id']} on {host} holds {sorted(held)}")
                if running.get(server["id"]) != [host]:
                    problems.append(f"{server['id']} is {server['status']} on {host} but "
                                    f"runs on {running.get(server['id'])}")
            elif held:
                problems.append(f"{server['id']} ({server['status']}) holds {sorted(held)}")
        for uuid, hosts in running.items():
            if uuid not in active:
                problems.append(f"{hosts} run {uuid}, which is not ACTIVE")
        # 1.9: one total per class (later versions split it by consumer type).
        used = self.placement_get("/usages?project_id=admin", "1.9")["usages"]
        wanted: dict[str, int] = {}
        for server in active.values():
            flavor = server["flavor"]
            for rc, amount in (("VCPU", flavor["vcpus"]), ("MEMORY_MB", flavor["ram"]),
                               ("DISK_GB", flavor["disk"])):
                wanted[rc] = wanted.get(rc, 0) + int(amount)
        if {k: v for k, v in used.items() if v} != {k: v for k, v in wanted.items() if v}:
            problems.append(f"the project uses {used}; its servers hold {wanted}")
        for provider in self.placement_get("/resource_providers")["resource_providers"]:
            usages = self.placement_get(
                f"/resource_providers/{provider['uuid']}/usages")["usages"]
            inventories = self.placement_get(
                f"/resource_providers/{provider['uuid']}/inventories")["inventories"]
            for rc, amount in usages.items():
                inventory = inventories[rc]
                capacity = (inventory["total"] - inventory["reserved"]) * inventory[
                    "allocation_ratio"]
                if amount > capacity:
                    problems.append(f"{provider['name']} over-allocated: {amount} {rc}")
        return problems


def kill(process: ServerProcess) -> None:
    """SIGKILL the process and everything in its group (a granian master and workers)."""
    process.kill()


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


__all__ = ["ProcessCloud", "kill", "wait_for"]
