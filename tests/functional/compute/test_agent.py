"""The compute agent against a real placement server, with the fake driver.

What the agent writes to placement: the node's provider and its children with
their inventories, the traits its driver owns (added when supported, removed
when not), operators' traits left alone, COMPUTE_NODE, COMPUTE_STATUS_DISABLED
following the service state, retries that lose nobody's change, and nothing at
all when the hypervisor cannot be reached.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Any

import pytest

from moorage.compute.agent import ComputeAgent
from moorage.conf import load_config
from moorage.model.inventory import Inventory
from moorage.placement.client import PlacementClient, ProviderQuery
from moorage.placement.provider_names import provider_uuid
from moorage.virt.driver import HypervisorUnavailable
from moorage.virt.fake import FakeChild, FakeDriver, FakeHost
from tests.conftest import PlacementClient as TestClient

VHD = "COMPUTE_IMAGE_TYPE_VHD"
RAW = "COMPUTE_IMAGE_TYPE_RAW"


def _agent(url: str, host: FakeHost,
           overrides: tuple[tuple[str, str, object], ...] = ()) -> ComputeAgent:
    conf = load_config([], overrides)
    return ComputeAgent(conf, FakeDriver(conf, host), PlacementClient(url, "admin"))


def _traits(client: TestClient, name: str) -> set[str]:
    rp = client.get(f"/resource_providers?name={name}", expect=200).json()["resource_providers"]
    return set(client.get(f"/resource_providers/{rp[0]['uuid']}/traits",
                          expect=200).json()["traits"])


def test_first_sync_registers_the_node(placement: TestClient,
                                       caplog: pytest.LogCaptureFixture) -> None:
    host = FakeHost(nodes=("cn1",), vcpus=16, memory_mb=32768, disk_gb=500,
                    reserved_memory_mb=512, traits={"HW_CPU_X86_AVX2": True})
    with caplog.at_level(logging.INFO, logger="moorage.compute.agent"):
        result = _agent(placement.url, host).sync()
    assert result.ok and result.changes[0].created
    [line] = [r.getMessage() for r in caplog.records if r.name == "moorage.compute.agent"]
    assert line.startswith("cn1: created; inventories written; +") and "HW_CPU_X86_AVX2" in line
    rp = placement.get(f"/resource_providers/{provider_uuid('cn1')}", expect=200).json()
    assert rp["name"] == "cn1" and rp["parent_provider_uuid"] is None
    inventories = placement.get(f"/resource_providers/{rp['uuid']}/inventories",
                                expect=200).json()["inventories"]
    assert {rc: inv["total"] for rc, inv in inventories.items()} == {
        "VCPU": 16, "MEMORY_MB": 32768, "DISK_GB": 500}
    assert inventories["MEMORY_MB"]["reserved"] == 512
    traits = _traits(placement, "cn1")
    assert {"COMPUTE_NODE", "HW_CPU_X86_AVX2", RAW, "COMPUTE_VOLUME_MULTI_ATTACH"} <= traits
    assert VHD not in traits


def test_ownership_rules_on_a_live_provider(placement: TestClient) -> None:
    host = FakeHost(nodes=("cn1",))
    agent = _agent(placement.url, host)
    agent.sync()
    uuid = provider_uuid("cn1")
    placement.put("/traits/CUSTOM_OPERATOR_GOLD", expect=201)
    generation = placement.generation(uuid)
    # An operator adds their own trait, a trait the driver owns as unsupported (VHD),
    # and a trait the driver says nothing about.
    placement.put(f"/resource_providers/{uuid}/traits", json={
        "resource_provider_generation": generation,
        "traits": sorted(_traits(placement, "cn1") | {
            "CUSTOM_OPERATOR_GOLD", VHD, "HW_CPU_X86_SSE42"})}, expect=200)
    # The agent reads placement again every resource_provider_association_refresh
    # seconds (or when one of its own writes meets a newer generation).
    agent.tree_sync.forget()
    change = agent.sync().changes[0]
    assert change.removed_traits == {VHD}
    traits = _traits(placement, "cn1")
    assert {"CUSTOM_OPERATOR_GOLD", "HW_CPU_X86_SSE42", "COMPUTE_NODE"} <= traits
    assert VHD not in traits
    # Nothing to do the second time.
    again = agent.sync().changes[0]
    assert not (again.added_traits or again.removed_traits or again.inventories_written)


class _Counting(PlacementClient):
    """A placement client that counts the requests it sends."""

    sent: list[str]

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self.sent.append(f"{method} {path}")
        return super().request(method, path, **kwargs)


def test_an_unchanged_host_costs_placement_nothing(placement: TestClient,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    conf = load_config([], [("compute", "resource_provider_association_refresh", 3600)])
    client = _Counting(placement.url, "admin")
    client.sent = []
    agent = ComputeAgent(conf, FakeDriver(conf, FakeHost(nodes=("cn1",))), client)
    assert agent.sync().ok
    # A new host: create it, write its inventories, write its traits.
    assert [r.split("/")[1] for r in client.sent] == ["resource_providers"] * 3
    assert client.sent[0] == "POST /resource_providers"
    client.sent.clear()
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="moorage.compute.agent"):
        assert agent.sync().ok and agent.sync().ok
    assert client.sent == []
    # Nor a line at INFO: every agent of a cloud syncs every minute.
    assert [(r.levelno, r.getMessage()) for r in caplog.records
            if r.name == "moorage.compute.agent"] == [(logging.DEBUG, "cn1: unchanged")] * 2
    # What the agent changes itself is written with the generation it knows.
    agent.set_disabled(True)
    assert client.sent == [f"PUT /resource_providers/{provider_uuid('cn1')}/traits"]
    assert "COMPUTE_STATUS_DISABLED" in _traits(placement, "cn1")
    # Another writer moved the generation meanwhile: read again, lose nothing.
    placement.put("/traits/CUSTOM_OPERATOR_GOLD", expect=201)
    uuid = provider_uuid("cn1")
    placement.put(f"/resource_providers/{uuid}/traits", json={
        "resource_provider_generation": placement.generation(uuid),
        "traits": sorted(_traits(placement, "cn1") | {"CUSTOM_OPERATOR_GOLD"})}, expect=200)
    agent.set_disabled(False)
    traits = _traits(placement, "cn1")
    assert "CUSTOM_OPERATOR_GOLD" in traits and "COMPUTE_STATUS_DISABLED" not in traits


def test_a_learnt_disabled_state_is_written_only_where_placement_lacks_it(
        placement: TestClient) -> None:
    """The first heartbeat's answer: an enabled host whose provider shows no
    COMPUTE_STATUS_DISABLED costs placement nothing; a disabled one gets the trait."""
    conf = load_config([], [("compute", "resource_provider_association_refresh", 3600)])
    client = _Counting(placement.url, "admin")
    client.sent = []
    agents = {name: ComputeAgent(conf, FakeDriver(conf, FakeHost(nodes=(name,))), client,
                                 disabled=None) for name in ("cn1", "cn2")}
    for agent in agents.values():
        assert agent.sync().ok
    client.sent = []
    agents["cn1"].learn_disabled(False)
    assert client.sent == [] and agents["cn1"].disabled is False
    agents["cn2"].learn_disabled(True)
    assert client.sent == [f"PUT /resource_providers/{provider_uuid('cn2')}/traits"]
    assert agents["cn2"].disabled is True
    assert "COMPUTE_STATUS_DISABLED" in _traits(placement, "cn2")
    assert "COMPUTE_STATUS_DISABLED" not in _traits(placement, "cn1")


def test_disabled_state_and_excluded_image_types(placement: TestClient) -> None:
    agent = _agent(placement.url, FakeHost(nodes=("cn1",)),
                   (("compute", "image_type_exclude_list", ["raw"]),))
    agent.sync()
    assert RAW not in _traits(placement, "cn1")
    agent.set_disabled(True)
    assert "COMPUTE_STATUS_DISABLED" in _traits(placement, "cn1")
    agent.set_disabled(False)
    assert "COMPUTE_STATUS_DISABLED" not in _traits(placement, "cn1")


def test_nested_providers_follow_the_driver(placement: TestClient) -> None:
    numa = FakeChild("numa0", {"VCPU": Inventory.of(8), "MEMORY_MB": Inventory.of(8192)},
                     traits={"HW_NUMA_ROOT": True})
    pf = FakeChild("pf0", {"SRIOV_NET_VF": Inventory.of(8)}, traits={"HW_NIC_SRIOV": True},
                   parent="numa0")
    host = FakeHost(nodes=("cn1",), children=(numa, pf))
    _agent(placement.url, host).sync()
    tree = {p["name"]: p for p in placement.get(
        f"/resource_providers?in_tree={provider_uuid('cn1')}").json()["resource_providers"]}
    assert set(tree) == {"cn1", "cn1_numa0", "cn1_pf0"}
    assert tree["cn1_pf0"]["parent_provider_uuid"] == tree["cn1_numa0"]["uuid"]
    assert _traits(placement, "cn1_pf0") == {"HW_NIC_SRIOV"}
    # The NIC goes away: its provider is deleted.
    result = _agent(placement.url, FakeHost(nodes=("cn1",), children=(numa,))).sync()
    assert result.ok
    names = {p["name"] for p in placement.get(
        f"/resource_providers?in_tree={provider_uuid('cn1')}").json()["resource_providers"]}
    assert names == {"cn1", "cn1_numa0"}


class _RacingClient(PlacementClient):
    """Before its first trait write, someone else changes the provider's traits."""

    def __init__(self, url: str) -> None:
        super().__init__(url, "admin")
        self.raced = False

    def set_traits(self, uuid: str, generation: int, traits: Any) -> int:
        if not self.raced:
            self.raced = True
            other = PlacementClient(self.url, "admin")
            current, gen = other.provider_traits(uuid)
            other.ensure_trait("CUSTOM_RACE")
            other.set_traits(uuid, gen, current | {"CUSTOM_RACE"})
        return super().set_traits(uuid, generation, traits)


