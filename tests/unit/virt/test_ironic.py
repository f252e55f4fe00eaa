"""The Ironic driver on simulated node records: nodes, inventories, traits, deploys."""

from __future__ import annotations

import json
from pathlib import Path

import os_traits
import pytest

from moorage.model.inventory import Inventory
from moorage.model.vocabulary import UnknownTrait
from moorage.virt.driver import GuestNotFound, HypervisorUnavailable, UnsupportedHardware
from moorage.virt.ironic.driver import IronicDriver, resource_class_name
from moorage.virt.ironic.simulator import IronicSimulator, SimulatedNode
from moorage.virt.loader import load_driver
from moorage.virt.report import Source
from moorage.virt.switches import guest_feature_traits
from tests.unit.virt.builders import config, guest

GOLD = "1b0c6d1e-0000-4000-8000-000000000001"
SILVER = "1b0c6d1e-0000-4000-8000-000000000002"
BUSY = "1b0c6d1e-0000-4000-8000-000000000003"
FENCED = "1b0c6d1e-0000-4000-8000-000000000004"
RACK2 = "1b0c6d1e-0000-4000-8000-000000000005"
BARE = "1b0c6d1e-0000-4000-8000-000000000006"
DEAD = "1b0c6d1e-0000-4000-8000-000000000007"
PROPERTIES = {"cpus": 32, "memory_mb": 262144, "local_gb": 900, "cpu_arch": "x86_64"}


def ironic() -> IronicSimulator:
    """Node records of every interesting kind."""
    return IronicSimulator([
        SimulatedNode(GOLD, "gold-1", "baremetal-gold",
                      frozenset({os_traits.HW_CPU_X86_AVX2, "CUSTOM_RAID1"}), PROPERTIES),
        SimulatedNode(SILVER, "silver-1", "baremetal.silver", properties=PROPERTIES),
        SimulatedNode(BUSY, "busy-1", "baremetal-gold", provision_state="active",
                      power_state="power on",
                      instance_uuid="00000000-0000-4000-8000-00000000beef"),
        SimulatedNode(FENCED, "fenced-1", "baremetal-gold", maintenance=True,
                      maintenance_reason="fan failure"),
        SimulatedNode(RACK2, "rack2-1", "baremetal-gold", conductor_group="rack2"),
        SimulatedNode(BARE, "bare-1", None),
        SimulatedNode(DEAD, "dead-1", "baremetal-gold", provision_state="manageable"),
    ])


def driver(simulator: IronicSimulator | None = None, **options: object) -> IronicDriver:
    return IronicDriver(config(**options), simulator or ironic())


def test_loader_builds_the_driver_on_an_empty_ironic() -> None:
    for spelling in ("ironic", "ironic.IronicDriver"):
        loaded = load_driver(config(DEFAULT__compute_driver=spelling))
        assert isinstance(loaded, IronicDriver)
        loaded.init_host()
        assert loaded.nodes() == []


@pytest.mark.parametrize(("group", "nodes"), [
    (None, [GOLD, SILVER, BUSY, FENCED, RACK2, BARE, DEAD]),
    ("", [GOLD, SILVER, BUSY, FENCED, BARE, DEAD]),
    ("rack2", [RACK2]),
    ("rack3", []),
])
def test_nodes_are_those_of_the_conductor_group(group: str | None, nodes: list[str]) -> None:
    options = {} if group is None else {"ironic__conductor_group": group}
    assert driver(**options).nodes() == nodes


@pytest.mark.parametrize(("resource_class", "name"), [
    ("baremetal-gold", "CUSTOM_BAREMETAL_GOLD"),
    ("baremetal.silver", "CUSTOM_BAREMETAL_SILVER"),
    ("bm--large  x", "CUSTOM_BM_LARGE_X"),
    ("CUSTOM_GOLD", "CUSTOM_GOLD"),
    ("custom-gold", "CUSTOM_GOLD"),
    ("gpu2", "CUSTOM_GPU2"),
])
def test_resource_class_name(resource_class: str, name: str) -> None:
    assert resource_class_name(resource_class) == name


