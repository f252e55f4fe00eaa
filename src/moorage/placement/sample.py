"""The sample cloud: a small heterogeneous cloud of the kind Moorage is for.

Eight compute nodes whose traits say what guests they can really run (machine
type buses, NIC and video models, image formats, CPU flags), a VMware host, an
Ironic bare-metal node, a host with NUMA and SR-IOV child providers, and a Ceph
pool shared through an aggregate; plus a few instances so usage is visible.

``load`` writes it THROUGH THE API (custom classes and traits, providers,
inventories, traits, aggregates, allocations), so it exercises the service like
any client would. Every standard name comes from os-traits / os-resource-classes.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import os_resource_classes as orc
import os_traits as ot

from moorage.jsonvalue import JSONValue
from moorage.model.vocabulary import is_custom
from moorage.placement.storage.bulk import ProviderSpec
from moorage.placement.storage.records import Inventory

# Sample uuids are derived from names, so the same cloud always has the same uuids.
_NAMESPACE = uuidlib.UUID("6d6f6f72-6167-6573-616d-706c65636c64")
SAMPLE_PROJECT = "00000000-0000-0000-0000-0000000000a1"
SAMPLE_USER = "00000000-0000-0000-0000-0000000000b1"

BAREMETAL_CLASS = "CUSTOM_BAREMETAL_GOLD"
RAID_TRAIT = "CUSTOM_RAID5"


def sample_uuid(name: str) -> str:
    return str(uuidlib.uuid5(_NAMESPACE, name))


CEPH_AGGREGATE = sample_uuid("aggregate:ceph")


def _inventory(total: int, *, reserved: int = 0, ratio: float = 1.0,
               max_unit: int | None = None) -> Inventory:
    return Inventory(total=total, reserved=reserved, min_unit=1,
                     max_unit=max_unit or total, step_size=1, allocation_ratio=ratio)


def _compute(vcpus: int, memory_mb: int, disk_gb: int | None) -> dict[str, Inventory]:
    """A KVM-style node: overcommitted CPU, memory with a host reserve, local disk."""
    inventories = {
        orc.VCPU: _inventory(vcpus, ratio=4.0, max_unit=vcpus),
        orc.MEMORY_MB: _inventory(memory_mb, reserved=4096),
    }
    if disk_gb is not None:
        inventories[orc.DISK_GB] = _inventory(disk_gb)
    return inventories


# -- capability sets, as a virt driver would report them ---------------------------
# q35 has no IDE or floppy controller; pc (i440fx) has both and the older NIC models.
Q35_BUSES = {ot.COMPUTE_STORAGE_BUS_VIRTIO, ot.COMPUTE_STORAGE_BUS_SCSI,
             ot.COMPUTE_STORAGE_BUS_SATA, ot.COMPUTE_STORAGE_BUS_USB}
PC_BUSES = {ot.COMPUTE_STORAGE_BUS_VIRTIO, ot.COMPUTE_STORAGE_BUS_SCSI,
            ot.COMPUTE_STORAGE_BUS_IDE, ot.COMPUTE_STORAGE_BUS_USB,
            ot.COMPUTE_STORAGE_BUS_FDC}
Q35_NICS = {ot.COMPUTE_NET_VIF_MODEL_VIRTIO, ot.COMPUTE_NET_VIF_MODEL_E1000E}
PC_NICS = {ot.COMPUTE_NET_VIF_MODEL_VIRTIO, ot.COMPUTE_NET_VIF_MODEL_E1000,
           ot.COMPUTE_NET_VIF_MODEL_RTL8139, ot.COMPUTE_NET_VIF_MODEL_NE2K_PCI,
           ot.COMPUTE_NET_VIF_MODEL_PCNET}
Q35_GRAPHICS = {ot.COMPUTE_GRAPHICS_MODEL_VIRTIO, ot.COMPUTE_GRAPHICS_MODEL_VGA,
                ot.COMPUTE_GRAPHICS_MODEL_BOCHS}
PC_GRAPHICS = {ot.COMPUTE_GRAPHICS_MODEL_CIRRUS, ot.COMPUTE_GRAPHICS_MODEL_VGA,
               ot.COMPUTE_GRAPHICS_MODEL_QXL, ot.COMPUTE_GRAPHICS_MODEL_VIRTIO}
LOCAL_IMAGES = {ot.COMPUTE_IMAGE_TYPE_QCOW2, ot.COMPUTE_IMAGE_TYPE_RAW}
# Images on Ceph RBD are used in place: only raw ones can be.
RBD_IMAGES = {ot.COMPUTE_IMAGE_TYPE_RAW}
INTEL_ICELAKE = {ot.HW_CPU_X86_VMX, ot.HW_CPU_X86_SSE42, ot.HW_CPU_X86_AESNI,
                 ot.HW_CPU_X86_AVX, ot.HW_CPU_X86_AVX2, ot.HW_CPU_X86_AVX512F}
INTEL_HASWELL = {ot.HW_CPU_X86_VMX, ot.HW_CPU_X86_SSE42, ot.HW_CPU_X86_AESNI,
                 ot.HW_CPU_X86_AVX, ot.HW_CPU_X86_AVX2}
INTEL_SANDYBRIDGE = {ot.HW_CPU_X86_VMX, ot.HW_CPU_X86_SSE42, ot.HW_CPU_X86_AESNI,
                     ot.HW_CPU_X86_AVX}
AMD_EPYC = {ot.HW_CPU_X86_SVM, ot.HW_CPU_X86_SSE42, ot.HW_CPU_X86_AESNI,
            ot.HW_CPU_X86_AVX, ot.HW_CPU_X86_AVX2, ot.HW_CPU_X86_AMD_SEV}
VMWARE_NICS = {ot.COMPUTE_NET_VIF_MODEL_E1000, ot.COMPUTE_NET_VIF_MODEL_E1000E,
               ot.COMPUTE_NET_VIF_MODEL_VMXNET3}
VMWARE_BUSES = {ot.COMPUTE_STORAGE_BUS_IDE, ot.COMPUTE_STORAGE_BUS_SCSI,
                ot.COMPUTE_STORAGE_BUS_SATA}


def _traits(*groups: Iterable[str]) -> frozenset[str]:
    """A compute node's traits: COMPUTE_NODE and the given capability sets."""
    return frozenset({ot.COMPUTE_NODE}).union(*groups)


