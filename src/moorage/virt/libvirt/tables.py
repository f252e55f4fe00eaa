"""What the libvirt driver knows without asking the hypervisor: upstream Nova's
per-virt-type tables, and the versions some features need.

Each table's values become trait names through ``moorage.model.vocabulary``; a test
checks every one against os-traits, so a table that drifts fails there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import os_traits

# Disk buses per virt type (upstream's blockinfo.SUPPORTED_DEVICE_BUSES). xen and uml
# stay, as upstream keeps them, so that their traits are owned (and reported False).
# For qemu and kvm the hypervisor's domain capabilities decide instead.
DEVICE_BUSES: Mapping[str, tuple[str, ...]] = {
    "qemu": ("virtio", "scsi", "ide", "usb", "fdc", "sata"),
    "kvm": ("virtio", "scsi", "ide", "usb", "fdc", "sata"),
    "lxc": ("lxc",),
    "parallels": ("ide", "scsi"),
    "xen": ("xen", "ide"),
    "uml": ("uml",),
}

# NIC models of the virt types that do not run QEMU (upstream's vif.SUPPORTED_VIF_MODELS);
# QEMU's come from its own device list (``models.nic``).
VIF_MODELS: Mapping[str, tuple[str, ...]] = {
    "lxc": (),
    "parallels": ("virtio", "rtl8139", "e1000"),
}

# Domain capabilities' TPM models and emulator versions, and firmware names.
TPM_MODEL_TRAITS: Mapping[str, str] = {
    "tpm-tis": os_traits.COMPUTE_SECURITY_TPM_TIS,
    "tpm-crb": os_traits.COMPUTE_SECURITY_TPM_CRB,
}
TPM_VERSION_TRAITS: Mapping[str, str] = {
    "1.2": os_traits.COMPUTE_SECURITY_TPM_1_2,
    "2.0": os_traits.COMPUTE_SECURITY_TPM_2_0,
}
FIRMWARE_TRAITS: Mapping[str, str] = {
    "bios": os_traits.COMPUTE_FIRMWARE_BIOS,
    "uefi": os_traits.COMPUTE_FIRMWARE_UEFI,
}
# Guest architectures whose QEMU boots a BIOS (SeaBIOS) by default, with no firmware
# descriptor: Debian's seabios ships none, so libvirt's <enum name='firmware'> is empty.
BIOS_ARCHS = ("i686", "x86_64")

Version = tuple[int, int, int]


def version_text(version: Version) -> str:
    return ".".join(str(part) for part in version)


def version_from_number(number: int) -> Version:
    """libvirt's encoding: 9000000 is 9.0.0, 7002022 is 7.2.22."""
    return number // 1_000_000, number // 1_000 % 1_000, number % 1_000


@dataclass(frozen=True)
class VersionGate:
    """A feature that needs a minimum libvirt and/or QEMU (upstream's MIN_* constants)."""

    feature: str
    libvirt: Version | None = None
    qemu: Version | None = None
    # Only QEMU guests have it (upstream's hv_type=QEMU), whatever its version.
    qemu_only: bool = False

    @property
    def needs_qemu(self) -> bool:
        return self.qemu_only or self.qemu is not None

    def describe(self) -> str:
        needs = [f"libvirt >= {version_text(self.libvirt)}"] if self.libvirt else []
        if self.qemu:
            needs.append(f"QEMU >= {version_text(self.qemu)}")
        elif self.qemu_only:
            needs.append("QEMU")
        return f"{self.feature} needs {' and '.join(needs)}"


# Capabilities upstream's init_host sets from the host's versions.
REMOTE_MANAGED_PORTS = VersionGate("remote-managed ports", libvirt=(7, 9, 0))
VIRTIO_FS = VersionGate("virtio-fs", libvirt=(8, 0, 0), qemu=(6, 2, 0))
ADDRESS_SPACE = VersionGate("maxphysaddr", libvirt=(8, 7, 0), qemu_only=True)
STATELESS_FIRMWARE = VersionGate("stateless firmware", libvirt=(8, 6, 0))

# capability key -> the versions it needs
HOST_CAPABILITY_GATES: Mapping[str, VersionGate] = {
    "supports_remote_managed_ports": REMOTE_MANAGED_PORTS,
    "supports_virtio_fs": VIRTIO_FS,
    "supports_address_space_passthrough": ADDRESS_SPACE,
    "supports_address_space_emulated": ADDRESS_SPACE,
    "supports_stateless_firmware": STATELESS_FIRMWARE,
}
