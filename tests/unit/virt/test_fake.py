"""The fake driver: its host from code or from [fake_driver], its reports, its late checks."""

from __future__ import annotations

from dataclasses import replace

import os_traits
import pytest

from moorage.model.flavor import Flavor
from moorage.model.inventory import Inventory
from moorage.model.vocabulary import UnknownTrait
from moorage.virt.capabilities import UnknownCapability
from moorage.virt.driver import Guest, GuestNotFound, UnsupportedHardware
from moorage.virt.fake import UPSTREAM_CAPABILITIES, FakeChild, FakeDriver, FakeHost, RunRule
from moorage.virt.loader import load_driver
from moorage.virt.report import Source
from tests.unit.virt.builders import by_trait, config, guest

RAW, VHD, QCOW2 = (os_traits.COMPUTE_IMAGE_TYPE_RAW, os_traits.COMPUTE_IMAGE_TYPE_VHD,
                   os_traits.COMPUTE_IMAGE_TYPE_QCOW2)
VIRTIO_NIC = os_traits.COMPUTE_NET_VIF_MODEL_VIRTIO
E1000E_NIC = os_traits.COMPUTE_NET_VIF_MODEL_E1000E

# A host with two NUMA cells, an SR-IOV PF under the second, and a rule.
NUMA_HOST = FakeHost(
    nodes=("numa-host",),
    vcpus=16, memory_mb=32768, disk_gb=100,
    reserved_vcpus=2, reserved_memory_mb=1024, reserved_disk_gb=10,
    traits={VIRTIO_NIC: True, E1000E_NIC: False, "CUSTOM_FAST_DISK": True},
    children=(
        FakeChild("numa0", {"PCPU": Inventory.of(8)}, {os_traits.HW_NUMA_ROOT: True}),
        FakeChild("numa1", {"PCPU": Inventory.of(8)}, {os_traits.HW_NUMA_ROOT: True}),
        FakeChild("numa1_pf0", {"SRIOV_NET_VF": Inventory.of(16)},
                  {os_traits.HW_NIC_SRIOV: True, os_traits.HW_NIC_OFFLOAD_TSO: False},
                  parent="numa1"),
    ),
    rules=(RunRule("flavor.vcpus",
                   lambda g: "at most 8 vCPUs" if g.flavor.vcpus > 8 else None),),
)


def test_loader_builds_the_fake_driver_from_config_under_both_spellings() -> None:
    for spelling in ("fake", "fake.FakeDriver"):
        driver = load_driver(config(DEFAULT__compute_driver=spelling))
        assert isinstance(driver, FakeDriver)
        assert driver.nodes() == ["fake-host"]


@pytest.mark.parametrize(("options", "nodes"), [
    ({}, ["fake-host"]),
    ({"fake_driver__nodes": ["n1", "n2"]}, ["n1", "n2"]),
])
def test_nodes_from_config(options: dict[str, object], nodes: list[str]) -> None:
    assert FakeDriver(config(**options)).nodes() == nodes


@pytest.mark.parametrize(("options", "expected"), [
    # Upstream's fake sizes; reserved and ratios from [DEFAULT] (512 MiB kept by default).
    ({}, {"VCPU": Inventory.of(1000, allocation_ratio=4.0),
          "MEMORY_MB": Inventory.of(800000, reserved=512),
          "DISK_GB": Inventory.of(600000)}),
    ({"fake_driver__vcpus": 8, "fake_driver__memory_mb": 4096, "fake_driver__disk_gb": 40,
      "DEFAULT__reserved_host_cpus": 1, "DEFAULT__reserved_host_memory_mb": 0,
      "DEFAULT__reserved_host_disk_mb": 1500, "DEFAULT__cpu_allocation_ratio": 16.0,
      "DEFAULT__ram_allocation_ratio": 1.5, "DEFAULT__disk_allocation_ratio": 2.0},
     {"VCPU": Inventory.of(8, reserved=1, allocation_ratio=16.0),
      "MEMORY_MB": Inventory.of(4096, allocation_ratio=1.5),
      # 1500 MB reserved is 2 GB: rounded up, as upstream
      "DISK_GB": Inventory.of(40, reserved=2, allocation_ratio=2.0)}),
])
def test_inventories_from_config(options: dict[str, object],
                                 expected: dict[str, Inventory]) -> None:
    tree = FakeDriver(config(**options)).provider_tree("fake-host")
    assert [(p.name, p.parent) for p in tree] == [("fake-host", None)]
    assert dict(tree[0].inventories) == expected