def _provider(name: str, *, parent: str | None = None,
              inventories: Mapping[str, Inventory] | None = None,
              traits: Iterable[str] = (), aggregates: Iterable[str] = ()) -> ProviderSpec:
    return ProviderSpec(
        name=name,
        uuid=sample_uuid(name),
        parent=sample_uuid(parent) if parent else None,
        inventories=dict(inventories or {}),
        traits=frozenset(traits),
        aggregates=frozenset(aggregates),
    )


def _providers() -> list[ProviderSpec]:
    """Parents before children."""
    return [
        _provider("kvm-q35-01", inventories=_compute(64, 262144, 2000),
                  traits=_traits(INTEL_ICELAKE, Q35_BUSES, Q35_NICS, Q35_GRAPHICS,
                                 LOCAL_IMAGES, {ot.COMPUTE_SECURITY_UEFI_SECURE_BOOT})),
        _provider("kvm-q35-02", inventories=_compute(128, 524288, 4000),
                  traits=_traits(AMD_EPYC, Q35_BUSES, Q35_NICS, Q35_GRAPHICS, LOCAL_IMAGES,
                                 {ot.COMPUTE_SECURITY_UEFI_SECURE_BOOT})),
        _provider("kvm-pc-01", inventories=_compute(32, 131072, 1000),
                  traits=_traits(INTEL_HASWELL, PC_BUSES, PC_NICS, PC_GRAPHICS, LOCAL_IMAGES)),
        _provider("kvm-pc-02", inventories=_compute(16, 65536, 500),
                  traits=_traits(INTEL_SANDYBRIDGE, PC_BUSES, PC_NICS, PC_GRAPHICS,
                                 LOCAL_IMAGES)),
        _provider("kvm-ceph-01", inventories=_compute(64, 262144, None),
                  traits=_traits(INTEL_ICELAKE, Q35_BUSES, Q35_NICS, Q35_GRAPHICS, RBD_IMAGES),
                  aggregates=[CEPH_AGGREGATE]),
        # An NFV host: CPUs and memory live in its NUMA cells, VFs in its SR-IOV NIC.
        _provider("kvm-numa-01",
                  traits=_traits(INTEL_ICELAKE, Q35_BUSES, Q35_NICS, Q35_GRAPHICS, RBD_IMAGES),
                  aggregates=[CEPH_AGGREGATE]),
        _provider("kvm-numa-01-numa0", parent="kvm-numa-01",
                  inventories=_compute(32, 131072, None), traits={ot.HW_NUMA_ROOT}),
        _provider("kvm-numa-01-numa1", parent="kvm-numa-01",
                  inventories=_compute(32, 131072, None), traits={ot.HW_NUMA_ROOT}),
        _provider("kvm-numa-01-pf0", parent="kvm-numa-01",
                  inventories={orc.SRIOV_NET_VF: _inventory(16)},
                  traits={ot.HW_NIC_SRIOV, ot.HW_NIC_SRIOV_TRUSTED}),
        _provider("vmware-01", inventories=_compute(96, 393216, 8000),
                  traits=_traits(INTEL_HASWELL, VMWARE_NICS, VMWARE_BUSES,
                                 {ot.COMPUTE_GRAPHICS_MODEL_VMVGA,
                                  ot.COMPUTE_IMAGE_TYPE_VMDK})),
        # A bare-metal node is one indivisible unit of its custom class.
        _provider("ironic-node-01", inventories={BAREMETAL_CLASS: _inventory(1)},
                  traits=_traits({RAID_TRAIT})),
        _provider("ceph-pool-01", inventories={orc.DISK_GB: _inventory(100000)},
                  traits={ot.MISC_SHARES_VIA_AGGREGATE}, aggregates=[CEPH_AGGREGATE]),
    ]


