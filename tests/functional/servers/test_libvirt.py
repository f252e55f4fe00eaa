"""Servers on a real libvirt host (QEMU TCG, libvirt's embedded driver) next to fake hosts.

The libvirt host's NIC models are what this QEMU 7.2 / libvirt 9.0 can really run:
e1000 yes, igb and spapr-vlan no (this QEMU has neither device); its CPU feature
traits are what its TCG guests' CPU has (SSE2 yes, AVX-512 no).
With the image metadata prefilter on, placement sends an e1000 image to the libvirt
host and an igb image nowhere; with it off, the igb build tries the libvirt host
first, fails there late, and reschedules to a fake host that has igb. Every test
deletes its servers, so no QEMU process outlives it. Without libvirt and QEMU these
tests fail (``libvirt_embed_uri`` uses ``require_libvirt``), they do not skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from moorage.scheduler.filter_records import FilterRecord
from moorage.virt.libvirt import host as libvirt_host
from tests.functional.servers.conftest import Cloud, HostSpec, fake_host

E1000 = "COMPUTE_NET_VIF_MODEL_E1000"
IGB = "COMPUTE_NET_VIF_MODEL_IGB"
VIRTIO = "COMPUTE_NET_VIF_MODEL_VIRTIO"
KVM = "kvm1"


def libvirt_spec(uri: str, instances: Path) -> HostSpec:
    """The libvirt host: TCG guests in this process's embedded QEMU driver."""
    return HostSpec(KVM, "libvirt", {
        ("libvirt", "virt_type"): "qemu",
        ("libvirt", "connection_uri"): uri,
        ("DEFAULT", "instances_path"): str(instances),
    })


def small_fake(name: str, traits: list[str]) -> HostSpec:
    """A fake host smaller than the libvirt host in memory, VCPU and disk, so the
    weighers try the libvirt host first."""
    spec = fake_host(name, traits=traits, vcpus=1, memory_mb=2048)
    return HostSpec(spec.name, spec.driver, {**spec.options, ("fake_driver", "disk_gb"): 5})


def domain_xml(uri: str, uuid: str) -> etree._Element:
    domain = libvirt_host.connect(uri).lookupByUUIDString(uuid)
    assert domain.isActive() == 1
    return etree.fromstring(domain.XMLDesc(0).encode())


def domain_exists(uri: str, uuid: str) -> bool:
    import libvirt  # present: libvirt_embed_uri has required it

    try:
        libvirt_host.connect(uri).lookupByUUIDString(uuid)
    except libvirt.libvirtError as exc:
        if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
            return False
        raise
    return True


@pytest.fixture
def started(make_cloud: Any, libvirt_embed_uri: str, tmp_path: Path) -> Iterator[Any]:
    """``started(fakes, scheduler=...)`` starts a cloud with the libvirt host and
    ``fakes``; at the end it deletes every server and checks no guest is left."""
    clouds: list[Cloud] = []

    def start(fakes: list[HostSpec], **options: Any) -> Cloud:
        instances = tmp_path / f"instances{len(clouds)}"
        instances.mkdir()
        cloud: Cloud = make_cloud([libvirt_spec(libvirt_embed_uri, instances), *fakes],
                                  **options)
        clouds.append(cloud)
        return cloud

    yield start
    for cloud in clouds:
        servers = [s["id"] for s in cloud.ok("GET", "/servers/detail?all_tenants=1")["servers"]]
        for uuid in servers:
            cloud.call("DELETE", f"/servers/{uuid}")
        for uuid in servers:
            assert cloud.wait(uuid)["status"] == "DELETED"
        left = set(servers) & set(cloud.guests(KVM))
        assert not left, f"libvirt guests left behind: {left}"


def test_e1000_image_runs_on_the_libvirt_host_with_an_e1000_nic(
        started: Any, libvirt_embed_uri: str) -> None:
    # The fake host is larger but cannot do e1000: only the prefilter keeps it out.
    cloud: Cloud = started([fake_host("big", traits=[VIRTIO], unsupported=[E1000],
                                      memory_mb=262144)],
                           scheduler={"image_metadata_prefilter": True})
    reported = cloud.placement.request(
        "GET", f"/resource_providers?name={KVM}")["resource_providers"]
    traits = cloud.placement.request(
        "GET", f"/resource_providers/{reported[0]['uuid']}/traits")["traits"]
    assert E1000 in traits and IGB not in traits

    flavor = cloud.flavor("tiny", vcpus=1, ram=128, disk=1)
    image = cloud.image("e1000", "qcow2", {"hw_vif_model": "e1000"})
    server = cloud.boot_and_wait(flavor, image)
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == KVM
    assert cloud.spawn_attempts(server) == [KVM]
    assert server["id"] in cloud.guests(KVM)
    live = domain_xml(libvirt_embed_uri, server["id"])
    assert live.xpath("/domain/devices/interface/model/@type") == ["e1000"]
    assert live.xpath("/domain/@type") == ["qemu"]

    assert cloud.call("DELETE", f"/servers/{server['id']}").status_code == 204
    assert cloud.wait(server["id"])["status"] == "DELETED"
    assert server["id"] not in cloud.guests(KVM)
    assert not domain_exists(libvirt_embed_uri, server["id"])  # undefined, not just stopped
    assert cloud.allocations(server["id"]) == {}


