"""Driver capabilities and the traits they stand for (upstream's capability table).

A driver declares ``capabilities``: upstream's ``supports_*`` keys with True or
False. Each key with a trait becomes a ``TraitReport``; a key the driver leaves
out says nothing, so the trait is neither added nor removed.
``[compute] image_type_exclude_list`` forces image types off.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from types import MappingProxyType

import os_traits

from moorage.model import vocabulary
from moorage.virt.report import Source, TraitReport

# Image formats (glance disk_format values) a compute host may or may not read.
IMAGE_TYPES = ("aki", "ami", "ari", "iso", "qcow2", "raw", "vdi", "vhd", "vhdx", "vmdk", "ploop")


def image_type_key(disk_format: str) -> str:
    return f"supports_image_type_{disk_format}"


CAPABILITY_TRAITS: Mapping[str, str] = {
    "supports_attach_interface": os_traits.COMPUTE_NET_ATTACH_INTERFACE,
    "supports_device_tagging": os_traits.COMPUTE_DEVICE_TAGGING,
    "supports_tagged_attach_interface": os_traits.COMPUTE_NET_ATTACH_INTERFACE_WITH_TAG,
    "supports_tagged_attach_volume": os_traits.COMPUTE_VOLUME_ATTACH_WITH_TAG,
    "supports_extend_volume": os_traits.COMPUTE_VOLUME_EXTEND,
    "supports_multiattach": os_traits.COMPUTE_VOLUME_MULTI_ATTACH,
    "supports_trusted_certs": os_traits.COMPUTE_TRUSTED_CERTS,
    "supports_accelerators": os_traits.COMPUTE_ACCELERATORS,
    "supports_migrate_to_same_host": os_traits.COMPUTE_SAME_HOST_COLD_MIGRATE,
    "supports_bfv_rescue": os_traits.COMPUTE_RESCUE_BFV,
    "supports_secure_boot": os_traits.COMPUTE_SECURITY_UEFI_SECURE_BOOT,
    "supports_socket_pci_numa_affinity": os_traits.COMPUTE_SOCKET_PCI_NUMA_AFFINITY,
    "supports_remote_managed_ports": os_traits.COMPUTE_REMOTE_MANAGED_PORTS,
    "supports_ephemeral_encryption": os_traits.COMPUTE_EPHEMERAL_ENCRYPTION,
    "supports_ephemeral_encryption_luks": os_traits.COMPUTE_EPHEMERAL_ENCRYPTION_LUKS,
    "supports_ephemeral_encryption_plain": os_traits.COMPUTE_EPHEMERAL_ENCRYPTION_PLAIN,
    "supports_address_space_passthrough": os_traits.COMPUTE_ADDRESS_SPACE_PASSTHROUGH,
    "supports_address_space_emulated": os_traits.COMPUTE_ADDRESS_SPACE_EMULATED,
    "supports_stateless_firmware": os_traits.COMPUTE_SECURITY_STATELESS_FIRMWARE,
    "supports_virtio_fs": os_traits.COMPUTE_STORAGE_VIRTIO_FS,
    "supports_mem_backing_file": os_traits.COMPUTE_MEM_BACKING_FILE,
    **{image_type_key(f): vocabulary.device_trait(vocabulary.IMAGE_TYPE, f) for f in IMAGE_TYPES},
}

# Upstream capability keys that stand for no trait (kept so that a typo is an error).
NON_TRAIT_CAPABILITIES = frozenset(
    {"has_imagecache", "supports_evacuate", "supports_pcpus", "supports_vtpm"}
)


def managed_elsewhere(*, has_imagecache: bool, supports_migrate_to_same_host: bool,
                      image_types: Collection[str]) -> Mapping[str, bool]:
    """Upstream's table of a driver whose hypervisor another service manages (vmwareapi:
    a vCenter cluster; ironic: an Ironic node), in upstream's order. Both declare the
    same keys and refuse the same guest features; they differ in an image cache, a
    migration to the same host, and the image types they take (``image_types``)."""
    return MappingProxyType({
        "has_imagecache": has_imagecache,
        "supports_evacuate": False,
        "supports_migrate_to_same_host": supports_migrate_to_same_host,
        "supports_attach_interface": True,
        "supports_multiattach": False,
        "supports_trusted_certs": False,
        "supports_pcpus": False,
        "supports_accelerators": False,
        "supports_remote_managed_ports": False,
        "supports_address_space_passthrough": False,
        "supports_address_space_emulated": False,
        "supports_stateless_firmware": False,
        "supports_virtio_fs": False,
        "supports_mem_backing_file": False,
        **{image_type_key(f): f in image_types for f in IMAGE_TYPES},
    })


class UnknownCapability(ValueError):
    """A capability key that is neither in the table nor a known trait-less key."""


def capability_reports(
    capabilities: Mapping[str, bool], excluded_image_types: Collection[str] = ()
) -> tuple[TraitReport, ...]:
    """One report per capability the driver declares that stands for a trait."""
    return _capability_reports(tuple(capabilities.items()),
                               frozenset(f.strip().lower() for f in excluded_image_types))


# A host's agent asks at every periodic sync (a fleet, for each of its hosts) about the
# same few tables: the reports (immutable) are made once per table.
@functools.lru_cache(maxsize=64)
def _capability_reports(capabilities: tuple[tuple[str, bool], ...],
                        excluded: frozenset[str]) -> tuple[TraitReport, ...]:
    reports = []
    for key, value in capabilities:
        trait = CAPABILITY_TRAITS.get(key)
        if trait is None:
            if key not in NON_TRAIT_CAPABILITIES:
                raise UnknownCapability(f"unknown driver capability {key!r}")
            continue
        if key.startswith("supports_image_type_") and key.removeprefix(
                "supports_image_type_") in excluded:
            reports.append(TraitReport(trait, False, Source.CONFIGURATION,
                                       "[compute] image_type_exclude_list"))
            continue
        reports.append(TraitReport(trait, bool(value), Source.DRIVER_TABLE, key))
    return tuple(reports)