@dataclass(frozen=True)
class SampleInstance:
    """A consumer of the sample cloud: provider name -> {class: amount}."""

    name: str
    allocations: Mapping[str, Mapping[str, int]]

    @property
    def uuid(self) -> str:
        return sample_uuid(f"instance:{self.name}")


def _instances() -> list[SampleInstance]:
    return [
        SampleInstance("web-1", {"kvm-q35-01": {orc.VCPU: 4, orc.MEMORY_MB: 8192,
                                                orc.DISK_GB: 40}}),
        SampleInstance("db-1", {"kvm-q35-02": {orc.VCPU: 16, orc.MEMORY_MB: 65536,
                                               orc.DISK_GB: 500}}),
        SampleInstance("legacy-1", {"kvm-pc-01": {orc.VCPU: 2, orc.MEMORY_MB: 4096,
                                                  orc.DISK_GB: 20}}),
        # Fills kvm-pc-02's memory: it has the pc traits but no room left.
        SampleInstance("legacy-2", {"kvm-pc-02": {orc.VCPU: 8, orc.MEMORY_MB: 59392,
                                                  orc.DISK_GB: 200}}),
        SampleInstance("ceph-1", {"kvm-ceph-01": {orc.VCPU: 4, orc.MEMORY_MB: 8192},
                                  "ceph-pool-01": {orc.DISK_GB: 80}}),
        SampleInstance("nfv-1", {"kvm-numa-01-numa0": {orc.VCPU: 8, orc.MEMORY_MB: 16384},
                                 "kvm-numa-01-pf0": {orc.SRIOV_NET_VF: 2},
                                 "ceph-pool-01": {orc.DISK_GB: 40}}),
        SampleInstance("metal-1", {"ironic-node-01": {BAREMETAL_CLASS: 1}}),
    ]


@dataclass(frozen=True)
class SampleCloud:
    providers: list[ProviderSpec]
    instances: list[SampleInstance]

    def provider(self, name: str) -> ProviderSpec:
        for spec in self.providers:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def usage(self, name: str) -> dict[str, int]:
        """What the instances use of provider ``name``, by class."""
        used: dict[str, int] = {}
        for instance in self.instances:
            for rc, amount in instance.allocations.get(name, {}).items():
                used[rc] = used.get(rc, 0) + amount
        return used

    def custom_names(self) -> tuple[set[str], set[str]]:
        """(custom resource classes, custom traits) the cloud uses."""
        classes = {rc for s in self.providers for rc in s.inventories if is_custom(rc)}
        traits = {t for s in self.providers for t in s.traits if is_custom(t)}
        return classes, traits


CLOUD = SampleCloud(_providers(), _instances())


class PlacementAPI(Protocol):
    """What ``load`` needs of a client: one JSON request (latest microversion, admin)."""

    def request(self, method: str, path: str, *, json: JSONValue = None) -> Any: ...


def load(api: PlacementAPI, cloud: SampleCloud = CLOUD) -> None:
    """Create ``cloud`` through the placement API; it must not exist yet."""
    classes, traits = cloud.custom_names()
    for rc in sorted(classes):
        api.request("PUT", f"/resource_classes/{rc}")
    for trait in sorted(traits):
        api.request("PUT", f"/traits/{trait}")
    for spec in cloud.providers:
        _create_provider(api, spec)
    for instance in cloud.instances:
        api.request("PUT", f"/allocations/{instance.uuid}", json={
            "allocations": {
                sample_uuid(name): {"resources": dict(resources)}
                for name, resources in instance.allocations.items()
            },
            "project_id": SAMPLE_PROJECT,
            "user_id": SAMPLE_USER,
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        })


def is_loaded(api: PlacementAPI, cloud: SampleCloud = CLOUD) -> bool:
    """Whether the first provider of ``cloud`` already exists (a kept demo directory)."""
    body = api.request("GET", f"/resource_providers?uuid={cloud.providers[0].uuid}")
    return bool(body["resource_providers"])


def _create_provider(api: PlacementAPI, spec: ProviderSpec) -> None:
    body: dict[str, JSONValue] = {"name": spec.name, "uuid": spec.uuid}
    if spec.parent:
        body["parent_provider_uuid"] = spec.parent
    generation = int(api.request("POST", "/resource_providers", json=body)["generation"])
    path = f"/resource_providers/{spec.uuid}"
    if spec.inventories:
        generation = api.request("PUT", f"{path}/inventories", json={
            "resource_provider_generation": generation,
            "inventories": {rc: inv.fields() for rc, inv in spec.inventories.items()},
        })["resource_provider_generation"]
    if spec.traits:
        generation = api.request("PUT", f"{path}/traits", json={
            "resource_provider_generation": generation, "traits": sorted(spec.traits),
        })["resource_provider_generation"]
    if spec.aggregates:
        api.request("PUT", f"{path}/aggregates", json={
            "resource_provider_generation": generation, "aggregates": sorted(spec.aggregates),
        })

