"""Late checks: can this host run the guest as configured? Asked before libvirt is.

The scheduler sends a guest only to hosts whose traits match what it asks for,
but a host may not have been prefiltered (the prefilters are off by default, a
host may be targeted directly, an image may name a machine type the host's
traits do not describe). So spawn checks again, against what the hypervisor
really offers for this guest's architecture and machine type, and refuses with
``UnsupportedHardware`` naming the feature (its trait where there is one) and
why, before anything is defined.

Each check is small and has one job; ``check`` runs them in order, and the
first refusal is the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from moorage.model import image, vocabulary
from moorage.virt import switches
from moorage.virt.driver import UnsupportedHardware
from moorage.virt.libvirt import models, tables
from moorage.virt.libvirt import switches as cpu_switches
from moorage.virt.libvirt.domcaps import DomainCapabilities
from moorage.virt.libvirt.guest import GuestConfig
from moorage.virt.libvirt.hostcaps import GuestArch
from moorage.virt.libvirt.models import GuestPlatform
from moorage.virt.libvirt.qemu_devices import DeviceList
from moorage.virt.libvirt.tables import Version
from moorage.virt.switches import Choice

# Device-model traits a flavor or image may require, and the model each names.
BUS_TRAITS: Mapping[str, str] = {vocabulary.trait_name(vocabulary.STORAGE_BUS, bus): bus
                                 for bus in image.DISK_BUSES}
VIDEO_TRAITS: Mapping[str, str] = {vocabulary.trait_name(vocabulary.GRAPHICS_MODEL, model): model
                                   for model in image.VIDEO_MODELS}
# Traits whose support depends on the guest's machine type: the host's reports
# describe its default machine type, so for these the checks below, which look
# at the guest's own, decide.
PER_PLATFORM_PREFIXES = (f"{vocabulary.STORAGE_BUS}_", f"{vocabulary.GRAPHICS_MODEL}_",
                         f"{vocabulary.VIF_MODEL}_", f"{vocabulary.SOUND_MODEL}_",
                         f"{vocabulary.VIOMMU_MODEL}_", "HW_CPU_", "COMPUTE_SECURITY_TPM_",
                         f"{vocabulary.FIRMWARE}_", switches.SECURE_BOOT)


@dataclass(frozen=True)
class Target:
    """What this host offers one guest's platform, as the checks read it."""

    virt_type: str
    # The host capabilities' entry for the guest's architecture (None: no such guests).
    arch: GuestArch | None
    # Domain capabilities for the guest's architecture, machine type and domain type.
    capabilities: DomainCapabilities | None
    # CPU features the hypervisor can give this guest (for KVM the host's, for TCG
    # what QEMU emulates).
    cpu_features: frozenset[str] = frozenset()
    # The emulator's device list (None: it could not be had, ``devices_problem`` says why).
    devices: DeviceList | None = None
    devices_problem: str | None = None
    libvirt_version: Version | None = None
    qemu_version: Version | None = None

    def platform(self, arch: str) -> GuestPlatform:
        """What ``models`` decides from for a guest of ``arch`` here."""
        machine = self.capabilities.machine if self.capabilities else None
        return GuestPlatform(arch, machine, self.devices, self.devices_problem,
                             self.libvirt_version, self.qemu_version)


Check = Callable[[GuestConfig, Target], None]


def check(config: GuestConfig, target: Target) -> None:
    """UnsupportedHardware for the first thing ``target`` cannot give ``config``."""
    for stage in CHECKS:
        stage(config, target)


def per_platform(trait: str) -> bool:
    """Whether ``trait``'s support depends on the guest's architecture and machine type."""
    return trait.startswith(PER_PLATFORM_PREFIXES)


def _refuse(feature: str, reason: str) -> UnsupportedHardware:
    return UnsupportedHardware(feature, reason)


def _offers(values: Iterable[str]) -> str:
    listed = ", ".join(values)
    return f"offers {listed}" if listed else "offers none"


def _where(config: GuestConfig, target: Target) -> str:
    """``x86_64 pc-q35-7.2``: the platform as the hypervisor named it."""
    machine = target.capabilities.machine if target.capabilities else None
    if machine is None and config.platform.machine:
        machine = config.platform.machine.value
    return f"{config.arch} {machine}" if machine else config.arch


# -- the checks, in the order they run ----------------------------------------------

def check_architecture(config: GuestConfig, target: Target) -> None:
    """The hypervisor runs guests of this architecture with this domain type: first,
    as nothing else can be asked of an architecture it cannot run."""
    domain_type = config.platform.domain_type
    if target.arch is not None and domain_type in target.arch.domains:
        return
    prefix = vocabulary.EMULATED_ARCH if config.platform.emulated else vocabulary.HW_ARCH
    raise _refuse(vocabulary.trait_name(prefix, config.arch),
                  f"{config.platform.arch} asks for {config.arch}, but this host runs no "
                  f"{domain_type} guests of that architecture")