def test_igb_with_the_prefilter_on_and_only_the_libvirt_host_is_no_valid_host(
        started: Any) -> None:
    cloud: Cloud = started([], scheduler={"image_metadata_prefilter": True})
    flavor = cloud.flavor("tiny", vcpus=1, ram=128, disk=1)
    server = cloud.boot_and_wait(flavor, cloud.image("igb", "qcow2", {"hw_vif_model": "igb"}))
    assert server["status"] == "ERROR"
    assert server["fault"]["message"].startswith("No valid host was found.")
    assert IGB in server["fault"]["message"]
    assert cloud.spawn_attempts(server) == []  # placement said no: QEMU never asked
    assert server["id"] not in cloud.guests(KVM)
    assert cloud.allocations(server["id"]) == {}
    record = {f["name"]: FilterRecord.from_json(f)
              for f in server["moorage:scheduling"]["filters"]}
    assert [(a.names, a.origin.setting) for a in record["transform_image_metadata"].added] == [
        ((IGB,), "hw_vif_model=igb")]


def test_igb_with_the_prefilter_off_fails_late_on_libvirt_and_reschedules(
        started: Any) -> None:
    cloud: Cloud = started([small_fake("igb", [VIRTIO, IGB])],
                           scheduler={"image_metadata_prefilter": False, "max_attempts": 3})
    flavor = cloud.flavor("tiny", vcpus=1, ram=128, disk=1)
    server = cloud.boot_and_wait(flavor, cloud.image("igb", "qcow2", {"hw_vif_model": "igb"}))
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "igb"
    assert cloud.spawn_attempts(server) == [KVM, "igb"]
    failed = server["moorage:scheduling"]["attempts"][0]
    assert failed["result"] == "failed"
    # The driver's late check, before libvirt is asked to define anything.
    assert (failed["kind"], failed["feature"]) == ("UnsupportedHardware", IGB)
    assert "qemu-system-x86_64 7.2.22 has no igb device" in failed["message"], failed
    # The libvirt host's claim went with its failure; nothing runs there.
    held = cloud.allocations(server["id"])
    assert [cloud.host_of_provider(rp) for rp in held] == ["igb"]
    assert server["id"] not in cloud.guests(KVM)
    assert server["id"] in cloud.guests("igb")


def test_igb_with_the_prefilter_off_and_one_attempt_shows_the_libvirt_failure(
        started: Any) -> None:
    cloud: Cloud = started([small_fake("igb", [VIRTIO, IGB])],
                           scheduler={"image_metadata_prefilter": False, "max_attempts": 1})
    flavor = cloud.flavor("tiny", vcpus=1, ram=128, disk=1)
    server = cloud.boot_and_wait(flavor, cloud.image("igb", "qcow2", {"hw_vif_model": "igb"}))
    assert server["status"] == "ERROR"
    assert cloud.spawn_attempts(server) == [KVM]
    assert server["fault"]["message"].startswith(
        f"Build of instance {server['id']} failed: {KVM}: UnsupportedHardware: ")
    assert server["fault"]["details"]["kind"] == "UnsupportedHardware"
    assert "Exceeded maximum number of retries" not in server["fault"]["message"]
    assert cloud.allocations(server["id"]) == {}
    assert server["id"] not in cloud.guests(KVM)


def test_a_cpu_feature_tcg_has_lands_on_the_libvirt_host_and_is_in_its_guest(
        started: Any, libvirt_embed_uri: str) -> None:
    """The libvirt host reports the CPU features its TCG guests can have: a flavor that
    requires SSE2 lands there (no fake host has it), and its guest's CPU requires it."""
    cloud: Cloud = started([small_fake("plain", [VIRTIO])])
    flavor = cloud.flavor("sse2", vcpus=1, ram=128, disk=1,
                          extra_specs={"trait:HW_CPU_X86_SSE2": "required"})
    server = cloud.boot_and_wait(flavor, cloud.image("plain", "qcow2"))
    assert server["status"] == "ACTIVE", server.get("fault")
    assert cloud.spawn_attempts(server) == [KVM]
    live = domain_xml(libvirt_embed_uri, server["id"])
    assert live.xpath("/domain/cpu/feature[@name='sse2']/@policy") == ["require"]


def test_a_cpu_feature_tcg_lacks_is_refused_by_placement(started: Any) -> None:
    cloud: Cloud = started([])
    flavor = cloud.flavor("avx512", vcpus=1, ram=128, disk=1,
                          extra_specs={"trait:HW_CPU_X86_AVX512F": "required"})
    server = cloud.boot_and_wait(flavor, cloud.image("plain", "qcow2"))
    assert server["status"] == "ERROR"
    assert server["fault"]["message"].startswith("No valid host was found.")
    assert "HW_CPU_X86_AVX512F" in server["fault"]["message"]
    assert cloud.spawn_attempts(server) == []  # placement said no: QEMU never asked


def test_spapr_vlan_with_the_prefilter_on_is_no_valid_host_at_scheduling(
        started: Any) -> None:
    """The x86 host once claimed spapr-vlan from a static table and failed the build
    late; its QEMU has no such device, so it now says so and placement refuses."""
    cloud: Cloud = started([], scheduler={"image_metadata_prefilter": True})
    flavor = cloud.flavor("tiny", vcpus=1, ram=128, disk=1)
    image = cloud.image("power-nic", "qcow2", {"hw_vif_model": "spapr-vlan"})
    server = cloud.boot_and_wait(flavor, image)
    assert server["status"] == "ERROR"
    assert server["fault"]["message"].startswith("No valid host was found.")
    assert "COMPUTE_NET_VIF_MODEL_SPAPR_VLAN" in server["fault"]["message"]
    assert cloud.spawn_attempts(server) == []
