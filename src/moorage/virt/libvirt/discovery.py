"""From what libvirt says about a host to the traits the host's provider carries.

``HostFacts`` is everything discovery reads: the host's architecture, the domain
capabilities of the machine type each guest architecture uses, the virt type and
the libvirt/QEMU versions. It comes from a live hypervisor (``host.probe``) or
from domain capabilities files (``facts_from_files``, for ``moorage compute
traits --domcaps``); the functions below are pure and do not care which.

How machine types combine (a deliberate departure from upstream, which takes the
union over every architecture and every canonical machine type): device-model
traits (storage buses, video models, firmware, TPM) describe the host's own
architecture at the machine type its guests get, ``[libvirt] hw_machine_type``
for that architecture or else libvirt's default. A trait on the provider cannot
say "IDE, but only for i686 guests", and a q35 host must not claim IDE because
its pc machine type (or its i686 emulator) has it. Other guest architectures
count only for ``COMPUTE_ARCH_*`` and the vIOMMU models tied to them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import os_traits

from moorage.model import image, vocabulary
from moorage.virt.libvirt import domcaps, hostcaps, models, qemu_devices, switches, tables
from moorage.virt.libvirt.domcaps import DomainCapabilities, HostModelCpu
from moorage.virt.libvirt.models import Decision, GuestPlatform
from moorage.virt.libvirt.qemu_devices import DeviceList, DeviceProbeError
from moorage.virt.libvirt.tables import Version, VersionGate, version_text
from moorage.virt.report import Source, TraitReport


@dataclass(frozen=True)
class GuestMachine:
    """The domain capabilities discovery reads for one guest architecture."""

    arch: str
    # The machine type as configured (q35) or, for libvirt's default, its canonical name.
    name: str
    configured: bool
    capabilities: DomainCapabilities
    # The emulator's own device list (NICs, sound, vIOMMU); None with the reason in
    # ``devices_problem`` when it could not be had.
    devices: DeviceList | None = None
    devices_problem: str | None = None
    # The CPU features its guests can be given (the host-model CPU as libvirt expands
    # it); None when unknown, with the reason (only the host architecture's are asked).
    cpu_features: frozenset[str] | None = None
    cpu_problem: str | None = None
    # Without the expansion, from a file: the host-model CPU as the domain capabilities
    # name it, whose required and disabled features alone are known.
    cpu_named: HostModelCpu | None = None

    @property
    def label(self) -> str:
        """How a report's detail names it: ``x86_64 q35 domain capabilities``."""
        default = "" if self.configured else " (default machine type)"
        return f"{self.arch} {self.name}{default} domain capabilities"


@dataclass(frozen=True)
class HostFacts:
    """What discovery needs to know about one host, however it was learned."""

    virt_type: str
    host_arch: str
    # guest architecture -> the machine type its guests get; empty when the
    # hypervisor has no domain capabilities (LXC).
    guests: Mapping[str, GuestMachine] = field(default_factory=dict)
    # None when unknown (facts read from files); version-gated traits are then
    # left unsaid rather than guessed.
    libvirt_version: Version | None = None
    qemu_version: Version | None = None
    # Where the host architecture came from, for its report.
    arch_source: Source = Source.HOST_CAPABILITIES
    arch_detail: str = "host CPU architecture"

    @property
    def host_guest(self) -> GuestMachine | None:
        return self.guests.get(self.host_arch)

    def platform(self, guest: GuestMachine) -> GuestPlatform:
        """What ``models`` decides from for ``guest``'s architecture and machine type."""
        return GuestPlatform(guest.arch, guest.capabilities.machine, guest.devices,
                             guest.devices_problem, self.libvirt_version, self.qemu_version)

    @property
    def runs_qemu(self) -> bool:
        return self.virt_type in vocabulary.QEMU_VIRT_TYPES

    def versions(self) -> str:
        known = []
        if self.libvirt_version:
            known.append(f"libvirt {version_text(self.libvirt_version)}")
        if self.qemu_version:
            known.append(f"QEMU {version_text(self.qemu_version)}")
        return ", ".join(known) or "unknown versions"

    def allows(self, gate: VersionGate) -> bool | None:
        """Whether this host has what ``gate`` needs; None when its versions are unknown."""
        if gate.needs_qemu and not self.runs_qemu:
            return False
        if self.libvirt_version is None or (gate.qemu and self.qemu_version is None):
            return None
        if gate.libvirt and self.libvirt_version < gate.libvirt:
            return False
        return not (gate.qemu and self.qemu_version and self.qemu_version < gate.qemu)


