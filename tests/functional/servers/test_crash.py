"""A process killed in the middle of a build, a move or a delete leaves no server
stuck and nothing held that does not run: another conductor (or the same service,
restarted) takes the operation over once its lease runs out and reconciles it with
what placement and the hosts really hold.

Every service is its own process (placement, a fleet of fake hosts, the compute API
under granian, conductors); the death is a SIGKILL at a named step
(``moorage.failpoints``), so each step is hit exactly."""

from __future__ import annotations

import concurrent.futures
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.functional.servers.process_cloud import ProcessCloud, wait_for

# Enough to take the operation over (leases of 2 s), the respawn of a killed granian
# worker (3.5 s) included, and to finish it.
SETTLE = 45.0

BUILD_STEPS = ["api.create.after_commit", "conductor.build.after_claim",
               "conductor.build.after_spawn"]
MOVE_STEPS = ["conductor.move.after_migration", "conductor.move.after_swap",
              "conductor.move.after_spawn"]
DELETE_STEPS = ["conductor.delete.after_destroy", "conductor.delete.after_release"]


def _boot(cloud: ProcessCloud) -> str | None:
    """Create a server; None when the API died before answering."""
    try:
        response = cloud.call("POST", "/servers", {"server": {"networks": "none",
            "name": "vm", "flavorRef": cloud.flavor, "imageRef": cloud.image}})
    except requests.ConnectionError:
        return None
    assert response.status_code == 202, response.text
    return str(response.json()["server"]["id"])


@pytest.mark.parametrize("step", BUILD_STEPS)
def test_the_api_killed_during_a_build(tmp_path: Path, step: str) -> None:
    with ExitStack() as stack:
        cloud = ProcessCloud(tmp_path, stack, failpoint=step)
        _boot(cloud)
        wait_for(lambda: cloud.fired(step), 30, f"the failpoint {step}")
        servers = cloud.wait_settled(SETTLE)
        assert [s["status"] for s in servers] == ["ACTIVE"], servers
        assert cloud.consistent(servers) == []


@pytest.mark.parametrize("step", MOVE_STEPS)
def test_the_api_killed_during_a_migration(tmp_path: Path, step: str) -> None:
    with ExitStack() as stack:
        cloud = ProcessCloud(tmp_path, stack, failpoint=step)
        uuid = _boot(cloud)
        assert uuid is not None
        [server] = cloud.wait_settled(SETTLE)
        source = server["OS-EXT-SRV-ATTR:host"]
        with suppress(requests.ConnectionError):
            cloud.call("POST", f"/servers/{uuid}/action", {"migrate": None})
        wait_for(lambda: cloud.fired(step), 30, f"the failpoint {step}")
        [server] = cloud.wait_settled(SETTLE)
        # Rolled back: where it was, and said so.
        assert server["status"] == "ACTIVE" and server["OS-EXT-SRV-ATTR:host"] == source
        assert "rolled back" in server["moorage:scheduling"]["error"]
        [migration] = cloud.migrations(f"?instance_uuid={uuid}")
        assert migration["status"] == "error"
        assert cloud.placement_get(f"/allocations/{migration['uuid']}")["allocations"] == {}
        assert cloud.consistent([server]) == []


@pytest.mark.parametrize("step", DELETE_STEPS)
def test_the_api_killed_during_a_delete(tmp_path: Path, step: str) -> None:
    with ExitStack() as stack:
        cloud = ProcessCloud(tmp_path, stack, failpoint=step)
        uuid = _boot(cloud)
        assert uuid is not None
        cloud.wait_settled(SETTLE)
        with suppress(requests.ConnectionError):
            cloud.call("DELETE", f"/servers/{uuid}")
        wait_for(lambda: cloud.fired(step), 30, f"the failpoint {step}")
        assert cloud.wait_settled(SETTLE) == []
        assert cloud.placement_get(f"/allocations/{uuid}")["allocations"] == {}
        assert cloud.consistent([]) == []


@pytest.mark.parametrize("step", ["conductor.build.after_spawn", "conductor.move.after_swap"])
def test_a_conductor_process_killed_is_taken_over_by_another(tmp_path: Path,
                                                             step: str) -> None:
    with ExitStack() as stack:
        # The API only records the work; conductor processes carry it out.
        cloud = ProcessCloud(tmp_path, stack, run_conductor=False)
        if step.startswith("conductor.move"):
            first = cloud.start_conductor()
            uuid = _boot(cloud)
            cloud.wait_settled(SETTLE)
            first.kill()
        doomed = cloud.start_conductor(failpoint=step)
        if step.startswith("conductor.build"):
            uuid = _boot(cloud)
        else:
            cloud.call("POST", f"/servers/{uuid}/action", {"migrate": None})
        wait_for(lambda: cloud.fired(step), 30, f"the failpoint {step}")
        wait_for(lambda: not doomed.running(), 10, "the conductor's death")
        cloud.start_conductor()
        servers = cloud.wait_settled(SETTLE)
        assert [s["status"] for s in servers] == ["ACTIVE"], servers
        assert cloud.consistent(servers) == []


def test_a_burst_of_500_creates_past_capacity(tmp_path: Path) -> None:
    """500 concurrent POST /servers: no connection error; exactly as many ACTIVE as the
    hosts hold (4 hosts of 15), the rest in ERROR with NoValidHost; none stuck."""
    with ExitStack() as stack:
        cloud = ProcessCloud(tmp_path, stack, hosts=4, memory_mb=512 * 16, lease_seconds=30)
        url = cloud.api.url + "/v2.1/servers"
        body = {"server": {"name": "vm", "flavorRef": cloud.flavor, "imageRef": cloud.image}}

        def create(_index: int) -> int:
            return requests.post(url, json=body, headers={"X-Auth-Token": "admin"},
                                 timeout=120).status_code

        with concurrent.futures.ThreadPoolExecutor(500) as pool:
            codes = list(pool.map(create, range(500)))
        assert codes == [202] * 500
        servers = cloud.wait_settled(180)
        statuses = [s["status"] for s in servers]
        assert len(servers) == 500
        assert statuses.count("ACTIVE") == 60, statuses.count("ACTIVE")
        errors = [s for s in servers if s["status"] == "ERROR"]
        assert all(s["fault"]["message"].startswith("No valid host was found")
                   for s in errors), {s["fault"]["message"] for s in errors}
        assert cloud.consistent(servers) == []


def test_two_api_processes_on_postgresql(tmp_path: Path, postgresql_url: str) -> None:
    """Two granian workers, each with its conductor, on one PostgreSQL database: no
    server built twice, no provider over its capacity."""
    with ExitStack() as stack:
        cloud = ProcessCloud(tmp_path, stack, hosts=5, memory_mb=512 * 25,
                             database_url=postgresql_url, api_workers=2, lease_seconds=30)
        url = cloud.api.url + "/v2.1/servers"
        body = {"server": {"name": "vm", "flavorRef": cloud.flavor, "imageRef": cloud.image}}

        def create(_index: int) -> Any:
            return requests.post(url, json=body, headers={"X-Auth-Token": "admin"},
                                 timeout=120).status_code

        with concurrent.futures.ThreadPoolExecutor(64) as pool:
            codes = list(pool.map(create, range(150)))
        assert codes == [202] * 150
        servers = cloud.wait_settled(180)
        statuses = [s["status"] for s in servers]
        assert statuses.count("ACTIVE") == 120 and statuses.count("ERROR") == 30
        assert cloud.consistent(servers) == []
        log = cloud.api.output()
        assert log.count(": 8 workers, leases of") >= 2 or log.count("started:") >= 2, log
