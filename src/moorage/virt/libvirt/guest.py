"""From a flavor, an image and the traits they require to a libvirt domain document.

Three pure steps, each testable without a hypervisor:

1. ``platform``: the guest's architecture, machine type and domain type, from the
   image and ``[libvirt]`` options (the host is asked for nothing yet);
2. ``resolve``: every device model and feature the guest gets, from the image's
   ``hw_*`` properties, upstream's defaults (``defaults.py``) and the requested
   traits that switch features on (``moorage.virt.switches`` and
   ``switches.py`` here for the CPU), each with where it came
   from, so that a late check (``checks.py``) can say why it refuses;
3. ``domain_xml``: the ``<domain>`` document, built with lxml.

Only QEMU guests (``virt_type`` kvm or qemu) are built. Networking is user-mode
(slirp): guests reach out but nothing is plumbed on the host.
"""

from __future__ import annotations

import logging
import uuid as uuid_module
from collections.abc import Mapping
from dataclasses import dataclass

from lxml import etree

from moorage.model import vocabulary
from moorage.model.image import Image
from moorage.virt import switches
from moorage.virt.driver import Guest, UnsupportedHardware
from moorage.virt.libvirt import defaults
from moorage.virt.libvirt import switches as cpu_switches
from moorage.virt.libvirt.domcaps import DomainCapabilities
from moorage.virt.switches import Choice, FlavorImageConflict, chosen_model, single

LOG = logging.getLogger(__name__)

# Our own element under <metadata>: which instance, flavor and image a domain is.
METADATA_NS = "https://moorage.dev/xmlns/libvirt/instance/1.0"
# Where upstream's MAC addresses start (OpenStack's OUI).
MAC_PREFIX = "fa:16:3e"
# The device name prefix of each bus (vda, hda, sda...).
DEV_PREFIXES: Mapping[str, str] = {
    "virtio": "vd", "ide": "hd", "sata": "sd", "scsi": "sd", "usb": "sd", "fdc": "fd",
    "xen": "xvd", "uml": "ubd",
}
# CPU model of an emulated architecture, which has no host model to copy.
EMULATED_CPU_MODELS: Mapping[str, str] = {"x86_64": "qemu64", "i686": "qemu32",
                                          "aarch64": "max", "ppc64le": "POWER8"}


@dataclass(frozen=True)
class Settings:
    """The ``[libvirt]`` and ``[DEFAULT]`` options guest building reads."""

    virt_type: str
    # arch -> machine type, from [libvirt] hw_machine_type
    machine_types: Mapping[str, str]
    instances_path: str
    # The root disk's format on disk: qcow2 or raw.
    disk_format: str = "qcow2"


@dataclass(frozen=True)
class Platform:
    """What the guest is before any device: architecture, board, accelerator."""

    arch: Choice
    # True when the image asks QEMU to emulate another architecture.
    emulated: bool
    machine: Choice | None
    domain_type: str


@dataclass(frozen=True)
class Disk:
    device: str  # disk, cdrom, floppy
    bus: Choice
    target: str  # vda, hda, sdb...
    format: str  # qcow2, raw
    path: str


@dataclass(frozen=True)
class Tpm:
    model: Choice
    version: Choice


@dataclass(frozen=True)
class Firmware:
    type: Choice  # bios or uefi
    # None: not a question (BIOS); else whether secure boot is on, and why.
    secure_boot: Choice | None = None
    # The secure boot the guest cannot do without (a trait or os_secure_boot=required).
    secure_boot_required: bool = False


@dataclass(frozen=True)
class CpuFeature:
    trait: str
    name: str


@dataclass(frozen=True)
class GuestConfig:
    """Everything ``domain_xml`` writes and ``checks`` verifies, each choice with its reason."""

    uuid: str
    name: str  # the libvirt domain name
    title: str  # the instance's display name
    node: str
    flavor_name: str
    image_id: str
    virt_type: str
    platform: Platform
    emulator: str | None
    vcpus: int
    memory_mb: int
    root: Disk
    console_log: str
    video: Choice | None
    vif: Choice | None
    # Packed virtqueues on a virtio NIC: the trait that asked for them.
    packed_ring: str | None
    sound: Choice | None
    # The vIOMMU model as the guest gets it ("auto" already made concrete, where it can be).
    viommu: Choice | None
    mac: str
    firmware: Firmware
    tpm: Tpm | None
    cpu_mode: str  # host-model, or custom for emulated architectures
    cpu_model: str | None
    cpu_features: tuple[CpuFeature, ...]
    hpet: Choice | None  # None: no HPET element; else present yes/no
    kvm_timers: bool
    clock_offset: str
    scsi_model: str | None
    # Every trait the flavor and image require (the checks hold some to the platform).
    requested_traits: frozenset[str] = frozenset()
    warnings: tuple[str, ...] = ()

    @property
    def arch(self) -> str:
        return self.platform.arch.value

    @property
    def is_x86(self) -> bool:
        return self.arch in defaults.X86