@dataclass(frozen=True)
class Finding:
    """A capability (``supports_*``) value and where it came from."""

    supported: bool
    source: Source
    detail: str


class MachineTypeError(ValueError):
    """``[libvirt] hw_machine_type`` that cannot be used."""


def machine_types(entries: Sequence[str]) -> dict[str, str]:
    """``[libvirt] hw_machine_type`` (``x86_64=q35`` entries) as arch -> machine type."""
    chosen = {}
    for entry in entries:
        arch, sep, machine = entry.partition("=")
        arch, machine = arch.strip().lower(), machine.strip()
        if not sep or not arch or not machine:
            raise MachineTypeError(
                f"[libvirt] hw_machine_type: {entry!r} is not ARCH=MACHINE (x86_64=q35)")
        chosen[image.ARCHITECTURE_ALIASES.get(arch, arch)] = machine
    return chosen


# -- the capability table ---------------------------------------------------------

def static_capabilities(virt_type: str, images_type: str,
                        force_raw_images: bool) -> dict[str, Finding]:
    """Upstream's libvirt capabilities that depend on the configuration only."""
    values = dict.fromkeys((
        "has_imagecache", "supports_evacuate", "supports_attach_interface",
        "supports_device_tagging", "supports_tagged_attach_interface",
        "supports_tagged_attach_volume", "supports_extend_volume", "supports_multiattach",
        "supports_trusted_certs", "supports_pcpus", "supports_accelerators",
        "supports_bfv_rescue", "supports_socket_pci_numa_affinity",
        "supports_image_type_aki", "supports_image_type_ari", "supports_image_type_ami",
        "supports_image_type_raw", "supports_image_type_iso",
    ), True)
    # Moorage has no encrypted ephemeral disks and no file-backed guest memory.
    values.update(dict.fromkeys((
        "supports_migrate_to_same_host", "supports_ephemeral_encryption",
        "supports_ephemeral_encryption_luks", "supports_mem_backing_file",
    ), False))
    found = {key: Finding(value, Source.DRIVER_TABLE, key) for key, value in values.items()}
    raw_only = images_type in ("rbd", "lvm") and not force_raw_images
    found["supports_image_type_qcow2"] = (
        Finding(False, Source.CONFIGURATION,
                f"[libvirt] images_type = {images_type} with [DEFAULT] force_raw_images "
                "= False takes raw images only")
        if raw_only else Finding(True, Source.DRIVER_TABLE, "supports_image_type_qcow2"))
    found["supports_image_type_ploop"] = (
        Finding(True, Source.CONFIGURATION, "[libvirt] virt_type = parallels")
        if virt_type == "parallels"
        else Finding(False, Source.CONFIGURATION,
                     f"[libvirt] virt_type = {virt_type}: ploop needs parallels"))
    return found


def host_capabilities(facts: HostFacts) -> dict[str, Finding]:
    """The capabilities upstream's init_host learns from the hypervisor. A version-gated
    one is left out when the versions are unknown."""
    found = {}
    guest = facts.host_guest
    if guest is None:
        found["supports_secure_boot"] = Finding(
            False, Source.DOMAIN_CAPABILITIES, _no_domcaps(facts))
        found["supports_vtpm"] = found["supports_secure_boot"]
    else:
        firmware = guest.capabilities.firmware
        found["supports_secure_boot"] = Finding(
            firmware.secure_boot, Source.DOMAIN_CAPABILITIES,
            f"{guest.label}: loader secure={','.join(firmware.loader_secure) or 'none'}")
        found["supports_vtpm"] = Finding(
            "emulator" in guest.capabilities.tpm_backends, Source.DOMAIN_CAPABILITIES,
            f"{guest.label}: TPM backends {_listed(guest.capabilities.tpm_backends)}")
    for key, gate in tables.HOST_CAPABILITY_GATES.items():
        allowed = facts.allows(gate)
        if allowed is not None:
            found[key] = Finding(allowed, Source.HYPERVISOR, _gate_detail(facts, gate))
    return found