def check_machine_type(config: GuestConfig, target: Target) -> None:
    """The machine type is one QEMU has for the architecture (before its domain
    capabilities, which libvirt cannot give for a machine type it lacks)."""
    machine = config.platform.machine
    if machine is None or target.arch is None or target.arch.canonical(machine.value):
        return
    known = sorted({m.name for m in target.arch.machines if not m.name[-1].isdigit()})
    raise _refuse(f"hw_machine_type={machine.value}",
                  f"{machine} is not a machine type of {config.arch} on this host "
                  f"(it has {', '.join(known) or 'none'}, and versioned ones)")


def check_capabilities(config: GuestConfig, target: Target) -> None:
    """The rest is checked against the domain capabilities: they must be there."""
    if target.capabilities is None:
        raise _refuse(f"virt_type={target.virt_type}",
                      f"no domain capabilities for {_where(config, target)}: this host "
                      "cannot say what its guests can have")


def check_vcpus(config: GuestConfig, target: Target) -> None:
    caps = target.capabilities
    if caps is None or caps.max_vcpus is None or config.vcpus <= caps.max_vcpus:
        return
    raise _refuse(f"vcpus={config.vcpus}",
                  f"the flavor has {config.vcpus} vCPUs; {_where(config, target)} guests "
                  f"have at most {caps.max_vcpus}")


def check_disk_bus(config: GuestConfig, target: Target) -> None:
    """The root device's bus: in upstream's table for the virt type (xen, lxc... are
    not QEMU's) and in the machine type's domain capabilities (Q35 has no IDE)."""
    caps = target.capabilities
    root = config.root
    feature = vocabulary.trait_name(vocabulary.STORAGE_BUS, root.bus.value)
    table = tables.DEVICE_BUSES.get(target.virt_type, ())
    if root.bus.value not in table:
        raise _refuse(feature, f"{root.bus} is not a disk bus of virt_type "
                               f"{target.virt_type} (it has {', '.join(table)})")
    if caps is None:
        return
    if root.bus.value not in caps.disk_buses:
        raise _refuse(feature, f"{root.bus}: {_where(config, target)} "
                               f"{_offers(caps.disk_buses)}")
    if root.device not in caps.disk_devices:
        raise _refuse(feature, f"a {root.device} device on {root.bus}: "
                               f"{_where(config, target)} has {', '.join(caps.disk_devices)}")


def check_video_model(config: GuestConfig, target: Target) -> None:
    caps = target.capabilities
    if config.video is None or caps is None or config.video.value in caps.video_models:
        return
    raise _refuse(vocabulary.trait_name(vocabulary.GRAPHICS_MODEL, config.video.value),
                  f"video model {config.video}: {_where(config, target)} "
                  f"{_offers(caps.video_models)}")


def check_required_device_traits(config: GuestConfig, target: Target) -> None:
    """A storage bus or video model trait the flavor or image requires is one this
    guest's machine type has, even if the guest does not use it (the requirement is
    on the host, and the host's reports describe only its default machine type)."""
    caps = target.capabilities
    if caps is None:
        return
    for trait in sorted(config.requested_traits):
        if trait in BUS_TRAITS:
            bus = BUS_TRAITS[trait]
            if bus not in tables.DEVICE_BUSES.get(target.virt_type, ()):
                raise _refuse(trait, f"required, but {bus} is not a disk bus of virt_type "
                                     f"{target.virt_type}")
            if bus not in caps.disk_buses:
                raise _refuse(trait, f"required, but {_where(config, target)} "
                                     f"{_offers(caps.disk_buses)}")
        elif trait in VIDEO_TRAITS and VIDEO_TRAITS[trait] not in caps.video_models:
            raise _refuse(trait, f"required, but {_where(config, target)} "
                                 f"{_offers(caps.video_models)}")


def check_vif_model(config: GuestConfig, target: Target) -> None:
    """The NIC model is a device of this emulator, on a bus of this machine type
    (``models.nic``, the decision discovery reports)."""
    vif = config.vif
    if vif is None:
        return
    feature = vocabulary.trait_name(vocabulary.VIF_MODEL, vif.value)
    if target.virt_type not in vocabulary.QEMU_VIRT_TYPES:
        table = tables.VIF_MODELS.get(target.virt_type, ())
        if vif.value not in table:
            raise _refuse(feature, f"NIC model {vif} is not one of virt_type "
                                   f"{target.virt_type} ({', '.join(table) or 'none'})")
        return
    _check_model(config, target, vif, vocabulary.VIF_MODEL, "NIC model", models.nic)