def test_a_concurrent_update_is_retried_and_lost_by_nobody(placement: TestClient) -> None:
    conf = load_config([])
    host = FakeHost(nodes=("cn1",), traits={"HW_CPU_X86_AVX2": True})
    client = _RacingClient(placement.url)
    change = ComputeAgent(conf, FakeDriver(conf, host), client).sync().changes[0]
    assert client.raced and change.retries == 1
    traits = _traits(placement, "cn1")
    assert {"CUSTOM_RACE", "HW_CPU_X86_AVX2", "COMPUTE_NODE"} <= traits


class _Unreachable(FakeDriver):
    reachable = False

    def init_host(self) -> None:
        if not self.reachable:
            raise HypervisorUnavailable("connection refused by qemu:///system")


def test_an_unreachable_hypervisor_reports_nothing(placement: TestClient) -> None:
    conf = load_config([])
    driver = _Unreachable(conf, FakeHost(nodes=("cn1",)))
    agent = ComputeAgent(conf, driver, PlacementClient(placement.url, "admin"))
    result = agent.sync()
    assert not result.ok and "connection refused" in (result.problem or "")
    assert placement.get("/resource_providers", expect=200).json()["resource_providers"] == []
    driver.reachable = True
    assert agent.sync().ok
    assert PlacementClient(placement.url).providers(ProviderQuery(name="cn1"))


def test_compute_run_once_from_the_command_line(placement: TestClient) -> None:
    command = [sys.executable, "-m", "moorage", "compute", "run", "--once", "--driver", "fake",
               "--host", "cli-host", "--placement-url", placement.url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "cli-host: created" in done.stdout
    assert "COMPUTE_NODE" in _traits(placement, "cli-host")


@pytest.mark.parametrize(("args", "message"), [
    (["--driver", "hyperv"], "choose one of: libvirt, fake, vmware, ironic"),
    (["--driver", "fake", "--placement-url", "http://127.0.0.1:1"],
     "placement at http://127.0.0.1:1 is not reachable: connection refused"),
])
def test_compute_run_errors_are_one_line(args: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "moorage", "compute", "run", "--once", *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert message in done.stderr
    assert "Traceback" not in done.stderr
