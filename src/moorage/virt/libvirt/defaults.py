"""Upstream Nova's defaults for a guest's virtual hardware, when the image does not say.

Each default depends on the virt type, the guest architecture and sometimes the
machine type, as in ``nova/virt/libvirt/blockinfo.py`` (disk and CD-ROM buses),
``driver.py`` (video model), ``vif.py`` (NIC model) and ``utils.py`` (machine
type). Pure functions: whether the host can honour the result is checks.py's job.
"""

from __future__ import annotations

from collections.abc import Mapping

X86 = frozenset({"i686", "x86_64"})
PPC = frozenset({"ppc", "ppc64", "ppcle", "ppc64le"})
# Their machines have no IDE: a CD-ROM goes on SCSI.
CDROM_ON_SCSI = PPC | {"s390", "s390x", "aarch64"}

# The board upstream picks per architecture when neither the image nor
# [libvirt] hw_machine_type says; other architectures get libvirt's default.
MACHINE_TYPES: Mapping[str, str] = {
    "armv7l": "virt",
    "aarch64": "virt",
    "s390": "s390-ccw-virtio",
    "s390x": "s390-ccw-virtio",
    "i686": "pc",
    "x86_64": "pc",
}


def is_q35(machine: str | None) -> bool:
    """Whether ``machine`` is a Q35 board (``q35``, ``pc-q35-7.2``, distro variants)."""
    return machine is not None and "q35" in machine


def disk_bus(virt_type: str) -> str:
    """The bus of a disk whose image sets no ``hw_disk_bus``."""
    if virt_type == "lxc":
        return "lxc"
    if virt_type == "parallels":
        return "scsi"
    return "virtio"


def cdrom_bus(virt_type: str, arch: str, machine: str | None) -> str:
    """The bus of a CD-ROM whose image sets no ``hw_cdrom_bus``: IDE on i440FX,
    SATA on Q35 (it has no IDE), SCSI where the architecture has no IDE."""
    if virt_type == "lxc":
        return "lxc"
    if virt_type == "parallels":
        return "ide"
    if arch in CDROM_ON_SCSI:
        return "scsi"
    if is_q35(machine):
        return "sata"
    return "ide"


def video_model(virt_type: str, arch: str) -> str | None:
    """The video model of a guest whose image sets no ``hw_video_model``.

    virtio everywhere it works (it falls back to VGA for guests without the
    driver); VGA on Power, which cannot take it by default, and for parallels.
    None for containers, which have no display.
    """
    if virt_type == "lxc":
        return None
    if virt_type == "parallels" or arch in PPC:
        return "vga"
    return "virtio"


def vif_model(virt_type: str) -> str | None:
    """The NIC model of a guest whose image sets no ``hw_vif_model``: virtio for
    QEMU/KVM and parallels; the hypervisor's own choice otherwise."""
    if virt_type in ("kvm", "qemu", "parallels"):
        return "virtio"
    return None


def domain_type(virt_type: str, emulated: bool) -> str:
    """libvirt's ``<domain type>``: the virt type, except that a guest whose image
    asks for an emulated architecture (``hw_emulation_architecture``) runs under
    QEMU's emulator (TCG) even on a KVM host."""
    if emulated and virt_type == "kvm":
        return "qemu"
    return virt_type
