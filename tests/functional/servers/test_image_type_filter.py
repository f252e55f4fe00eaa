"""disk_format to COMPUTE_IMAGE_TYPE_*, with [scheduler]
query_placement_for_image_type_support on and off.

The cloud: a simulated VMware cluster (vmdk images only), a large Ceph-backed host
that takes only raw images (a fake host standing in for libvirt with
images_type=rbd), and a KVM-like fake host taking raw and qcow2.
"""

from __future__ import annotations

from typing import Any

import pytest

from moorage.scheduler.filter_records import Constraint, FilterRecord, Origin, OriginKind
from tests.functional.servers.conftest import HostSpec, fake_host


def _hosts() -> list[Any]:
    return [
        HostSpec("vcenter", "vmware"),
        fake_host("ceph", image_types=["raw"], memory_mb=262144, vcpus=64),
        fake_host("kvm", image_types=["raw", "qcow2"], memory_mb=16384),
    ]


@pytest.fixture
def filtered(make_cloud: Any) -> Any:
    return make_cloud(_hosts(), scheduler={"query_placement_for_image_type_support": True})


def test_vmdk_reaches_only_vmware(filtered: Any) -> None:
    flavor = filtered.flavor("small")
    server = filtered.boot_and_wait(flavor, filtered.image("win", "vmdk"))
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "vcenter"
    assert filtered.spawn_attempts(server) == ["vcenter"]
    record = {f["name"]: FilterRecord.from_json(f)
              for f in server["moorage:scheduling"]["filters"]}
    assert record["require_image_type_support"].ran is True
    assert [(a.constraint, a.names, a.origin)
            for a in record["require_image_type_support"].added] == [
        (Constraint.ROOT_REQUIRED, ("COMPUTE_IMAGE_TYPE_VMDK",),
         Origin(OriginKind.IMAGE, "disk_format", "vmdk"))]


def test_qcow2_never_lands_on_raw_only_ceph(filtered: Any) -> None:
    flavor = filtered.flavor("small")
    image = filtered.image("cirros", "qcow2")
    for _ in range(3):
        server = filtered.boot_and_wait(flavor, image)
        assert server["status"] == "ACTIVE", server.get("fault")
        assert server["OS-EXT-SRV-ATTR:host"] == "kvm"
        assert filtered.spawn_attempts(server) == ["kvm"]
    # raw goes where the weighers like best: the big Ceph host.
    raw = filtered.boot_and_wait(flavor, filtered.image("raw", "raw"))
    assert raw["OS-EXT-SRV-ATTR:host"] == "ceph"


def test_unsupported_format_everywhere_is_no_valid_host(filtered: Any) -> None:
    server = filtered.boot_and_wait(filtered.flavor("small"), filtered.image("old", "vhd"))
    assert server["status"] == "ERROR"
    assert server["fault"]["message"].startswith("No valid host was found.")
    assert "COMPUTE_IMAGE_TYPE_VHD" in server["fault"]["message"]
    assert filtered.spawn_attempts(server) == []


def test_filter_off_qcow2_tries_ceph_first_and_reschedules(make_cloud: Any) -> None:
    cloud = make_cloud(_hosts(), scheduler={"max_attempts": 3})
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("cirros", "qcow2"))
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "kvm"
    attempts = server["moorage:scheduling"]["attempts"]
    assert attempts[0]["host"] == "ceph"
    assert attempts[0]["kind"] == "UnsupportedHardware"
    assert "qcow2" in attempts[0]["feature"]
    record = {f["name"]: f for f in server["moorage:scheduling"]["filters"]}
    assert record["require_image_type_support"]["ran"] is False


def test_volume_backed_server_skips_the_image_type_filter(filtered: Any) -> None:
    """A volume-backed server's disk is a volume: the host's image formats do not matter,
    and the host gives it no root disk."""
    flavor = filtered.flavor("disky", disk=20)
    image = filtered.image("cirros", "qcow2")
    uuid = filtered.boot(flavor, image, block_device_mapping_v2=[{
        "boot_index": 0, "source_type": "image", "destination_type": "volume",
        "uuid": image, "volume_size": 10}])
    server = filtered.wait(uuid)
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["image"] == ""
    # The Ceph host takes no qcow2 image, but this server reads no image on its host.
    assert filtered.spawn_attempts(server) == ["ceph"]
    record = {f["name"]: f for f in server["moorage:scheduling"]["filters"]}
    assert record["require_image_type_support"]["ran"] is False
    held = filtered.allocations(uuid)
    assert held
    for provider in held.values():
        assert "DISK_GB" not in provider["resources"]