def check_sound(config: GuestConfig, target: Target) -> None:
    """The sound model's devices are this emulator's, on buses of this machine type."""
    _check_model(config, target, config.sound, vocabulary.SOUND_MODEL, "sound model",
                 models.sound)


def check_viommu(config: GuestConfig, target: Target) -> None:
    """libvirt builds this vIOMMU on this machine type (intel: q35; smmuv3: aarch64
    virt; virtio: either, libvirt >= 8.3), and the emulator has its device."""
    _check_model(config, target, config.viommu, vocabulary.VIOMMU_MODEL, "vIOMMU",
                 models.viommu)


def _check_model(config: GuestConfig, target: Target, chosen: Choice | None, prefix: str,
                 what: str, decide: Callable[[str, GuestPlatform], models.Decision]) -> None:
    """Refuse ``chosen`` where ``models`` decides this platform cannot have it (the
    decision discovery reported), naming its trait and the decision's reason."""
    if chosen is None:
        return
    decision = decide(chosen.value, target.platform(config.arch))
    if decision.supported is False:
        raise _refuse(vocabulary.trait_name(prefix, chosen.value),
                      f"{what} {chosen}: {decision.reason}")


def check_cpu_features(config: GuestConfig, target: Target) -> None:
    """Every CPU feature a requested trait switches on is one this hypervisor can give
    the guest (libvirt would refuse to start it otherwise)."""
    for feature in config.cpu_features:
        if config.arch not in cpu_switches.CPU_FEATURE_ARCHS[feature.trait]:
            family = cpu_switches.CPU_FEATURE_FAMILY[feature.trait]
            raise _refuse(feature.trait, f"an {family} CPU feature ({feature.name}) for "
                                         f"a {config.arch} guest")
        if feature.name not in target.cpu_features:
            raise _refuse(feature.trait, f"CPU feature {feature.name}: this host's "
                                         f"{config.platform.domain_type} guests cannot have it")


def check_tpm(config: GuestConfig, target: Target) -> None:
    """An emulated TPM (swtpm) of the model and version asked for."""
    caps = target.capabilities
    tpm = config.tpm
    if tpm is None or caps is None:
        return
    version_trait = tables.TPM_VERSION_TRAITS[tpm.version.value]
    model_trait = tables.TPM_MODEL_TRAITS[tpm.model.value]
    if "emulator" not in caps.tpm_backends:
        raise _refuse(version_trait, f"TPM {tpm.version}: {_where(config, target)} has no "
                                     f"emulated TPM (swtpm); TPM backends: "
                                     f"{', '.join(caps.tpm_backends) or 'none'}")
    if tpm.model.value not in caps.tpm_models:
        raise _refuse(model_trait, f"TPM model {tpm.model}: {_where(config, target)} "
                                   f"{_offers(caps.tpm_models)}")
    versions = caps.tpm_versions
    if versions is not None and tpm.version.value not in versions:
        raise _refuse(version_trait, f"TPM version {tpm.version}: {_where(config, target)} "
                                     f"{_offers(versions)}")


def check_firmware(config: GuestConfig, target: Target) -> None:
    """UEFI firmware libvirt can select for this machine type, with secure boot
    when the guest cannot do without it."""
    caps = target.capabilities
    firmware = config.firmware
    if caps is None:
        return
    if firmware.type.value == "bios":
        if firmware.type.source == "default":
            return  # not asked for: the board boots what it has
        decision = models.bios(caps, config.arch, target.virt_type in vocabulary.QEMU_VIRT_TYPES)
        if decision.supported is False:
            raise _refuse(tables.FIRMWARE_TRAITS["bios"],
                          f"BIOS ({firmware.type.source}): {_where(config, target)} has "
                          f"{decision.reason}")
        return
    if firmware.type.value != "uefi":
        return
    if "efi" not in caps.firmware.autoselect:
        raise _refuse(tables.FIRMWARE_TRAITS["uefi"],
                      f"UEFI ({firmware.type.source}): {_where(config, target)} has no UEFI "
                      "firmware libvirt can select (no OVMF/edk2 descriptors)")
    if firmware.secure_boot_required and not caps.firmware.secure_boot:
        secure = firmware.secure_boot or Choice("on", "secure boot")
        raise _refuse(switches.SECURE_BOOT,
                      f"secure boot ({secure.source}): {_where(config, target)} has no "
                      "secure-boot firmware (Q35 and an edk2 secure-boot build are needed)")


CHECKS: tuple[Check, ...] = (
    check_architecture,
    check_machine_type,
    check_capabilities,
    check_vcpus,
    check_disk_bus,
    check_video_model,
    check_required_device_traits,
    check_vif_model,
    check_sound,
    check_viommu,
    check_cpu_features,
    check_tpm,
    check_firmware,
)
