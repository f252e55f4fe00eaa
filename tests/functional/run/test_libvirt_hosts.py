"""The libvirt hosts of a run, on real QEMU (libvirt's embedded driver) and recorded.

Several real hosts share this test process's embedded driver, as a run's hosts
share one: each must still report the traits of its own machine type, offer its
group's capacity, and see only its own guests. A recorded host must report what
a real one of the same machine type reports. Without libvirt and QEMU these
tests fail (``libvirt_embed_uri`` requires them), they do not skip.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import os_resource_classes as orc
import pytest

from moorage.conf import load_config
from moorage.embedded import HostPlan
from moorage.run.description import Capacity, HostGroup
from moorage.run.libvirt_hosts import libvirt_available, libvirt_plan
from moorage.virt.driver import ComputeDriver, Guest, UnsupportedHardware
from moorage.virt.libvirt import host as libvirt_host
from moorage.virt.libvirt.driver import LibvirtDriver
from moorage.virt.libvirt.recorded import RecordedLibvirtDriver
from moorage.virt.loader import load_driver
from tests.unit.virt import builders

IDE = "COMPUTE_STORAGE_BUS_IDE"
QCOW2 = "COMPUTE_IMAGE_TYPE_QCOW2"

MakeHost = Callable[..., ComputeDriver]


def group(machine: str, **fields: object) -> HostGroup:
    base = HostGroup(name=f"kvm-{machine}", count=2, driver="libvirt", virt_type="kvm",
                     machine_type=machine, image_backend="qcow2",
                     capacity=Capacity(vcpus=16, memory_mb=32768, disk_gb=400))
    return replace(base, **fields)  # type: ignore[arg-type]


@pytest.fixture
def make_host(libvirt_embed_uri: str, tmp_path: Path) -> MakeHost:
    """``make_host(group, name, real)``: the driver a run's agent would load."""

    def make(host_group: HostGroup, name: str, real: bool) -> ComputeDriver:
        plan = libvirt_plan(host_group, name, real, uri=libvirt_embed_uri, workdir=tmp_path)
        return driver_of(plan)

    return make


def driver_of(plan: HostPlan) -> ComputeDriver:
    conf = load_config(overrides=[("DEFAULT", "host", plan.name),
                                  ("DEFAULT", "compute_driver", plan.driver),
                                  *plan.overrides()])
    driver = load_driver(conf)
    driver.init_host()
    return driver


def supported(driver: ComputeDriver, node: str) -> dict[str, bool]:
    return {r.trait: r.supported for r in driver.trait_reports(node)}


def small(guest: Guest) -> Guest:
    return replace(guest, flavor=replace(guest.flavor, vcpus=1, memory_mb=128))


def test_libvirt_is_available_here(libvirt_embed_uri: str) -> None:
    available, why = libvirt_available(libvirt_embed_uri)
    assert available, why
    assert libvirt_embed_uri in why


def test_each_machine_type_reports_its_own_traits(make_host: MakeHost) -> None:
    q35 = make_host(group("q35"), "kvm-q35-1", True)
    pc = make_host(group("pc"), "kvm-pc-1", True)
    assert isinstance(q35, LibvirtDriver) and q35.name == "libvirt"
    assert supported(q35, "kvm-q35-1")[IDE] is False
    assert supported(pc, "kvm-pc-1")[IDE] is True


def test_the_group_capacity_replaces_the_machines(make_host: MakeHost) -> None:
    host = make_host(group("q35"), "kvm-q35-1", True)
    node, = host.provider_tree("kvm-q35-1")
    sizes = {rc: inv.total for rc, inv in node.inventories.items()}
    assert sizes == {orc.VCPU: 16, orc.MEMORY_MB: 32768, orc.DISK_GB: 400}


@pytest.mark.parametrize("machine", ["q35", "pc"])
def test_a_recorded_host_reports_what_a_real_one_does(make_host: MakeHost,
                                                      machine: str) -> None:
    real = make_host(group(machine), f"real-{machine}", True)
    recorded = make_host(group(machine), f"recorded-{machine}", False)
    assert isinstance(recorded, RecordedLibvirtDriver) and recorded.name == "libvirt-recorded"
    assert supported(recorded, f"recorded-{machine}") == supported(real, f"real-{machine}")
    assert recorded.supported_instances() == real.supported_instances()
    assert recorded.hypervisor_version() == real.hypervisor_version()


def test_kvm_runs_as_qemu_and_the_plan_says_so(libvirt_embed_uri: str) -> None:
    plan = libvirt_plan(group("q35"), "kvm-q35-1", True, uri=libvirt_embed_uri)
    assert plan.options[("libvirt", "virt_type")] == "qemu"
    assert "virt_type kvm runs as qemu (TCG)" in plan.description
    assert "real QEMU" in plan.description
    recorded = libvirt_plan(group("q35"), "kvm-q35-1", False)
    assert recorded.driver == "libvirt-recorded" and "SIMULATED" in recorded.description


def test_an_rbd_host_takes_raw_images_only(make_host: MakeHost) -> None:
    for real in (True, False):
        host = make_host(group("q35", image_backend="rbd"), "ceph-1", real)
        assert supported(host, "ceph-1")[QCOW2] is False
        assert supported(host, "ceph-1")["COMPUTE_IMAGE_TYPE_RAW"] is True


def test_hosts_sharing_a_libvirt_see_only_their_own_guests(make_host: MakeHost) -> None:
    one = make_host(group("q35"), "kvm-q35-1", True)
    two = make_host(group("q35"), "kvm-q35-2", True)
    guest = small(builders.guest("kvm-q35-1", "qcow2"))
    one.spawn(guest)
    try:
        assert guest.uuid in one.guests()
        assert guest.uuid not in two.guests()
        two.destroy(guest.uuid)  # not its guest: nothing happens
        assert guest.uuid in one.guests()
        # [libvirt] stop_after_spawn: QEMU started the guest, then stops in the background
        domain = libvirt_host.connect(one.uri).lookupByUUIDString(guest.uuid)
        deadline = time.monotonic() + 30
        while domain.isActive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not domain.isActive()
    finally:
        one.destroy(guest.uuid)
    assert guest.uuid not in one.guests()


def test_a_real_q35_host_refuses_ide_late(make_host: MakeHost) -> None:
    host = make_host(group("q35"), "kvm-q35-1", True)
    with pytest.raises(UnsupportedHardware, match="ide"):
        host.spawn(small(builders.guest("kvm-q35-1", "qcow2", {"hw_disk_bus": "ide"})))
    assert host.guests() == []


def test_a_recorded_host_checks_and_records_guests(make_host: MakeHost) -> None:
    q35 = make_host(group("q35"), "rec-q35-1", False)
    pc = make_host(group("pc"), "rec-pc-1", False)
    ide = {"hw_disk_bus": "ide"}
    with pytest.raises(UnsupportedHardware, match="ide"):
        q35.spawn(builders.guest("rec-q35-1", "qcow2", ide))
    guest = builders.guest("rec-pc-1", "qcow2", ide)
    pc.spawn(guest)
    assert isinstance(pc, RecordedLibvirtDriver)
    assert pc.guest_config(guest.uuid).root.bus.value == "ide"
    assert pc.guests() == [guest.uuid] and q35.guests() == []
    pc.destroy(guest.uuid)
    assert pc.guests() == []
