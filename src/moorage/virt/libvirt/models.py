"""Which NIC, sound and vIOMMU models (and BIOS) a guest platform can have: one decision each.

Discovery turns a decision into the trait it reports for the host's default machine
type; the late check asks the same function for the guest's own platform and
refuses with the same reason. The two cannot disagree, and a model is supported
only where the emulator really has its device (``qemu_devices``) on a bus the
machine type has, as libvirt would build it.

Every os-traits name of the three families has an entry here, even the models no
QEMU guest can have (Xen's netfront): a test holds the tables to os-traits, so a new
name fails until it is decided.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from moorage.virt.libvirt import defaults, tables
from moorage.virt.libvirt.domcaps import DomainCapabilities
from moorage.virt.libvirt.qemu_devices import DeviceList
from moorage.virt.libvirt.tables import Version, VersionGate, version_text
from moorage.virt.report import Source

PCI, ISA, USB, HDA, VIRTIO_MMIO, SPAPR_VIO, CCW = (
    "PCI", "ISA", "usb-bus", "HDA", "virtio-bus", "spapr-vio-bus", "virtual-css-bus")

# Machine families and the buses a guest of each has for its devices, as libvirt
# lays them out (it adds a PCIe-to-PCI bridge on q35 for conventional PCI devices
# and a USB controller on the boards that have one; HDA codecs sit on the HDA
# controller that the sound model brings).
MACHINE_BUSES: Mapping[str, frozenset[str]] = {
    "i440fx": frozenset({PCI, ISA, USB, HDA}),
    "q35": frozenset({PCI, ISA, USB, HDA}),
    "isapc": frozenset({ISA}),
    "arm-virt": frozenset({PCI, USB, HDA, VIRTIO_MMIO}),
    "pseries": frozenset({PCI, SPAPR_VIO, USB, HDA}),
    "s390-ccw": frozenset({CCW}),
}


def machine_family(arch: str, machine: str | None) -> str | None:
    """The family of a machine type (``pc-q35-7.2`` is q35); None when unknown."""
    if machine is None:
        return None
    if arch in defaults.X86:
        if "q35" in machine:
            return "q35"
        if machine == "pc" or machine.startswith(("pc-i440fx", "pc-")) or "i440fx" in machine:
            return "i440fx"
        if machine.startswith("isapc"):
            return "isapc"
        return None
    if arch in ("aarch64", "armv7l") and machine.startswith("virt"):
        return "arm-virt"
    if arch in defaults.PPC and machine.startswith("pseries"):
        return "pseries"
    if arch in ("s390", "s390x") and machine.startswith("s390-ccw-virtio"):
        return "s390-ccw"
    return None


@dataclass(frozen=True)
class GuestPlatform:
    """What the decisions read about one guest platform."""

    arch: str
    # The canonical machine type (pc-q35-7.2); None when unknown.
    machine: str | None
    # The emulator's device list; None when it could not be had (``devices_problem``).
    devices: DeviceList | None
    devices_problem: str | None = None
    libvirt_version: Version | None = None
    qemu_version: Version | None = None

    @property
    def family(self) -> str | None:
        return machine_family(self.arch, self.machine)

    @property
    def where(self) -> str:
        return f"{self.arch} {self.machine}" if self.machine else self.arch


@dataclass(frozen=True)
class Decision:
    """Supported or not, and why; ``supported`` None: cannot be known here (no device
    list, an unknown machine family), so nothing is reported and nothing refused."""

    supported: bool | None
    reason: str
    source: Source = Source.DEVICE_LIST


# -- NICs ---------------------------------------------------------------------------------

# NIC model -> the QEMU devices libvirt may build it as (the first on a bus the
# machine has), or why no QEMU guest has it.
NIC_MODELS: Mapping[str, tuple[str, ...] | str] = {
    "virtio": ("virtio-net-pci", "virtio-net-device", "virtio-net-ccw"),
    "e1000": ("e1000",),
    "e1000e": ("e1000e",),
    "igb": ("igb",),
    "ne2k_pci": ("ne2k_pci",),
    "pcnet": ("pcnet",),
    "rtl8139": ("rtl8139",),
    "vmxnet3": ("vmxnet3",),
    "spapr-vlan": ("spapr-vlan",),
    "lan9118": ("lan9118",),
    "netfront": "netfront is Xen's paravirtual NIC, not a QEMU device",
    "sriov": "sriov is Hyper-V's SR-IOV NIC; QEMU guests get SR-IOV ports by PCI "
             "passthrough, not as a NIC model",
    "vmxnet": "vmxnet is VMware's first paravirtual NIC; QEMU has vmxnet3 only",
}
# Models whose libvirt support came after their QEMU device: libvirt must be new
# enough too (upstream's MIN_ constants).
IGB = VersionGate("the igb NIC", libvirt=(9, 3, 0), qemu=(8, 0, 0))
NIC_GATES: Mapping[str, VersionGate] = {"igb": IGB}


def nic(model: str, platform: GuestPlatform) -> Decision:
    """Whether a ``platform`` guest can have a ``model`` NIC."""
    return _devices_decision(f"NIC model {model}", NIC_MODELS[model], platform,
                             NIC_GATES.get(model))


# -- sound ----------------------------------------------------------------------------------

# Sound model -> the QEMU devices libvirt builds it from (all of them: an HDA
# controller and its codec), or None for the PC speaker, which is part of the PC
# machine rather than a device.
SOUND_MODELS: Mapping[str, tuple[str, ...] | None] = {
    "sb16": ("sb16",),
    "es1370": ("ES1370",),
    "ac97": ("AC97",),
    "ich6": ("intel-hda", "hda-duplex"),
    "ich9": ("ich9-intel-hda", "hda-duplex"),
    "usb": ("usb-audio",),
    "virtio": ("virtio-sound-pci",),
    "pcspk": None,
}
VIRTIO_SOUND = VersionGate("virtio sound", libvirt=(10, 4, 0), qemu=(8, 2, 0))
PCSPK_FAMILIES = frozenset({"i440fx", "q35", "isapc"})
# libvirt (9.0 measured) gives QEMU the PC speaker as ``-soundhw pcspk``, an option
# QEMU 7.1 removed: the guest then fails to start. Newer libvirt is not known here.
SOUNDHW_REMOVED = (7, 1, 0)
PCSPK_LIBVIRT_KNOWN = (9, 0, 0)


def sound(model: str, platform: GuestPlatform) -> Decision:
    """Whether a ``platform`` guest can have a ``model`` sound device."""
    devices = SOUND_MODELS[model]
    if devices is None:
        return _pc_speaker(platform)
    gate = VIRTIO_SOUND if model == "virtio" else None
    return _all_devices_decision(f"sound model {model}", devices, platform, gate)


def _pc_speaker(platform: GuestPlatform) -> Decision:
    family = platform.family
    if family is None:
        return _unknown_machine(platform)
    if family not in PCSPK_FAMILIES:
        return Decision(False, f"the PC speaker is part of the PC machines; "
                               f"{platform.where} is not one", Source.DOMAIN_CAPABILITIES)
    qemu, libvirt = platform.qemu_version, platform.libvirt_version
    if qemu is None or libvirt is None:
        return Decision(None, "the PC speaker depends on the libvirt and QEMU versions, "
                              "which are unknown", Source.HYPERVISOR)
    if qemu < SOUNDHW_REMOVED:
        return Decision(True, f"the PC speaker of {platform.where} (-soundhw, QEMU "
                              f"{version_text(qemu)})", Source.HYPERVISOR)
    if libvirt <= PCSPK_LIBVIRT_KNOWN:
        return Decision(False, f"libvirt {version_text(libvirt)} gives QEMU the PC speaker "
                               f"as -soundhw, which QEMU {version_text(qemu)} no longer has "
                               f"(removed in {version_text(SOUNDHW_REMOVED)})",
                        Source.HYPERVISOR)
    return Decision(None, f"whether libvirt {version_text(libvirt)} builds the PC speaker "
                          f"for QEMU {version_text(qemu)} is not known here",
                    Source.HYPERVISOR)


# -- vIOMMU ---------------------------------------------------------------------------------

VIOMMU_VIRTIO = VersionGate("the virtio vIOMMU", libvirt=(8, 3, 0))
# model -> (machine families libvirt allows it on, the QEMU device or None for a
# machine property)
VIOMMU_MODELS: Mapping[str, tuple[frozenset[str], str | None]] = {
    "intel": (frozenset({"q35"}), "intel-iommu"),
    "smmuv3": (frozenset({"arm-virt"}), None),
    "virtio": (frozenset({"q35", "arm-virt"}), "virtio-iommu-pci"),
}
# What "auto" becomes, in upstream's order of preference.
VIOMMU_AUTO_ORDER = ("virtio", "intel", "smmuv3")


def viommu(model: str, platform: GuestPlatform) -> Decision:
    """Whether a ``platform`` guest can have a ``model`` vIOMMU; ``auto`` is the first
    of ``VIOMMU_AUTO_ORDER`` it can have."""
    if model == "auto":
        chosen = auto_viommu(platform)
        if chosen is None:
            unknown = [viommu(m, platform) for m in VIOMMU_AUTO_ORDER]
            if any(d.supported is None for d in unknown):
                return Decision(None, "; ".join(d.reason for d in unknown
                                                if d.supported is None))
            return Decision(False, f"no vIOMMU model fits {platform.where} "
                                   f"({', '.join(VIOMMU_AUTO_ORDER)} do not)")
        return Decision(True, f"auto is {chosen} on {platform.where}")
    families, device = VIOMMU_MODELS[model]
    family = platform.family
    if family is None:
        return _unknown_machine(platform)
    if family not in families:
        return Decision(False, f"libvirt builds the {model} vIOMMU on "
                               f"{' and '.join(sorted(families))} machines only, not "
                               f"{platform.where}", Source.DOMAIN_CAPABILITIES)
    if device is not None:
        # A vIOMMU is a system device of the board, not on a bus: its family rule says where.
        found = _device(device, platform, on_bus=False)
        if found.supported is not True:
            return found
    if model == "virtio":
        return _gated(VIOMMU_VIRTIO, platform,
                      Decision(True, f"virtio-iommu-pci on {platform.where}"))
    return Decision(True, f"the {model} vIOMMU on {platform.where}",
                    Source.DOMAIN_CAPABILITIES if device is None else Source.DEVICE_LIST)


def auto_viommu(platform: GuestPlatform) -> str | None:
    """The model ``hw_viommu_model=auto`` gives a guest of ``platform``."""
    return next((m for m in VIOMMU_AUTO_ORDER if viommu(m, platform).supported), None)


# -- firmware -------------------------------------------------------------------------------

def bios(caps: DomainCapabilities, arch: str, runs_qemu: bool) -> Decision:
    """Whether a guest of this platform can boot a BIOS: libvirt can select one, or
    QEMU has its own (SeaBIOS on x86, which Debian ships without a descriptor)."""
    firmware = caps.firmware
    if "bios" in firmware.autoselect:
        return Decision(True, "firmware bios", Source.DOMAIN_CAPABILITIES)
    if runs_qemu and arch in tables.BIOS_ARCHS and firmware.supported:
        return Decision(True, "QEMU's built-in BIOS (SeaBIOS)", Source.DOMAIN_CAPABILITIES)
    return Decision(False, "no BIOS", Source.DOMAIN_CAPABILITIES)


# -- helpers ---------------------------------------------------------------------------------

def _unknown_machine(platform: GuestPlatform) -> Decision:
    return Decision(None, f"{platform.where}: a machine type whose buses Moorage does not "
                          "know")


def _device(name: str, platform: GuestPlatform, on_bus: bool = True) -> Decision:
    """The device is in the emulator's list, on a bus the machine has (``on_bus``)."""
    devices = platform.devices
    if devices is None:
        return Decision(None, platform.devices_problem or "no device list for "
                                                           f"{platform.arch}")
    device = devices.get(name)
    if device is None:
        return Decision(False, f"{devices.describe()} has no {name} device")
    buses = MACHINE_BUSES.get(platform.family or "")
    if not on_bus or device.bus is None or buses is None:
        return Decision(True, f"{device.name} in {devices.describe()}")
    if device.bus not in buses:
        return Decision(False, f"{device.name} plugs into {device.bus}, which "
                               f"{platform.where} does not have")
    return Decision(True, f"{device.name} ({device.bus}) in {devices.describe()}")