# -- device models and the rest ---------------------------------------------------

def device_reports(facts: HostFacts) -> list[TraitReport]:
    """Every device-model, architecture and security trait the driver owns, in
    upstream's order (architecture, packed virtqueue, storage bus, video, NIC,
    vIOMMU, TPM, sound) with firmware last."""
    stages: tuple[Callable[[HostFacts], Iterable[TraitReport]], ...] = (
        arch_reports, packed_virtqueue_reports, storage_bus_reports, video_model_reports,
        vif_model_reports, viommu_reports, tpm_reports, sound_reports, firmware_reports,
        cpu_reports,
    )
    return [report for stage in stages for report in stage(facts)]


def arch_reports(facts: HostFacts) -> list[TraitReport]:
    """HW_ARCH_<host> and COMPUTE_ARCH_<guest arch> for the guests QEMU emulates. As
    upstream, only architectures os-traits names are reported, and only as True."""
    reports = []
    host_trait = vocabulary.trait_name(vocabulary.HW_ARCH, facts.host_arch)
    if host_trait in vocabulary.KNOWN:
        reports.append(TraitReport(host_trait, True, facts.arch_source, facts.arch_detail))
    for arch, guest in sorted(facts.guests.items()):
        trait = vocabulary.trait_name(vocabulary.EMULATED_ARCH, arch)
        if trait in vocabulary.KNOWN:
            reports.append(TraitReport(trait, True, Source.DOMAIN_CAPABILITIES, guest.label))
    return reports


def packed_virtqueue_reports(facts: HostFacts) -> list[TraitReport]:
    return [TraitReport(os_traits.COMPUTE_NET_VIRTIO_PACKED, True, Source.DRIVER_TABLE,
                        "every supported libvirt and QEMU")]


def storage_bus_reports(facts: HostFacts) -> list[TraitReport]:
    """QEMU's buses for the machine type in use; the static table for other virt types."""
    universe = sorted({bus for buses in tables.DEVICE_BUSES.values() for bus in buses})
    if not facts.runs_qemu:
        supported = tables.DEVICE_BUSES.get(facts.virt_type, ())
        detail = f"disk buses of virt_type {facts.virt_type}"
        return [TraitReport(vocabulary.device_trait(vocabulary.STORAGE_BUS, bus), bus in supported,
                            Source.DRIVER_TABLE, detail) for bus in universe]
    return _from_domcaps(facts, vocabulary.STORAGE_BUS, universe, lambda c: c.disk_buses)


def video_model_reports(facts: HostFacts) -> list[TraitReport]:
    """Video models from the domain capabilities, for every virt type (there is no table)."""
    return _from_domcaps(facts, vocabulary.GRAPHICS_MODEL, image.VIDEO_MODELS,
                         lambda c: c.video_models)


def vif_model_reports(facts: HostFacts) -> list[TraitReport]:
    """Every NIC model os-traits names: for QEMU, whether the emulator has its device on
    a bus of the host's machine type (``models.nic``); otherwise the virt type's table."""
    if not facts.runs_qemu:
        table = tables.VIF_MODELS.get(facts.virt_type, ())
        return [TraitReport(vocabulary.device_trait(vocabulary.VIF_MODEL, model), model in table,
                            Source.DRIVER_TABLE, f"NIC models of virt_type {facts.virt_type}")
                for model in models.NIC_MODELS]
    return _decided(facts, vocabulary.VIF_MODEL, models.NIC_MODELS, models.nic)


def viommu_reports(facts: HostFacts) -> list[TraitReport]:
    """Every vIOMMU model, as libvirt would build it on the host's machine type."""
    names = [*models.VIOMMU_MODELS, "auto"]
    if not facts.runs_qemu:
        return _not_qemu(facts, vocabulary.VIOMMU_MODEL, names, "vIOMMU")
    return _decided(facts, vocabulary.VIOMMU_MODEL, names, models.viommu)