@pytest.mark.parametrize(("node", "inventories"), [
    (GOLD, {"CUSTOM_BAREMETAL_GOLD": Inventory.of(1, max_unit=1)}),
    (SILVER, {"CUSTOM_BAREMETAL_SILVER": Inventory.of(1, max_unit=1)}),
    # holding an instance, in maintenance, not available: fully reserved
    (BUSY, {"CUSTOM_BAREMETAL_GOLD": Inventory.of(1, reserved=1, max_unit=1)}),
    (FENCED, {"CUSTOM_BAREMETAL_GOLD": Inventory.of(1, reserved=1, max_unit=1)}),
    (DEAD, {"CUSTOM_BAREMETAL_GOLD": Inventory.of(1, reserved=1, max_unit=1)}),
    # no resource class: nothing to schedule to
    (BARE, {}),
])
def test_each_node_is_a_root_provider_with_one_custom_class(
        node: str, inventories: dict[str, Inventory]) -> None:
    [provider] = driver().provider_tree(node)
    assert (provider.name, provider.parent) == (node, None)
    assert dict(provider.inventories) == inventories


def test_a_node_without_power_state_is_reserved() -> None:
    simulator = IronicSimulator([SimulatedNode(GOLD, resource_class="gold", power_state=None)])
    inventory = driver(simulator).provider_tree(GOLD)[0].inventories["CUSTOM_GOLD"]
    assert inventory.reserved == 1


def test_trait_reports_are_the_node_record_plus_upstreams_capabilities() -> None:
    reports = driver().trait_reports(GOLD)
    from_record = {r.trait for r in reports if r.source is Source.NODE_RECORD and r.supported}
    assert from_record == {os_traits.HW_CPU_X86_AVX2, "CUSTOM_RAID1"}
    image_types = {r.trait: r.supported for r in reports
                   if r.trait.startswith("COMPUTE_IMAGE_TYPE_")}
    assert len(image_types) == 11
    assert {t for t, on in image_types.items() if on} == {
        os_traits.COMPUTE_IMAGE_TYPE_QCOW2, os_traits.COMPUTE_IMAGE_TYPE_RAW,
        os_traits.COMPUTE_IMAGE_TYPE_AMI}
    # bare metal has what it has: every guest feature not on the record is False
    refused = {r.trait for r in reports if not r.supported and r.source is Source.NODE_RECORD}
    assert refused == guest_feature_traits()
    assert {os_traits.COMPUTE_NET_VIF_MODEL_VIRTIO, os_traits.COMPUTE_STORAGE_BUS_SCSI,
            os_traits.COMPUTE_SOUND_MODEL_AC97, os_traits.COMPUTE_FIRMWARE_UEFI} <= refused
    assert {r.trait for r in driver().trait_reports(SILVER)
            if r.source is Source.NODE_RECORD and r.supported} == set()


def test_a_trait_taken_off_the_record_is_removed_from_the_provider() -> None:
    simulator = ironic()
    bm = driver(simulator)
    bm.trait_reports(GOLD)
    simulator.set_traits(GOLD, ["CUSTOM_RAID1", os_traits.HW_CPU_X86_SSE42])
    from_record = {(r.trait, r.supported, r.detail) for r in bm.trait_reports(GOLD)
                   if r.source is Source.NODE_RECORD and r.trait not in guest_feature_traits()}
    assert from_record == {
        ("CUSTOM_RAID1", True, f"node {GOLD}"),
        (os_traits.HW_CPU_X86_SSE42, True, f"node {GOLD}"),
        (os_traits.HW_CPU_X86_AVX2, False, f"node {GOLD}: no longer on the record"),
    }


def test_exclude_list_turns_an_image_type_off_from_configuration() -> None:
    reports = {r.trait: r for r in driver(
        compute__image_type_exclude_list=["qcow2"]).trait_reports(GOLD)}
    qcow2 = reports[os_traits.COMPUTE_IMAGE_TYPE_QCOW2]
    assert (qcow2.supported, qcow2.source) == (False, Source.CONFIGURATION)
    assert reports[os_traits.COMPUTE_IMAGE_TYPE_RAW].supported