def domain_name(instance_uuid: str) -> str:
    """The libvirt name of an instance's domain (upstream: ``instance-%08x``)."""
    return f"instance-{instance_uuid}"


def mac_address(instance_uuid: str) -> str:
    """A stable MAC for the instance's one NIC: OpenStack's prefix and three bytes of
    its uuid."""
    tail = uuid_module.UUID(instance_uuid).bytes[-3:]
    return ":".join([MAC_PREFIX, *(f"{b:02x}" for b in tail)])


# -- 1. platform --------------------------------------------------------------------

def platform(image: Image, settings: Settings, host_arch: str) -> Platform:
    """Architecture (``hw_emulation_architecture``, else ``hw_architecture``, else the
    host's); machine type (the image's ``hw_machine_type``, else ``[libvirt]
    hw_machine_type`` for the architecture, else upstream's board for it); domain type."""
    props = image.properties
    if settings.virt_type not in vocabulary.QEMU_VIRT_TYPES:
        raise UnsupportedHardware(
            f"virt_type={settings.virt_type}",
            "Moorage builds guests for QEMU only ([libvirt] virt_type kvm or qemu)")
    if props.hw_emulation_architecture:
        arch = Choice(props.hw_emulation_architecture, "hw_emulation_architecture")
    elif props.hw_architecture:
        arch = Choice(props.hw_architecture, "hw_architecture")
    else:
        arch = Choice(host_arch, "the host's architecture")
    emulated = props.hw_emulation_architecture is not None
    if props.hw_machine_type:
        machine: Choice | None = Choice(props.hw_machine_type, "hw_machine_type")
    elif arch.value in settings.machine_types:
        machine = Choice(settings.machine_types[arch.value],
                         f"[libvirt] hw_machine_type for {arch.value}")
    else:
        default = defaults.MACHINE_TYPES.get(arch.value)
        machine = Choice(default, f"default for {arch.value}") if default else None
    return Platform(arch, emulated, machine,
                    defaults.domain_type(settings.virt_type, emulated))


# -- 2. resolve -----------------------------------------------------------------------

def resolve(guest: Guest, settings: Settings, where: Platform,
            caps: DomainCapabilities | None, emulator: str | None,
            instance_dir: str, auto_viommu: str | None = None) -> GuestConfig:
    """Every choice for ``guest`` on a host whose domain capabilities for its
    architecture and machine type are ``caps`` (they only decide optional secure
    boot; the checks decide whether the rest is possible). The root disk and the
    console log live in ``instance_dir``; ``auto_viommu`` is what ``auto`` becomes
    on this platform (None: no model fits, and the checks refuse it)."""
    props = guest.image.properties
    requested = guest.requested_traits
    arch = where.arch.value
    machine = where.machine.value if where.machine else None
    warnings: list[str] = []

    root = _root_disk(guest.image, settings, arch, machine, f"{instance_dir}/disk")
    video = (chosen_model("hw_video_model", props.hw_video_model, requested)
             or _default(defaults.video_model(settings.virt_type, arch), f"default for {arch}"))
    vif = (chosen_model("hw_vif_model", props.hw_vif_model, requested)
           or _default(defaults.vif_model(settings.virt_type),
                       f"default for {settings.virt_type}"))
    packed_ring = switches.VIRTIO_PACKED if switches.VIRTIO_PACKED in requested else None
    if packed_ring and (vif is None or vif.value != "virtio"):
        warnings.append(f"{packed_ring} asks for packed virtqueues, which only virtio "
                        f"devices have; the NIC is {vif or 'none'}")
    sound = chosen_model("hw_sound_model", props.hw_sound_model, requested)
    viommu = chosen_model("hw_viommu_model", props.hw_viommu_model, requested)
    if viommu is not None and viommu.value == "auto" and auto_viommu is not None:
        viommu = Choice(auto_viommu, f"auto ({viommu.source})")

    features = tuple(CpuFeature(t, f) for t, f in cpu_switches.cpu_features(requested).items())
    emulated_model = EMULATED_CPU_MODELS.get(arch) if where.emulated else None

    hpet: Choice | None = None
    kvm_timers = where.domain_type == "kvm"
    if arch in defaults.X86:
        if props.hw_time_hpet:
            hpet = Choice("yes", "hw_time_hpet")
        elif kvm_timers:
            hpet = Choice("no", "default for kvm")
    elif props.hw_time_hpet:
        warnings.append(f"hw_time_hpet ignored: HPET is an x86 timer and the guest is {arch}")

    return GuestConfig(
        uuid=guest.uuid,
        name=domain_name(guest.uuid),
        title=guest.name,
        node=guest.node,
        flavor_name=guest.flavor.name,
        image_id=guest.image.id,
        virt_type=settings.virt_type,
        platform=where,
        emulator=emulator,
        vcpus=guest.flavor.vcpus,
        memory_mb=guest.flavor.memory_mb,
        root=root,
        console_log=f"{instance_dir}/console.log",
        video=video,
        vif=vif,
        packed_ring=packed_ring,
        sound=sound,
        viommu=viommu,
        mac=mac_address(guest.uuid),
        firmware=_firmware(guest.image, requested, caps),
        tpm=_tpm(guest.image, requested),
        cpu_mode="custom" if emulated_model else "host-model",
        cpu_model=emulated_model,
        cpu_features=features,
        hpet=hpet,
        kvm_timers=kvm_timers,
        clock_offset="localtime" if props.other.get("os_type") == "windows" else "utc",
        scsi_model=props.hw_scsi_model,
        requested_traits=requested,
        warnings=tuple(warnings),
    )