def _devices_decision(what: str, choices: tuple[str, ...] | str, platform: GuestPlatform,
                      gate: VersionGate | None) -> Decision:
    """Supported when any of ``choices`` is (the first that is wins)."""
    if isinstance(choices, str):
        return Decision(False, choices, Source.DRIVER_TABLE)
    if platform.family is None and platform.devices is not None:
        return _unknown_machine(platform)
    decisions = [_device(name, platform) for name in choices]
    found = next((d for d in decisions if d.supported), None)
    if found is None:
        unknown = next((d for d in decisions if d.supported is None), None)
        return unknown or Decision(False, f"{what}: {decisions[0].reason}")
    return _gated(gate, platform, found) if gate else found


def _all_devices_decision(what: str, names: tuple[str, ...], platform: GuestPlatform,
                          gate: VersionGate | None) -> Decision:
    """Supported when every one of ``names`` is."""
    if platform.family is None and platform.devices is not None:
        return _unknown_machine(platform)
    decisions = [_device(name, platform) for name in names]
    for decision in decisions:
        if decision.supported is not True:
            if decision.supported is False:
                return Decision(False, f"{what}: {decision.reason}")
            return decision
    found = Decision(True, "; ".join(d.reason for d in decisions))
    return _gated(gate, platform, found) if gate else found


def _gated(gate: VersionGate, platform: GuestPlatform, found: Decision) -> Decision:
    """``found`` when libvirt is new enough for ``gate`` (QEMU's part is its device)."""
    if gate.libvirt is None:
        return found
    version = platform.libvirt_version
    if version is None:
        return Decision(None, f"{gate.describe()}; libvirt's version is unknown",
                        Source.HYPERVISOR)
    if version < gate.libvirt:
        return Decision(False, f"{gate.describe()}; this host has libvirt "
                               f"{version_text(version)}", Source.HYPERVISOR)
    return found