def test_provider_tree_of_a_spec_with_nested_providers() -> None:
    tree = FakeDriver(config(), NUMA_HOST).provider_tree("numa-host")
    assert [(p.name, p.parent) for p in tree] == [
        ("numa-host", None),
        ("numa-host_numa0", "numa-host"),
        ("numa-host_numa1", "numa-host"),
        ("numa-host_numa1_pf0", "numa-host_numa1"),
    ]
    assert dict(tree[0].inventories) == {
        "VCPU": Inventory.of(16, reserved=2, allocation_ratio=4.0),
        "MEMORY_MB": Inventory.of(32768, reserved=1024),
        "DISK_GB": Inventory.of(100, reserved=10),
    }
    assert tree[0].reports == ()  # the node's own come from trait_reports
    assert dict(tree[3].inventories) == {"SRIOV_NET_VF": Inventory.of(16)}
    assert {(r.trait, r.supported, r.source) for r in tree[3].reports} == {
        (os_traits.HW_NIC_SRIOV, True, Source.DRIVER_TABLE),
        (os_traits.HW_NIC_OFFLOAD_TSO, False, Source.DRIVER_TABLE),
    }


def test_a_class_the_host_has_none_of_is_not_offered() -> None:
    host = FakeHost(nodes=("pcpu-only",), vcpus=0, children=(
        FakeChild("numa0", {"PCPU": Inventory.of(4)}),))
    tree = FakeDriver(config(), host).provider_tree("pcpu-only")
    assert set(tree[0].inventories) == {"MEMORY_MB", "DISK_GB"}


def test_default_capabilities_are_upstreams_fake_table() -> None:
    reports = by_trait(FakeDriver(config()).trait_reports("fake-host"))
    # raw on, vhd off, every other image type not mentioned (left alone)
    assert (reports[RAW].supported, reports[VHD].supported) == (True, False)
    assert {t for t in reports if t.startswith("COMPUTE_IMAGE_TYPE_")} == {RAW, VHD}
    assert reports[os_traits.COMPUTE_VOLUME_MULTI_ATTACH].supported
    assert not reports[os_traits.COMPUTE_SAME_HOST_COLD_MIGRATE].supported
    assert reports[RAW].source is Source.DRIVER_TABLE
    assert reports[RAW].detail == "supports_image_type_raw"
    # one report per capability key that stands for a trait, and the host's architecture
    assert reports[os_traits.HW_ARCH_X86_64].supported
    assert len(reports) == len(UPSTREAM_CAPABILITIES) - 3 + 1  # imagecache, evacuate, pcpus


@pytest.mark.parametrize(("excluded", "expected"), [
    ([], {RAW: (True, Source.DRIVER_TABLE), VHD: (False, Source.DRIVER_TABLE)}),
    (["raw"], {RAW: (False, Source.CONFIGURATION), VHD: (False, Source.DRIVER_TABLE)}),
    (["vhd", "raw"], {RAW: (False, Source.CONFIGURATION), VHD: (False, Source.CONFIGURATION)}),
    # a type the driver does not mention stays unmentioned: upstream excludes only keys it has
    (["qcow2"], {RAW: (True, Source.DRIVER_TABLE), VHD: (False, Source.DRIVER_TABLE)}),
])
def test_image_type_exclude_list(excluded: list[str],
                                 expected: dict[str, tuple[bool, Source]]) -> None:
    reports = FakeDriver(config(compute__image_type_exclude_list=excluded)).trait_reports(
        "fake-host")
    image_types = {r.trait: (r.supported, r.source) for r in reports
                   if r.trait.startswith("COMPUTE_IMAGE_TYPE_")}
    assert image_types == expected


def test_supported_image_types_from_config_mention_every_type() -> None:
    reports = by_trait(FakeDriver(config(
        fake_driver__supported_image_types=["qcow2", "iso"])).trait_reports("fake-host"))
    image_types = {t: r.supported for t, r in reports.items()
                   if t.startswith("COMPUTE_IMAGE_TYPE_")}
    assert len(image_types) == 11
    assert {t for t, on in image_types.items() if on} == {
        QCOW2, os_traits.COMPUTE_IMAGE_TYPE_ISO}


def test_traits_from_config_are_reported_with_their_source() -> None:
    driver = FakeDriver(config(fake_driver__traits=[VIRTIO_NIC, "CUSTOM_GOLD"],
                               fake_driver__unsupported_traits=[E1000E_NIC]))
    reports = by_trait(driver.trait_reports("fake-host"))
    assert {t: (r.supported, r.source) for t, r in reports.items()
            if t in (VIRTIO_NIC, "CUSTOM_GOLD", E1000E_NIC)} == {
        VIRTIO_NIC: (True, Source.CONFIGURATION),
        "CUSTOM_GOLD": (True, Source.CONFIGURATION),
        E1000E_NIC: (False, Source.CONFIGURATION),
    }