def tpm_reports(facts: HostFacts) -> list[TraitReport]:
    """TPM interface models and versions a guest's emulated TPM (swtpm) can have.

    Upstream switches these on with ``[libvirt] swtpm_enabled``; here the domain
    capabilities decide: without the emulator backend no guest can have a vTPM.
    """
    names = [*tables.TPM_MODEL_TRAITS.values(), *tables.TPM_VERSION_TRAITS.values()]
    guest = facts.host_guest
    if guest is None:
        return [TraitReport(t, False, Source.DOMAIN_CAPABILITIES, _no_domcaps(facts))
                for t in names]
    caps = guest.capabilities
    if "emulator" not in caps.tpm_backends:
        detail = f"{guest.label}: no TPM emulator backend (swtpm)"
        return [TraitReport(t, False, Source.DOMAIN_CAPABILITIES, detail) for t in names]
    reports = [TraitReport(trait, model in caps.tpm_models, Source.DOMAIN_CAPABILITIES,
                           f"{guest.label}: TPM models {_listed(caps.tpm_models)}")
               for model, trait in tables.TPM_MODEL_TRAITS.items()]
    versions = caps.tpm_versions
    for version, trait in tables.TPM_VERSION_TRAITS.items():
        if versions is None:  # libvirt < 8.6.0 does not list them; upstream assumes both
            reports.append(TraitReport(trait, True, Source.DOMAIN_CAPABILITIES,
                                       f"{guest.label}: TPM versions not listed"))
        else:
            reports.append(TraitReport(trait, version in versions, Source.DOMAIN_CAPABILITIES,
                                       f"{guest.label}: TPM versions {_listed(versions)}"))
    return reports


def sound_reports(facts: HostFacts) -> list[TraitReport]:
    """Every sound model: its devices in the emulator's list (the PC speaker: a PC
    machine type), virtio also by libvirt's version."""
    if not facts.runs_qemu:
        return _not_qemu(facts, vocabulary.SOUND_MODEL, models.SOUND_MODELS, "sound")
    return _decided(facts, vocabulary.SOUND_MODEL, models.SOUND_MODELS, models.sound)


def firmware_reports(facts: HostFacts) -> list[TraitReport]:
    """BIOS and UEFI for the host architecture's guests, from ``<os>``. Nothing when
    there are no domain capabilities (containers have no firmware)."""
    guest = facts.host_guest
    if guest is None:
        return []
    firmware = guest.capabilities.firmware
    bios = models.bios(guest.capabilities, guest.arch, facts.runs_qemu)
    bios_detail = f"{guest.label}: {bios.reason}"
    uefi_detail = (f"{guest.label}: firmware {_listed(firmware.autoselect)}, "
                   f"{len(firmware.loader_paths)} loader files")
    return [
        TraitReport(tables.FIRMWARE_TRAITS["bios"], bool(bios.supported),
                    Source.DOMAIN_CAPABILITIES, bios_detail),
        TraitReport(tables.FIRMWARE_TRAITS["uefi"], firmware.uefi,
                    Source.DOMAIN_CAPABILITIES, uefi_detail),
    ]


def cpu_reports(facts: HostFacts) -> list[TraitReport]:
    """Every CPU feature trait a guest of the host's architecture can be switched on
    with (``switches``' table, so that the report and the switch cannot drift): True
    when the host-model CPU of the configured virt type has the feature. Under TCG
    that is what QEMU emulates, not the physical CPU. Nothing when it is unknown."""
    guest = facts.host_guest
    if guest is None or not facts.runs_qemu:
        return []
    domain = "TCG" if facts.virt_type == "qemu" else facts.virt_type.upper()
    if guest.cpu_features is None:
        return _named_cpu_reports(guest, domain) if guest.cpu_named is not None else []
    features = guest.cpu_features
    reports = []
    for trait, name in switches.cpu_feature_traits(guest.arch).items():
        has = name in features
        reports.append(TraitReport(
            trait, has, Source.DOMAIN_CAPABILITIES,
            f"{guest.label}: the {domain} host-model CPU {'has' if has else 'lacks'} {name}"))
    return reports