def _default(value: str | None, source: str) -> Choice | None:
    return Choice(value, source) if value else None


def _root_disk(image: Image, settings: Settings, arch: str, machine: str | None,
               path: str) -> Disk:
    """The root disk: a CD-ROM for ISO images (on the CD-ROM bus), else a disk."""
    props = image.properties
    if image.disk_format == "iso":
        bus = (Choice(props.hw_cdrom_bus, "hw_cdrom_bus") if props.hw_cdrom_bus
               else Choice(defaults.cdrom_bus(settings.virt_type, arch, machine),
                           f"CD-ROM default for {arch} {machine or ''}".rstrip()))
        return Disk("cdrom", bus, _target(bus.value), "raw", path)
    bus = (Choice(props.hw_disk_bus, "hw_disk_bus") if props.hw_disk_bus
           else Choice(defaults.disk_bus(settings.virt_type),
                       f"default for {settings.virt_type}"))
    # A disk on the floppy controller is a floppy drive.
    device = "floppy" if bus.value == "fdc" else "disk"
    return Disk(device, bus, _target(bus.value), settings.disk_format, path)


def _target(bus: str) -> str:
    return DEV_PREFIXES.get(bus, "sd") + "a"


def _firmware(image: Image, requested: frozenset[str],
              caps: DomainCapabilities | None) -> Firmware:
    """UEFI from ``hw_firmware_type`` or a firmware trait; secure boot from
    ``os_secure_boot`` or the secure-boot trait (which implies UEFI)."""
    props = image.properties
    wanted: list[Choice] = []
    if props.hw_firmware_type:
        wanted.append(Choice(props.hw_firmware_type, "hw_firmware_type"))
    wanted += [Choice(kind, trait) for trait, kind in switches.firmware_traits(requested).items()]
    secure_trait = switches.SECURE_BOOT in requested
    secure_prop = props.os_secure_boot
    if secure_trait and secure_prop == "disabled":
        raise FlavorImageConflict(
            f"{switches.SECURE_BOOT} is required but the image says os_secure_boot=disabled")
    required = secure_trait or secure_prop == "required"
    if required:
        wanted.append(Choice("uefi", switches.SECURE_BOOT if secure_trait
                             else "os_secure_boot=required"))
    kinds = {c.value for c in wanted}
    if len(kinds) > 1:
        raise FlavorImageConflict(
            "conflicting firmware: " + ", ".join(str(c) for c in wanted))
    kind = wanted[0] if wanted else Choice("bios", "default")
    if kind.value != "uefi":
        return Firmware(kind)
    if required:
        return Firmware(kind, Choice("on", wanted[-1].source), secure_boot_required=True)
    if secure_prop == "optional" and caps is not None and caps.firmware.secure_boot:
        return Firmware(kind, Choice("on", "os_secure_boot=optional, offered by the host"))
    reason = f"os_secure_boot={secure_prop}" if secure_prop else "not asked for"
    return Firmware(kind, Choice("off", reason))