@pytest.mark.parametrize(("spec", "error"), [
    (lambda: FakeHost(nodes=("h",), traits={"COMPUTE_NET_VIF_MODEL_NE2000": True}),
     UnknownTrait),
    (lambda: FakeHost(nodes=("h",), traits={"CUSTOM_lower": True}), UnknownTrait),
    (lambda: FakeHost(nodes=("h",), children=(
        FakeChild("c", {}, {"HW_NIC_SRIOV_TYPO": True}),)), UnknownTrait),
    (lambda: FakeHost(nodes=("h",), capabilities={"supports_teleport": True}),
     UnknownCapability),
    (lambda: FakeHost(nodes=("h",), children=(FakeChild("pf", {}, parent="numa0"),)),
     ValueError),
    (lambda: FakeHost(nodes=("h",), children=(FakeChild("c", {}), FakeChild("c", {}))),
     ValueError),
    (lambda: FakeHost(nodes=("h",), vcpus=4, reserved_vcpus=5), ValueError),
    (lambda: FakeHost(nodes=()), ValueError),
    (lambda: FakeHost(nodes=("h", "h")), ValueError),
    (lambda: FakeHost(nodes=("h",), architecture="arm64"), ValueError),
    # a host has one architecture: its traits may not say another, nor deny its own
    (lambda: FakeHost(nodes=("h",), architecture="aarch64",
                      traits={os_traits.HW_ARCH_X86_64: True}), ValueError),
    (lambda: FakeHost(nodes=("h",), traits={os_traits.HW_ARCH_X86_64: False}), ValueError),
])
def test_a_bad_spec_is_refused_when_built(spec: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        spec()  # type: ignore[operator]


def test_an_unknown_trait_in_config_is_refused_at_start() -> None:
    with pytest.raises(UnknownTrait, match="COMPUTE_GRAPHICS_MODEL_HERCULES"):
        FakeDriver(config(fake_driver__traits=["COMPUTE_GRAPHICS_MODEL_HERCULES"]))


@pytest.mark.parametrize(("make_guest", "refused"), [
    (lambda: guest("numa-host"), None),
    # image types: raw only (upstream's table: vhd off, qcow2 unmentioned)
    (lambda: guest("numa-host", "qcow2"), "disk_format=qcow2"),
    (lambda: guest("numa-host", "vhd"), "disk_format=vhd"),
    # a required trait the host reports unsupported, from the flavor (any group) or image
    (lambda: guest("numa-host", extra_specs={f"trait:{E1000E_NIC}": "required"}), E1000E_NIC),
    (lambda: guest("numa-host", extra_specs={f"trait1:{E1000E_NIC}": "required"}), E1000E_NIC),
    (lambda: guest("numa-host", properties={f"trait:{E1000E_NIC}": "required"}), E1000E_NIC),
    (lambda: guest("numa-host", extra_specs={f"trait:{VHD}": "required"}), VHD),
    # supported or unmentioned required traits pass; forbidden ones are the scheduler's
    (lambda: guest("numa-host", extra_specs={f"trait:{VIRTIO_NIC}": "required",
                                             "trait:CUSTOM_OPERATOR_SET": "required",
                                             f"trait:{E1000E_NIC}": "forbidden"}), None),
    # the host's own rule
    (lambda: replace(guest("numa-host"), flavor=Flavor("big", vcpus=12, memory_mb=512)),
     "flavor.vcpus"),
    # the architecture, checked first: an x86_64 host (amd64 is upstream's alias)
    (lambda: guest("numa-host", properties={"hw_architecture": "amd64"}), None),
    (lambda: guest("numa-host", "qcow2", properties={"hw_architecture": "aarch64"}),
     "hw_architecture=aarch64"),
])
def test_spawn_late_checks(make_guest: object, refused: str | None) -> None:
    driver = FakeDriver(config(), NUMA_HOST)
    server: Guest = make_guest()  # type: ignore[operator]
    if refused is None:
        driver.spawn(server)
        assert driver.guests() == [server.uuid]
        assert driver.guest(server.uuid) == server
        return
    with pytest.raises(UnsupportedHardware) as caught:
        driver.spawn(server)
    assert caught.value.feature == refused
    assert refused in str(caught.value)
    assert driver.guests() == []


def test_excluding_an_image_type_refuses_it_at_spawn_too() -> None:
    driver = FakeDriver(config(compute__image_type_exclude_list=["raw"]))
    with pytest.raises(UnsupportedHardware, match="image_type_exclude_list"):
        driver.spawn(guest("fake-host", "raw"))


def test_spawn_destroy_guests() -> None:
    driver = FakeDriver(config(fake_driver__nodes=["n1", "n2"]))
    first, second = guest("n1"), guest("n2")
    driver.spawn(first)
    driver.spawn(second)
    assert driver.guests() == [first.uuid, second.uuid]
    with pytest.raises(ValueError, match="already runs"):
        driver.spawn(first)
    driver.destroy(first.uuid)
    driver.destroy(first.uuid)  # nothing if it is not there
    assert driver.guests() == [second.uuid]
    with pytest.raises(KeyError):
        driver.guest(first.uuid)


def test_unknown_node_is_an_error_naming_the_nodes() -> None:
    driver = FakeDriver(config())
    for call in (lambda: driver.provider_tree("elsewhere"),
                 lambda: driver.trait_reports("elsewhere"),
                 lambda: driver.spawn(guest("elsewhere"))):
        with pytest.raises(LookupError, match="fake-host"):
            call()


@pytest.mark.parametrize(("architecture", "trait"), [
    (None, os_traits.HW_ARCH_X86_64),  # upstream's fake driver's
    ("aarch64", os_traits.HW_ARCH_AARCH64),
    ("s390x", os_traits.HW_ARCH_S390X),
    ("armv7l", None),  # os-traits has HW_ARCH_ARMV7, not ARMV7L: nothing to report
])
def test_architecture_from_config(architecture: str | None, trait: str | None) -> None:
    options = {} if architecture is None else {"fake_driver__architecture": architecture}
    driver = FakeDriver(config(**options))
    arch = architecture or "x86_64"
    assert driver.supported_instances() == [(arch, "fake", "hvm")]
    reports = by_trait(driver.trait_reports("fake-host"))
    arch_traits = {t: (r.supported, r.source) for t, r in reports.items()
                   if t.startswith("HW_ARCH_")}
    assert arch_traits == ({} if trait is None else {trait: (True, Source.CONFIGURATION)})
    if trait is not None:
        assert reports[trait].detail == f"[fake_driver] architecture {arch}"


def test_an_unknown_architecture_in_config_is_refused() -> None:
    with pytest.raises(ValueError, match="arm64"):
        FakeDriver(config(fake_driver__architecture="arm64"))


def test_operator_traits_stay_beside_the_architecture() -> None:
    # The operator's own HW_ARCH_AARCH64 is reported once; other traits are kept.
    driver = FakeDriver(config(fake_driver__architecture="aarch64",
                               fake_driver__traits=[os_traits.HW_ARCH_AARCH64, VIRTIO_NIC]))
    reports = by_trait(driver.trait_reports("fake-host"))
    assert {t for t, r in reports.items() if r.source is Source.CONFIGURATION} == {
        os_traits.HW_ARCH_AARCH64, VIRTIO_NIC}
    assert os_traits.HW_ARCH_X86_64 not in reports  # left alone, never removed


@pytest.mark.parametrize(("properties", "refused"), [
    ({"hw_architecture": "aarch64"}, None),
    ({}, None),  # an image that names no architecture runs anywhere, as upstream
    ({"hw_architecture": "x86_64"}, "hw_architecture=x86_64"),
    ({"hw_architecture": "s390x", "hw_vif_model": "virtio"}, "hw_architecture=s390x"),
])
def test_spawn_refuses_a_guest_of_another_architecture(properties: dict[str, object],
                                                       refused: str | None) -> None:
    driver = FakeDriver(config(fake_driver__architecture="aarch64"))
    server = guest("fake-host", properties=properties)
    if refused is None:
        driver.spawn(server)
        assert driver.guests() == [server.uuid]
        return
    with pytest.raises(UnsupportedHardware) as caught:
        driver.spawn(server)
    assert caught.value.feature == refused
    assert "fake-host runs aarch64 guests only ([fake_driver])" in str(caught.value)
    assert driver.guests() == []


def test_a_fake_guest_keeps_its_power_and_writes_its_console() -> None:
    driver = FakeDriver(config(), FakeHost(nodes=("n1",)))
    server = guest("n1")
    driver.spawn(server)
    driver.power_off(server.uuid)
    driver.power_off(server.uuid)  # off already: nothing
    assert not driver.running(server.uuid) and driver.guests() == [server.uuid]
    driver.reboot(server.uuid, hard=True)  # an off guest is started
    assert driver.running(server.uuid)
    assert driver.console_output(server.uuid).splitlines()[1:] == [
        "fake guest shut down", "fake guest rebooted (hard)"]
    driver.break_power(server.uuid, "stuck")
    with pytest.raises(RuntimeError, match="stuck"):
        driver.power_off(server.uuid)
    assert driver.running(server.uuid)
    driver.destroy(server.uuid)
    with pytest.raises(GuestNotFound):
        driver.power_on(server.uuid)
    with pytest.raises(GuestNotFound):
        driver.console_output(server.uuid)
