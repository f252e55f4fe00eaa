"""A fleet of simulated hosts in one process is, to the rest of the cloud, the same as
that many single compute agents: the same providers, inventories and traits in
placement, the same guests refused at spawn, its own liveness and disabled state per
host, through one endpoint and one heartbeat."""

from __future__ import annotations

import time
from typing import Any

from moorage.api.handlers.services import AGENT_NOTIFIED
from moorage.placement.provider_names import provider_uuid
from moorage.run.description import HostGroup
from moorage.run.host_plans import fake_options
from tests.functional.servers.conftest import Cloud, HostSpec

E1000 = "COMPUTE_NET_VIF_MODEL_E1000"
GROUP = HostGroup(name="fl", count=2, driver="fake",
                  traits=("COMPUTE_NET_VIF_MODEL_VIRTIO", "HW_CPU_X86_AVX2"),
                  unsupported_traits=(E1000,), image_types=("raw",))


def _provider(cloud: Cloud, host: str) -> tuple[set[str], dict[str, Any]]:
    uuid = provider_uuid(host)
    traits = set(cloud.placement.request("GET", f"/resource_providers/{uuid}/traits")
                 ["traits"])
    inventories = cloud.placement.request(
        "GET", f"/resource_providers/{uuid}/inventories")["inventories"]
    return traits, inventories


def _boot_on(cloud: Cloud, host: str, flavor: str, image: str) -> dict[str, Any]:
    return cloud.boot_and_wait(flavor, image, host=host)


def test_fleet_hosts_report_and_refuse_what_a_single_agent_does(make_cloud: Any) -> None:
    single = HostSpec("single", "fake", fake_options(GROUP))
    cloud: Cloud = make_cloud([single], fleet=[GROUP])
    assert cloud.fleet is not None
    reference = _provider(cloud, "single")
    assert E1000 not in reference[0] and "HW_CPU_X86_AVX2" in reference[0]
    for host in ("fl-1", "fl-2"):
        assert _provider(cloud, host) == reference
    services = {s["host"]: s for s in cloud.ok("GET", "/os-services")["services"]}
    assert {services[h]["state"] for h in ("single", "fl-1", "fl-2")} == {"up"}
    flavor = cloud.flavor("small")
    refused = {"e1000": cloud.image("e1000", "raw", {"hw_vif_model": "e1000"}),
               "qcow2": cloud.image("qcow2", "qcow2")}
    failures = {}
    for host in ("single", "fl-1"):
        for name, image in refused.items():
            server = _boot_on(cloud, host, flavor, image)
            assert server["status"] == "ERROR", server
            [attempt] = [a for a in server["moorage:scheduling"]["attempts"]
                         if a["result"] == "failed"]
            assert attempt["host"] == host and attempt["kind"] == "UnsupportedHardware"
            failures[(host, name)] = attempt["feature"]
    assert failures == {("single", "e1000"): "hw_vif_model=e1000",
                        ("fl-1", "e1000"): "hw_vif_model=e1000",
                        ("single", "qcow2"): "disk_format=qcow2",
                        ("fl-1", "qcow2"): "disk_format=qcow2"}
    ok = _boot_on(cloud, "fl-2", flavor, cloud.image("virtio", "raw",
                                                     {"hw_vif_model": "virtio"}))
    assert ok["status"] == "ACTIVE" and ok["OS-EXT-SRV-ATTR:host"] == "fl-2"
    assert cloud.guests("fl-2") == [ok["id"]]
    assert cloud.guests("fl-1") == []
    # Deleting reaches the fleet host through the fleet's endpoint.
    assert cloud.call("DELETE", f"/servers/{ok['id']}").status_code == 204
    assert cloud.wait(ok["id"])["status"] == "DELETED"
    assert cloud.guests("fl-2") == []


def test_a_silent_fleet_host_goes_down_and_comes_back(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([], fleet=[GROUP], default={"report_interval": 1,
                                                          "service_down_time": 3})
    assert cloud.fleet is not None
    cloud.fleet.silence("fl-1")

    def state(host: str) -> str:
        services = cloud.ok("GET", "/os-services")["services"]
        return str(next(s["state"] for s in services if s["host"] == host))

    deadline = time.monotonic() + 15
    while state("fl-1") != "down":
        assert time.monotonic() < deadline, "the silent host never went down"
        time.sleep(0.2)
    assert state("fl-2") == "up"
    # The scheduler leaves the silent host out.
    flavor, image = cloud.flavor("small"), cloud.image("raw", "raw")
    for _ in range(3):
        server = cloud.boot_and_wait(flavor, image)
        assert server["OS-EXT-SRV-ATTR:host"] == "fl-2", server
    cloud.fleet.revive("fl-1")
    deadline = time.monotonic() + 15
    while state("fl-1") != "up":
        assert time.monotonic() < deadline, "the revived host never came back"
        time.sleep(0.2)


def test_disabling_a_fleet_host_reaches_its_provider(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([], fleet=[GROUP])
    service = next(s for s in cloud.ok("GET", "/os-services")["services"]
                   if s["host"] == "fl-2")
    answer = cloud.call("PUT", f"/os-services/{service['id']}",
                        {"status": "disabled", "disabled_reason": "maintenance"})
    assert answer.status_code == 200, answer.text
    assert answer.headers[AGENT_NOTIFIED] == "true"
    assert "COMPUTE_STATUS_DISABLED" in _provider(cloud, "fl-2")[0]
    assert "COMPUTE_STATUS_DISABLED" not in _provider(cloud, "fl-1")[0]
    cloud.ok("PUT", f"/os-services/{service['id']}", {"status": "enabled"})
    assert "COMPUTE_STATUS_DISABLED" not in _provider(cloud, "fl-2")[0]