def _tpm(image: Image, requested: frozenset[str]) -> Tpm | None:
    """An emulated TPM when ``hw_tpm_version``/``hw_tpm_model`` or a TPM trait asks for
    one. Version 2.0 and model tpm-tis unless said otherwise (upstream's defaults);
    tpm-crb only exists in TPM 2.0."""
    props = image.properties
    trait_list = switches.tpm_traits(requested)
    if not (props.hw_tpm_version or props.hw_tpm_model or trait_list):
        return None
    version = single("TPM version", [
        *([Choice(props.hw_tpm_version, "hw_tpm_version")] if props.hw_tpm_version else []),
        *(Choice(switches.TPM_VERSIONS[t], t) for t in trait_list if t in switches.TPM_VERSIONS),
    ])
    model = single("TPM model", [
        *([Choice(props.hw_tpm_model, "hw_tpm_model")] if props.hw_tpm_model else []),
        *(Choice(switches.TPM_MODELS[t], t) for t in trait_list if t in switches.TPM_MODELS),
    ])
    asked_by = trait_list[0] if trait_list else "hw_tpm_version/hw_tpm_model"
    if model is None:
        model = Choice("tpm-tis", f"default TPM model ({asked_by})")
    if version is None:
        version = Choice("2.0", f"default TPM version ({asked_by})")
    if model.value == "tpm-crb" and version.value != "2.0":
        raise FlavorImageConflict(f"TPM model {model} needs TPM 2.0, not version {version}")
    return Tpm(model, version)


# -- 3. domain_xml ----------------------------------------------------------------------

def domain_xml(config: GuestConfig) -> etree._Element:
    """The ``<domain>`` element of ``config``, in the order libvirt itself writes."""
    domain = etree.Element("domain", type=config.platform.domain_type)
    _text(domain, "name", config.name)
    _text(domain, "uuid", config.uuid)
    _text(domain, "title", config.title)
    domain.append(_metadata(config))
    _text(domain, "memory", str(config.memory_mb), unit="MiB")
    _text(domain, "vcpu", str(config.vcpus))
    domain.append(_os(config))
    features = etree.SubElement(domain, "features")
    if config.is_x86:
        etree.SubElement(features, "acpi")
        etree.SubElement(features, "apic")
    if config.firmware.secure_boot and config.firmware.secure_boot.value == "on":
        # OVMF's secure boot keeps its variables in SMM-protected flash.
        etree.SubElement(features, "smm", state="on")
    domain.append(_cpu(config))
    domain.append(_clock(config))
    _text(domain, "on_poweroff", "destroy")
    _text(domain, "on_reboot", "restart")
    _text(domain, "on_crash", "destroy")
    domain.append(_devices(config))
    return domain


def to_string(document: etree._Element) -> str:
    return str(etree.tostring(document, pretty_print=True, encoding="unicode"))


def _text(parent: etree._Element, tag: str, text: str, **attributes: str) -> etree._Element:
    element = etree.SubElement(parent, tag, **attributes)
    element.text = text
    return element


def _metadata(config: GuestConfig) -> etree._Element:
    metadata = etree.Element("metadata")
    instance = etree.SubElement(metadata, f"{{{METADATA_NS}}}instance",
                                nsmap={"moorage": METADATA_NS})
    _text(instance, f"{{{METADATA_NS}}}name", config.title)
    _text(instance, f"{{{METADATA_NS}}}node", config.node)
    etree.SubElement(instance, f"{{{METADATA_NS}}}flavor", name=config.flavor_name)
    etree.SubElement(instance, f"{{{METADATA_NS}}}image", id=config.image_id)
    return metadata


# The PC architectures, whose BIOS guests can have QEMU's ISA Serial Graphics Adapter.
_SERIAL_BIOS_ARCHES = frozenset({"x86_64", "i686"})