def test_custom_names_the_agent_must_create() -> None:
    names = driver().custom_names(GOLD)
    assert names.resource_classes == {"CUSTOM_BAREMETAL_GOLD"}
    assert names.traits == {"CUSTOM_RAID1"}
    assert driver().custom_names(BARE).resource_classes == frozenset()


@pytest.mark.parametrize(("disk_format", "properties", "extra_specs"), [
    ("qcow2", {}, {}),
    ("raw", {}, {}),
    ("ami", {}, {}),
    # required traits the node has, from flavor (any group) and image
    ("raw", {"trait:CUSTOM_RAID1": "required"}, {"trait1:HW_CPU_X86_AVX2": "required"}),
    ("raw", {}, {"trait:COMPUTE_IMAGE_TYPE_RAW": "required"}),
])
def test_spawn_deploys_onto_the_node(disk_format: str, properties: dict[str, str],
                                     extra_specs: dict[str, str]) -> None:
    simulator = ironic()
    bm = driver(simulator)
    server = guest(GOLD, disk_format, properties, extra_specs)
    bm.spawn(server)
    node = simulator.get_node(GOLD)
    assert (node.provision_state, node.power_state, node.instance_uuid) == (
        "active", "power on", server.uuid)
    assert node.instance_info["traits"] == sorted(server.requested_traits & node.traits)
    assert server.uuid in bm.guests()
    # the node is taken: its class is reserved from now on
    assert bm.provider_tree(GOLD)[0].inventories["CUSTOM_BAREMETAL_GOLD"].reserved == 1


@pytest.mark.parametrize(("node", "disk_format", "properties", "extra_specs", "feature"), [
    (FENCED, "raw", {}, {}, "maintenance"),
    (BUSY, "raw", {}, {}, "provision_state"),
    (DEAD, "raw", {}, {}, "provision_state"),
    (GOLD, "iso", {}, {}, "disk_format=iso"),
    (GOLD, "vmdk", {}, {}, "disk_format=vmdk"),
    # a required trait the node does not have, even one nobody reports off
    (GOLD, "raw", {}, {"trait:CUSTOM_RAID5": "required"}, "CUSTOM_RAID5"),
    (GOLD, "raw", {"trait:HW_CPU_X86_AVX512F": "required"}, {}, "HW_CPU_X86_AVX512F"),
    (SILVER, "raw", {}, {"trait:HW_CPU_X86_AVX2": "required"}, "HW_CPU_X86_AVX2"),
    # one the driver reports off
    (GOLD, "raw", {}, {"trait:COMPUTE_IMAGE_TYPE_ISO": "required"},
     "COMPUTE_IMAGE_TYPE_ISO"),
])
def test_spawn_late_checks(node: str, disk_format: str, properties: dict[str, str],
                           extra_specs: dict[str, str], feature: str) -> None:
    simulator = ironic()
    before = simulator.get_node(node)
    with pytest.raises(UnsupportedHardware) as caught:
        driver(simulator).spawn(guest(node, disk_format, properties, extra_specs))
    assert caught.value.feature == feature
    assert feature in str(caught.value)
    assert simulator.get_node(node) == before


def test_maintenance_reason_is_in_the_error() -> None:
    with pytest.raises(UnsupportedHardware, match="fan failure"):
        driver().spawn(guest(FENCED))


def test_destroy_cleans_the_node_back_to_available() -> None:
    simulator = ironic()
    bm = driver(simulator)
    server = guest(GOLD)
    bm.spawn(server)
    bm.destroy(server.uuid)
    bm.destroy(server.uuid)  # nothing if it is not there
    node = simulator.get_node(GOLD)
    assert (node.provision_state, node.power_state, node.instance_uuid) == (
        "available", "power off", None)
    assert bm.guests() == ["00000000-0000-4000-8000-00000000beef"]
    assert bm.provider_tree(GOLD)[0].inventories["CUSTOM_BAREMETAL_GOLD"].reserved == 0