def _named_cpu_reports(guest: GuestMachine, domain: str) -> list[TraitReport]:
    """The CPU feature traits the unexpanded host-model CPU names: True for a feature
    it requires, False for one it disables, nothing for the model's own."""
    named = guest.cpu_named
    assert named is not None
    reports = []
    for trait, name in switches.cpu_feature_traits(guest.arch).items():
        if name in named.required or name in named.disabled:
            has = name in named.required
            reports.append(TraitReport(
                trait, has, Source.DOMAIN_CAPABILITIES,
                f"{guest.label}: the {domain} host-model CPU ({named.model}) "
                f"{'requires' if has else 'disables'} {name}"))
    return reports


# -- what the reports leave out, and why ------------------------------------------------

def notes(facts: HostFacts) -> list[str]:
    """What an operator should know about these reports: a family left unsaid because
    the emulator's device list could not be had, and models the hypervisor lists that
    os-traits has no trait for (reported as nothing)."""
    found = []
    for arch, guest in sorted(facts.guests.items()):
        if facts.runs_qemu and guest.devices is None:
            found.append(f"{arch}: NIC, sound and vIOMMU models not reported: "
                         f"{guest.devices_problem or 'no device list'}")
        if (facts.runs_qemu and arch == facts.host_arch and guest.cpu_features is None
                and switches.cpu_feature_traits(arch)):
            named = guest.cpu_named
            if named is not None:
                found.append(
                    f"{arch}: CPU feature traits only for the features the host-model CPU "
                    f"names beside its model ({len(named.required)} required, "
                    f"{len(named.disabled)} disabled); the features of {named.model} itself "
                    f"were not expanded: {guest.cpu_problem or 'no expansion'}")
            else:
                found.append(f"{arch}: CPU feature traits not reported: "
                             f"{guest.cpu_problem or 'no host-model CPU'}")
    host_guest = facts.host_guest
    if host_guest is not None:
        caps = host_guest.capabilities
        for what, listed, known in (("disk bus", caps.disk_buses, image.DISK_BUSES),
                                    ("video model", caps.video_models, image.VIDEO_MODELS)):
            for value in listed:
                if value not in known:
                    found.append(f"{host_guest.label} list {what} {value}, which os-traits "
                                 f"{vocabulary.OS_TRAITS_VERSION} has no trait for")
    return found


def device_list(emulator: str | None, uri: str) -> tuple[DeviceList | None, str | None]:
    """The device list of a live host's emulator, or None and why not."""
    if emulator is None:
        return None, f"libvirt at {uri} names no emulator"
    if not is_local(uri):
        return None, (f"{emulator} is on the host behind {uri}; Moorage reads device lists "
                      "of local emulators only")
    try:
        return qemu_devices.probe(emulator), None
    except DeviceProbeError as exc:
        return None, str(exc)


def is_local(uri: str) -> bool:
    """``qemu:///system`` and ``qemu:///embed?...`` run here; ``qemu+ssh://h/system``
    does not."""
    scheme, _, rest = uri.partition("://")
    return "+" not in scheme and rest.startswith("/")


# -- facts from files ---------------------------------------------------------------

