"""Reading the compute hosts' traits from a real placement server: host by host and
trait by trait give the same hosts; sharing providers and nested providers are not
hosts; the number of requests does not grow with the hosts; a reader keeps what it
read for its max_age."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from moorage.placement.client import PlacementClient
from moorage.placement.storage.records import Inventory
from moorage.scheduler.bootability import HostTraits
from moorage.scheduler.host_traits import HostTraitsReader

VIRTIO, E1000 = "COMPUTE_NET_VIF_MODEL_VIRTIO", "COMPUTE_NET_VIF_MODEL_E1000"
QCOW2, RAW, VMDK = ("COMPUTE_IMAGE_TYPE_QCOW2", "COMPUTE_IMAGE_TYPE_RAW",
                    "COMPUTE_IMAGE_TYPE_VMDK")
DISABLED, SHARES = "COMPUTE_STATUS_DISABLED", "MISC_SHARES_VIA_AGGREGATE"
WANTED = (VIRTIO, E1000, QCOW2, VMDK, DISABLED)
FAMILIES = ("COMPUTE_NET_VIF_MODEL", "COMPUTE_IMAGE_TYPE", "HW_ARCH")


def provider(client: PlacementClient, name: str, traits: list[str],
             parent: str | None = None, inventory: dict[str, int] | None = None) -> str:
    created = client.create_provider(name, str(uuid.uuid4()), parent)
    generation = created.generation
    if inventory:
        generation = client.set_inventories(created.uuid, generation, {
            rc: Inventory(total=n, reserved=0, min_unit=1, max_unit=n, step_size=1,
                      allocation_ratio=1.0) for rc, n in inventory.items()})
    if traits:
        client.set_traits(created.uuid, generation, traits)
    return created.uuid


@pytest.fixture
def cloud(placement_server: Any) -> PlacementClient:
    """kvm1 (with a NUMA child that has HW_ARCH), kvm2 disabled, old (image types only),
    a shared storage pool, and 20 more old hosts."""
    client = PlacementClient(placement_server.url, "admin")
    kvm1 = provider(client, "kvm1", [VIRTIO, E1000, QCOW2, RAW], inventory={"VCPU": 8})
    provider(client, "kvm1-numa0", ["HW_ARCH_X86_64"], parent=kvm1)
    provider(client, "kvm2", [VIRTIO, QCOW2, DISABLED], inventory={"VCPU": 8})
    provider(client, "pool", [SHARES, VMDK], inventory={"DISK_GB": 1000})
    for index in range(21):
        provider(client, f"old{index:02}", [QCOW2, RAW], inventory={"VCPU": 8})
    return client


def by_name(hosts: list[HostTraits]) -> dict[str, HostTraits]:
    return {host.name: host for host in hosts}


def test_per_host_and_per_trait_agree(cloud: PlacementClient) -> None:
    per_host = HostTraitsReader(cloud, per_host=True)
    per_trait = HostTraitsReader(cloud, per_host=False)
    one = by_name(per_host.hosts(WANTED, FAMILIES))
    other = by_name(per_trait.hosts(WANTED, FAMILIES))
    assert one == other
    assert len(one) == 23 and "pool" not in one and "kvm1-numa0" not in one
    assert one["kvm1"].traits == {VIRTIO, E1000, QCOW2}
    assert one["kvm1"].families == {"COMPUTE_NET_VIF_MODEL", "COMPUTE_IMAGE_TYPE"}
    assert not one["kvm2"].enabled and one["kvm1"].enabled
    assert one["old07"].families == {"COMPUTE_IMAGE_TYPE"}
    # listing, associated traits, the version; then each trait and family in use once
    # (VMDK is only the pool's, HW_ARCH only a child's: both asked, neither a host's)
    assert per_trait.requests == 3 + len({VIRTIO, E1000, QCOW2, VMDK, DISABLED, SHARES}) + 3
    assert per_host.requests == 3 + 24


def test_a_reader_keeps_what_it_read_for_its_max_age(cloud: PlacementClient) -> None:
    now = [0.0]
    reader = HostTraitsReader(cloud, max_age=10.0, clock=lambda: now[0], per_host=False)
    reader.hosts([QCOW2, DISABLED])
    first = reader.requests
    now[0] = 9.0
    assert by_name(reader.hosts([QCOW2, DISABLED]))["old00"].traits == {QCOW2}
    assert reader.requests == first
    # a trait not asked about yet costs one request, not a new reading
    assert by_name(reader.hosts([QCOW2, VIRTIO, DISABLED]))["kvm1"].traits == {QCOW2, VIRTIO}
    assert reader.requests == first + 1
    now[0] = 20.0
    reader.hosts([QCOW2, DISABLED])
    assert reader.requests > first + 1