def test_a_node_of_another_conductor_group_is_not_this_services() -> None:
    simulator = ironic()
    bm = driver(simulator, ironic__conductor_group="")
    with pytest.raises(LookupError, match="rack2"):
        bm.spawn(guest(RACK2))
    simulator.deploy(RACK2, "00000000-0000-4000-8000-0000000000aa", {})
    bm.destroy("00000000-0000-4000-8000-0000000000aa")
    assert simulator.get_node(RACK2).provision_state == "active"
    assert "00000000-0000-4000-8000-0000000000aa" not in bm.guests()


def test_an_unreachable_ironic_reports_nothing_and_says_why() -> None:
    simulator = ironic()
    bm = driver(simulator)
    simulator.make_unreachable("503 Service Unavailable")
    for call in (bm.init_host, bm.nodes, bm.guests,
                 lambda: bm.provider_tree(GOLD),
                 lambda: bm.trait_reports(GOLD),
                 lambda: bm.spawn(guest(GOLD)),
                 lambda: bm.destroy("00000000-0000-4000-8000-00000000beef")):
        with pytest.raises(HypervisorUnavailable, match="Ironic API: 503 Service Unavailable"):
            call()
    simulator.make_reachable()
    assert len(bm.nodes()) == 7


def test_simulation_file(tmp_path: Path) -> None:
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps([
        {"uuid": GOLD, "name": "gold-1", "resource_class": "baremetal-gold",
         "traits": ["CUSTOM_RAID1"], "properties": PROPERTIES},
        {"uuid": SILVER, "resource_class": "baremetal-silver", "maintenance": True,
         "conductor_group": "rack2"},
    ]))
    bm = IronicDriver(config(ironic__simulation_file=str(path), ironic__conductor_group=""))
    assert bm.nodes() == [GOLD]
    assert dict(bm.provider_tree(GOLD)[0].inventories) == {
        "CUSTOM_BAREMETAL_GOLD": Inventory.of(1, max_unit=1)}


@pytest.mark.parametrize(("content", "message"), [
    ("[{", "Expecting"),
    ("{}", "expected a JSON list"),
    ('[{"uuid": "not-a-uuid"}]', "badly formed"),
    (json.dumps([{"uuid": GOLD, "traits": ["HW_CPU_X86_AVX9"]}]), "HW_CPU_X86_AVX9"),
    (json.dumps([{"uuid": GOLD, "provision_state": "ready"}]), "provision_state 'ready'"),
    (json.dumps([{"uuid": GOLD, "colour": "blue"}]), "colour"),
    (json.dumps([{"uuid": GOLD}, {"uuid": GOLD}]), "two simulated Ironic nodes"),
])
def test_bad_simulation_file_names_the_file_and_the_problem(tmp_path: Path, content: str,
                                                            message: str) -> None:
    path = tmp_path / "nodes.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as caught:
        IronicDriver(config(ironic__simulation_file=str(path)))
    assert str(path) in str(caught.value)


def test_node_records_accept_only_traits_placement_would() -> None:
    with pytest.raises(UnknownTrait):
        SimulatedNode(GOLD, traits=frozenset({"CUSTOM_lowercase"}))
    with pytest.raises(UnknownTrait):
        ironic().set_traits(GOLD, ["HW_CPU_X86_AVX9"])


def test_power_actions_set_the_nodes_power_state() -> None:
    simulator = ironic()
    bm = driver(simulator)
    server = guest(GOLD, "raw")
    bm.spawn(server)
    bm.power_off(server.uuid)
    assert simulator.get_node(GOLD).power_state == "power off"
    assert server.uuid in bm.guests()  # still deployed
    bm.reboot(server.uuid, hard=True)  # a node that is off comes back on
    node = simulator.get_node(GOLD)
    assert (node.power_state, node.boots) == ("power on", 2)
    with pytest.raises(GuestNotFound):
        bm.reboot("00000000-0000-4000-8000-00000000dead", hard=False)
    simulator.make_unreachable("the API is down")
    with pytest.raises(HypervisorUnavailable, match="the API is down"):
        bm.power_on(server.uuid)