def _os(config: GuestConfig) -> etree._Element:
    firmware = config.firmware
    uefi = firmware.type.value == "uefi"
    os = etree.Element("os", firmware="efi") if uefi else etree.Element("os")
    machine = config.platform.machine
    os_type = etree.SubElement(os, "type", arch=config.arch)
    if machine:
        os_type.set("machine", machine.value)
    os_type.text = "hvm"
    if uefi and firmware.secure_boot is not None:
        # Firmware autoselection (libvirt >= 7.2): libvirt picks the OVMF build and its
        # variables store from the firmware descriptors that have these features.
        secure = firmware.secure_boot.value == "on"
        selection = etree.SubElement(os, "firmware")
        if secure:
            etree.SubElement(selection, "feature", enabled="yes", name="enrolled-keys")
        etree.SubElement(selection, "feature", enabled="yes" if secure else "no",
                         name="secure-boot")
        if secure:
            etree.SubElement(os, "loader", secure="yes")
    boot = {"disk": "hd", "cdrom": "cdrom", "floppy": "fd"}[config.root.device]
    etree.SubElement(os, "boot", dev=boot)
    if not uefi and config.arch in _SERIAL_BIOS_ARCHES:
        # SeaBIOS writes to the screen only: the Serial Graphics Adapter copies it to
        # the serial port, so the console log (os-getConsoleOutput) shows the boot.
        etree.SubElement(os, "bios", useserial="yes")
    return os


def _cpu(config: GuestConfig) -> etree._Element:
    """host-model (upstream's default for QEMU guests) or, for an emulated
    architecture, that architecture's generic model; plus every CPU feature a
    requested trait asks for, required."""
    if config.cpu_mode == "custom":
        cpu = etree.Element("cpu", mode="custom", match="exact")
        _text(cpu, "model", config.cpu_model or "max", fallback="forbid")
    else:
        cpu = etree.Element("cpu", mode=config.cpu_mode)
    for feature in config.cpu_features:
        etree.SubElement(cpu, "feature", policy="require", name=feature.name)
    return cpu


def _clock(config: GuestConfig) -> etree._Element:
    """UTC (local time for Windows); under KVM upstream's timers (PIT delayed, RTC
    catching up, HPET as the image says); under TCG only an HPET that was asked for."""
    clock = etree.Element("clock", offset=config.clock_offset)
    if config.kvm_timers:
        etree.SubElement(clock, "timer", name="pit", tickpolicy="delay")
        etree.SubElement(clock, "timer", name="rtc", tickpolicy="catchup")
    if config.hpet is not None:
        etree.SubElement(clock, "timer", name="hpet", present=config.hpet.value)
    return clock


def _devices(config: GuestConfig) -> etree._Element:
    devices = etree.Element("devices")
    if config.emulator:
        _text(devices, "emulator", config.emulator)
    root = config.root
    disk = etree.SubElement(devices, "disk", type="file", device=root.device)
    etree.SubElement(disk, "driver", name="qemu", type=root.format)
    etree.SubElement(disk, "source", file=root.path)
    etree.SubElement(disk, "target", dev=root.target, bus=root.bus.value)
    if root.device == "cdrom":
        etree.SubElement(disk, "readonly")
    if root.bus.value == "scsi" and config.scsi_model:
        etree.SubElement(devices, "controller", type="scsi", index="0", model=config.scsi_model)
    if config.vif is not None:
        interface = etree.SubElement(devices, "interface", type="user")
        etree.SubElement(interface, "mac", address=config.mac)
        etree.SubElement(interface, "model", type=config.vif.value)
        virtio = config.vif.value == "virtio"
        driver: dict[str, str] = {}
        if virtio and config.platform.domain_type == "qemu":
            # Without KVM there is no vhost-net: the device is QEMU's own (as upstream).
            driver["name"] = "qemu"
        if virtio and config.packed_ring:
            driver["packed"] = "on"
        if driver:
            etree.SubElement(interface, "driver", **driver)
    # Boot messages and the guest's console go to a file, as upstream's console.log.
    serial = etree.SubElement(devices, "serial", type="file")
    etree.SubElement(serial, "source", path=config.console_log)
    if config.tpm is not None:
        tpm = etree.SubElement(devices, "tpm", model=config.tpm.model.value)
        etree.SubElement(tpm, "backend", type="emulator", version=config.tpm.version.value)
    if config.sound is not None:
        etree.SubElement(devices, "sound", model=config.sound.value)
    if config.video is not None:
        video = etree.SubElement(devices, "video")
        etree.SubElement(video, "model", type=config.video.value)
    etree.SubElement(devices, "memballoon", model="virtio")
    if config.viommu is not None:
        etree.SubElement(devices, "iommu", model=config.viommu.value)
    return devices


def log_warnings(config: GuestConfig) -> None:
    for warning in config.warnings:
        LOG.warning("instance %s: %s", config.uuid, warning)