def facts_from_files(paths: Sequence[str | Path], virt_type: str,
                     host_arch: str | None = None,
                     machine_name: str | None = None,
                     devices: Mapping[str, str | Path] | None = None,
                     cpu: Mapping[str, str | Path] | None = None) -> HostFacts:
    """Facts for ``moorage compute traits --domcaps``: one file per guest architecture,
    no hypervisor. ``host_arch`` defaults to the first file's architecture;
    ``machine_name`` names the machine type in details (q35 for pc-q35-7.2);
    ``devices`` gives each architecture's device list (``qemu-system-ARCH -device
    help``), without which its NIC, sound and vIOMMU models go unsaid; ``cpu`` the
    host architecture's host-model CPU as libvirt expands it (``virsh
    hypervisor-cpu-baseline --features``), without which its CPU traits go unsaid."""
    guests: dict[str, GuestMachine] = {}
    lists = dict(devices or {})
    for path in paths:
        caps = domcaps.parse_file(path)
        if caps.arch in guests:
            raise ValueError(f"{path}: a second domain capabilities file for {caps.arch}")
        listed: DeviceList | None = None
        problem: str | None = (f"no device list given for {caps.arch} (the output of "
                               f"qemu-system-{caps.arch} -device help)")
        cpu_problem = (f"no host-model CPU given for {caps.arch} (libvirt's expansion "
                       "of it: virsh hypervisor-cpu-baseline --features)")
        if caps.arch in lists:
            listed, problem = qemu_devices.read_file(
                lists.pop(caps.arch), caps.emulator or f"qemu-system-{caps.arch}"), None
        guests[caps.arch] = GuestMachine(
            arch=caps.arch,
            name=machine_name or caps.machine or "(no machine type)",
            configured=True,
            capabilities=caps,
            devices=listed,
            devices_problem=problem,
            cpu_problem=cpu_problem,
            cpu_named=caps.host_model,
        )
    if lists:
        raise ValueError(f"a device list for {', '.join(sorted(lists))}, which no domain "
                         "capabilities file is for")
    for arch, path in (cpu or {}).items():
        if arch not in guests:
            raise ValueError(f"a CPU for {arch}, which no domain capabilities file is for")
        try:
            document = Path(path).read_bytes()
        except OSError as exc:
            raise ValueError(f"{path}: cannot read the CPU: {exc.strerror}") from None
        guests[arch] = dataclasses.replace(
            guests[arch], cpu_features=hostcaps.expanded_cpu_features(document, str(path)),
            cpu_problem=None, cpu_named=None)
    if not guests:
        raise ValueError("no domain capabilities file given")
    first = next(iter(guests.values()))
    arch = host_arch or first.arch
    facts = HostFacts(
        virt_type=virt_type,
        host_arch=image.ARCHITECTURE_ALIASES.get(arch, arch),
        guests=guests,
        arch_source=Source.CONFIGURATION if host_arch else Source.DOMAIN_CAPABILITIES,
        arch_detail=f"--arch {host_arch}" if host_arch else f"<arch> of {paths[0]}",
    )
    if facts.runs_qemu and facts.host_guest is None:
        raise ValueError(f"no domain capabilities file for the host architecture {arch}")
    return facts


# -- helpers --------------------------------------------------------------------------

def _from_domcaps(facts: HostFacts, prefix: str, universe: Iterable[str],
                  values: Callable[[DomainCapabilities], tuple[str, ...]]
                  ) -> list[TraitReport]:
    """One report per model of ``universe``: listed in the host architecture's domain
    capabilities or not. Values outside the universe (nvme, ramfb...) are ignored."""
    guest = facts.host_guest
    listed = values(guest.capabilities) if guest else ()
    detail = guest.label if guest else _no_domcaps(facts)
    return [TraitReport(vocabulary.device_trait(prefix, value), value in listed,
                        Source.DOMAIN_CAPABILITIES, detail) for value in universe]


def _decided(facts: HostFacts, prefix: str, names: Iterable[str],
             decide: Callable[[str, GuestPlatform], Decision]) -> list[TraitReport]:
    """One report per model that ``decide`` can decide for the host architecture's
    platform; an undecidable one (no device list) is left unsaid (``notes`` says why)."""
    guest = facts.host_guest
    if guest is None:
        return [TraitReport(vocabulary.device_trait(prefix, name), False,
                            Source.DOMAIN_CAPABILITIES, _no_domcaps(facts)) for name in names]
    platform = facts.platform(guest)
    reports = []
    for name in names:
        decision = decide(name, platform)
        if decision.supported is not None:
            reports.append(TraitReport(vocabulary.device_trait(prefix, name), decision.supported,
                                       decision.source, f"{guest.label}: {decision.reason}"))
    return reports


def _not_qemu(facts: HostFacts, prefix: str, names: Iterable[str], what: str
              ) -> list[TraitReport]:
    detail = f"Moorage builds {what} devices for QEMU guests only (virt_type {facts.virt_type})"
    return [TraitReport(vocabulary.device_trait(prefix, name), False, Source.CONFIGURATION, detail)
            for name in names]


def _no_domcaps(facts: HostFacts) -> str:
    return f"no {facts.host_arch} domain capabilities for virt_type {facts.virt_type}"


def _gate_detail(facts: HostFacts, gate: VersionGate) -> str:
    return f"{gate.describe()}; this host: {facts.versions()}"


def _listed(values: Iterable[str]) -> str:
    return ", ".join(values) or "none"
