"""moorage.run.capture: a real cloud's hosts, images, flavors and servers turned into the
cloud file of its twin; each rule on made-up observations (the reading of a real cloud:
tests/functional/run/test_twin.py)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from moorage.run.capture import (
    Observed,
    ObservedFlavor,
    ObservedHost,
    ObservedServer,
    capture,
    host_shape,
)

COMPUTE = {"VCPU": 8, "MEMORY_MB": 16384, "DISK_GB": 100}
SMALL = ObservedFlavor("f1", "m1.small", 1, 512, 1)


def _host(name: str, *traits: str, totals: Mapping[str, int] = COMPUTE) -> ObservedHost:
    return ObservedHost(name, dict(totals), frozenset(traits))


def _image(image_id: str, name: str, disk_format: str = "raw", status: str = "active",
           **properties: object) -> dict[str, object]:
    return {"id": image_id, "name": name, "status": status, "disk_format": disk_format,
            "container_format": "bare", "visibility": "public", **properties}


def _observed(hosts: list[ObservedHost], images: list[dict[str, object]] | None = None,
              flavors: list[ObservedFlavor] | None = None,
              servers: list[ObservedServer] | None = None) -> Observed:
    return Observed("prod", hosts, images or [_image("i1", "cirros")], flavors or [SMALL],
                    servers or [])


def test_a_host_reports_what_it_reported_and_refuses_the_rest_of_a_family() -> None:
    shape = host_shape(_host("kvm1", "HW_ARCH_AARCH64", "COMPUTE_IMAGE_TYPE_QCOW2",
                             "COMPUTE_NET_VIF_MODEL_VIRTIO", "CUSTOM_GOLD",
                             "COMPUTE_STATUS_DISABLED", "NOT_A_TRAIT"))
    assert shape.architecture == "aarch64"
    assert shape.image_types == ("qcow2",)
    assert shape.traits == ("COMPUTE_NET_VIF_MODEL_VIRTIO", "CUSTOM_GOLD")
    # It reports the NIC family, so its other NICs are refused; it reports no disk bus
    # or video model at all, so nothing is said of those (its driver does not report
    # them: the twin cannot tell).
    assert "COMPUTE_NET_VIF_MODEL_E1000" in shape.unsupported
    assert not [t for t in shape.unsupported if not t.startswith("COMPUTE_NET_VIF_MODEL_")]
    assert shape.capacity == (("vcpus", 8), ("memory_mb", 16384), ("disk_gb", 100))


def test_alike_hosts_make_one_group_and_an_ironic_node_its_own() -> None:
    hosts = [_host(f"kvm-{n}", "HW_ARCH_X86_64", "COMPUTE_IMAGE_TYPE_RAW") for n in (3, 1, 2)]
    hosts += [_host("big", "HW_ARCH_X86_64", "COMPUTE_IMAGE_TYPE_RAW",
                    totals={**COMPUTE, "VCPU": 64}),
              _host("node-1", "CUSTOM_RAID10", totals={"CUSTOM_BAREMETAL_GOLD": 1}),
              _host("disks", totals={"DISK_GB": 1000})]
    twin = capture(_observed(hosts))
    groups = {g["name"]: g for g in twin.cloud["host_groups"]}  # type: ignore[union-attr]
    assert list(groups) == ["g1-x86_64", "g2-x86_64", "g3-baremetal"]
    assert groups["g1-x86_64"]["count"] == 3
    assert groups["g1-x86_64"]["description"] == "3 real host(s) alike: kvm-1, kvm-2, kvm-3"
    assert groups["g2-x86_64"]["capacity"] == {"vcpus": 64, "memory_mb": 16384,
                                              "disk_gb": 100}
    assert groups["g3-baremetal"] == {
        "name": "g3-baremetal", "count": 1, "driver": "ironic",
        "description": "1 real host(s) alike: node-1", "resource_class": "baremetal_gold",
        "traits": ["CUSTOM_RAID10"]}
    assert any("1 providers that are not hosts" in note for note in twin.notes)


def test_a_cloud_larger_than_max_hosts_is_sampled_and_says_so() -> None:
    hosts = [_host(f"a{n:03}", "HW_ARCH_X86_64") for n in range(90)]
    hosts += [_host(f"b{n:03}", "HW_ARCH_AARCH64") for n in range(10)]
    hosts.append(_host("lonely", "HW_ARCH_S390X"))
    twin = capture(_observed(hosts), max_hosts=20)
    counts = [g["count"] for g in twin.cloud["host_groups"]]  # type: ignore[union-attr]
    assert counts == [18, 2, 1]  # 20 of 101: each group at the same share, at least one
    assert any(note.startswith("sampled: 101 hosts are more than --max-hosts 20")
               for note in twin.notes)


def test_images_nova_would_refuse_are_skipped_and_named_with_why() -> None:
    images = [_image("i1", "good image", hw_vif_model="e1000"),
              _image("i2", "typo", hw_vif_model="virtio9"),
              _image("i3", "queued", status="queued"),
              _image("i4", "odd", disk_format="qcow3"),
              _image("i5", "bad trait", **{"trait:RAID10": "required"}),
              _image("i6", "good image")]
    twin = capture(_observed([_host("h", "HW_ARCH_X86_64")], images=images))
    names = [i["name"] for i in twin.cloud["images"]]  # type: ignore[union-attr]
    assert names == ["good-image", "good-image-2"]
    why = dict(twin.skipped_images)
    assert "hw_vif_model" in why["typo (i2)"] and "virtio9" in why["typo (i2)"]
    assert why["queued (i3)"] == "status queued, not active"
    assert why["odd (i4)"].startswith("disk_format 'qcow3'")
    assert "'RAID10' is not a trait" in why["bad trait (i5)"]


def test_the_workload_is_todays_mix_scaled_to_boots() -> None:
    flavors = [SMALL, ObservedFlavor("f2", "m1.large", 4, 8192, 40,
                                     {"hw:cpu_policy": "dedicated"}),
               ObservedFlavor("f3", "broken", 1, 512, 1, {"hw:cpu_policy": "eager"})]
    images = [_image("i1", "ubuntu"), _image("i2", "win", disk_format="vmdk")]
    servers = ([ObservedServer("m1.small", "i1")] * 6 + [ObservedServer("m1.large", "i2")] * 2
               + [ObservedServer("m1.small", "")] + [ObservedServer("m1.small", "gone")])
    twin = capture(_observed([_host("h", "HW_ARCH_X86_64")], images, flavors, servers),
                   boots=100)
    assert twin.cloud["workload"] == {"order": "shuffled", "mix": {"total": 100, "weights": [
        {"image": "ubuntu", "flavor": "m1.small", "weight": 6},
        {"image": "win", "flavor": "m1.large", "weight": 2}]}}
    assert dict(twin.skipped_flavors)["broken (f3)"].startswith("hw:cpu_policy: hw:cpu_polic")
    assert "1 server(s) booted from a volume are not in the mix" in twin.notes
    assert any(note.startswith("1 server(s) of an image or flavor the twin does not have")
               for note in twin.notes)


def test_without_servers_each_image_boots_once_with_the_smallest_flavor() -> None:
    flavors = [ObservedFlavor("f2", "big", 8, 16384, 80), SMALL]
    twin = capture(_observed([_host("h")], [_image("i1", "a"), _image("i2", "b")], flavors))
    weights = twin.cloud["workload"]["mix"]["weights"]  # type: ignore[index]
    assert weights == [{"image": "a", "flavor": "m1.small", "weight": 1},
                       {"image": "b", "flavor": "m1.small", "weight": 1}]


def test_a_cloud_without_hosts_or_images_is_one_line() -> None:
    with pytest.raises(ValueError, match="placement has no compute host"):
        capture(_observed([_host("disks", totals={"DISK_GB": 10})]))
    with pytest.raises(ValueError, match=r"no image the twin can boot \(read 1; 1 skipped\)"):
        capture(_observed([_host("h")], [_image("i", "q", status="queued")]))
