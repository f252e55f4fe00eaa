"""A SIMULATED libvirt host: the libvirt driver over recorded capabilities, no QEMU.

Where libvirt or QEMU is not installed, ``moorage run`` still gives its libvirt
hosts the traits a real QEMU host has: discovery reads capabilities recorded from
this project's own QEMU 7.2 / libvirt 9.0 (``recordings/``, see its README), with
the same code a live host goes through. A spawn makes every check a real one
makes (the driver's reports, the guest's platform against the recorded domain
capabilities, the late checks) and builds the domain XML, validated against
libvirt's schema when it is installed; then it records the guest instead of
starting it. The driver is named ``libvirt-recorded`` so that nobody mistakes it
for a real host.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from lxml import etree
from oslo_config import cfg

from moorage.model import vocabulary
from moorage.virt.driver import Guest, UnsupportedHardware, check_reported_support
from moorage.virt.libvirt import (
    checks,
    discovery,
    domcaps,
    hostcaps,
    qemu_devices,
    spawn,
    switches,
    validation,
)
from moorage.virt.libvirt import guest as guest_config
from moorage.virt.libvirt.checks import Target
from moorage.virt.libvirt.discovery import GuestMachine, HostFacts, MachineTypeError
from moorage.virt.libvirt.domcaps import DomainCapabilities
from moorage.virt.libvirt.driver import InvalidConfiguration, LibvirtDriver
from moorage.virt.libvirt.guest import GuestConfig, Platform
from moorage.virt.libvirt.host import NodeInfo
from moorage.virt.libvirt.hostcaps import GuestArch, HostCapabilities
from moorage.virt.libvirt.qemu_devices import DeviceList
from moorage.virt.report import TraitReport

RECORDINGS = Path(__file__).with_name("recordings")
# What the recording machine said (getLibVersion, getVersion, getInfo).
LIBVIRT_VERSION = (9, 0, 0)
QEMU_VERSION = (7, 2, 22)
NODE_INFO = NodeInfo(arch="x86_64", memory_mb=7768, cpus=2)
# The recordings are TCG's: a KVM host's capabilities depend on its CPU.
VIRT_TYPE = "qemu"
URI = "recorded:///qemu"


@functools.cache
def host_capabilities() -> HostCapabilities:
    path = RECORDINGS / "host-capabilities.xml"
    return hostcaps.parse(path.read_bytes(), f"recorded {path.name}")


@functools.cache
def _domain_capabilities() -> dict[tuple[str, str], DomainCapabilities]:
    """(arch, canonical machine type) -> its recorded domain capabilities."""
    found = {}
    for path in sorted(RECORDINGS.glob("qemu-*.xml")):
        if path.name.endswith("-cpu-expanded.xml"):
            continue
        caps = domcaps.parse_file(path)
        found[(caps.arch, caps.machine or "")] = caps
    return found


def recorded_machine_types(arch: str = "x86_64") -> list[str]:
    """The machine types recorded for ``arch``, by the names libvirt also gives them
    (pc, q35) and canonically (pc-i440fx-7.2)."""
    guest = _guest_arch(arch)
    canonical = {machine for a, machine in _domain_capabilities() if a == arch}
    aliases = guest.aliases if guest else {}
    return sorted(canonical | {alias for alias, name in aliases.items() if name in canonical})


def domain_capabilities(arch: str, machine: str | None) -> DomainCapabilities:
    """The recording of ``arch`` and ``machine`` (None: libvirt's default machine type);
    LookupError naming the recorded ones when there is none."""
    guest = _guest_arch(arch)
    name = machine or (guest.default_machine if guest else None)
    wanted = guest.canonical(name) if guest and name else None
    caps = _domain_capabilities().get((arch, wanted or ""))
    if caps is None:
        raise LookupError(
            f"no recorded {arch} domain capabilities for machine type "
            f"{machine or 'default'} (recorded: {', '.join(recorded_machine_types(arch))})")
    return caps


def _guest_arch(arch: str) -> GuestArch | None:
    return next((g for g in host_capabilities().guests_for(VIRT_TYPE) if g.arch == arch), None)


@functools.cache
def device_list(arch: str) -> DeviceList | None:
    """The recorded ``qemu-system-ARCH -device help`` of ``arch``'s emulator; None when
    none was recorded."""
    path = RECORDINGS / f"qemu-{arch}-devices.txt"
    if not path.exists():
        return None
    guest = _guest_arch(arch)
    emulator = (guest.emulator_for(VIRT_TYPE) if guest else None) or f"qemu-system-{arch}"
    version = ".".join(str(part) for part in QEMU_VERSION)
    return qemu_devices.read_file(path, emulator, version)


def _device_problem(arch: str) -> str | None:
    return None if device_list(arch) else f"no device list recorded for {arch}"


@functools.cache
def cpu_features(arch: str) -> frozenset[str] | None:
    """The CPU features TCG gives ``arch`` guests: libvirt's expansion of the
    host-model CPU, as ``Host.cpu_features`` asks for it on a live host."""
    path = RECORDINGS / f"qemu-{arch}-cpu-expanded.xml"
    if not path.exists():
        return None
    return hostcaps.expanded_cpu_features(path.read_bytes(), f"recorded {path.name}")


def recorded_facts(virt_type: str, machine_types: Mapping[str, str]) -> HostFacts:
    """The facts ``Host.probe`` would give on the recording machine: each guest
    architecture at its configured machine type (or libvirt's default); an
    architecture with no recording for it is left out, except the host's own."""
    if virt_type != VIRT_TYPE:
        raise InvalidConfiguration(
            f"[libvirt] virt_type = {virt_type}: the recorded capabilities are of "
            f"{VIRT_TYPE} (TCG) guests")
    caps = host_capabilities()
    host_arch = caps.cpu.arch
    guests: dict[str, GuestMachine] = {}
    for guest in caps.guests_for(virt_type):
        configured = machine_types.get(guest.arch)
        if configured and guest.canonical(configured) is None:
            raise MachineTypeError(
                f"[libvirt] hw_machine_type {guest.arch}={configured}: the recorded libvirt "
                f"has no such machine type (known: {', '.join(sorted(guest.aliases))}, ...)")
        try:
            probed = domain_capabilities(guest.arch, configured)
        except LookupError as exc:
            if guest.arch == host_arch:
                raise InvalidConfiguration(str(exc)) from None
            continue
        guests[guest.arch] = GuestMachine(
            arch=guest.arch, name=configured or probed.machine or "?",
            configured=bool(configured), capabilities=probed,
            devices=device_list(guest.arch), devices_problem=_device_problem(guest.arch),
            cpu_features=cpu_features(guest.arch) if guest.arch == host_arch else None,
            cpu_problem=(None if cpu_features(guest.arch) is not None
                         else f"no host-model CPU recorded for {guest.arch}"))
    return HostFacts(
        virt_type=virt_type, host_arch=host_arch, guests=guests,
        libvirt_version=LIBVIRT_VERSION, qemu_version=QEMU_VERSION,
        arch_detail="host CPU in the recorded host capabilities")


# The trait families a machine type decides (its device models and buses): the same on
# a KVM host as on the recording's TCG, where the CPU features are the host's own.
MACHINE_TYPE_FAMILIES = tuple(f"{prefix}_" for prefix in (
    vocabulary.VIF_MODEL, vocabulary.STORAGE_BUS, vocabulary.GRAPHICS_MODEL,
    vocabulary.SOUND_MODEL, vocabulary.VIOMMU_MODEL))


@functools.cache
def machine_type_reports(arch: str, machine: str) -> Mapping[str, TraitReport]:
    """What the libvirt driver reports, from the recordings, of the families a machine
    type decides for a host whose ``arch`` guests get ``machine``: trait -> report.
    MachineTypeError or InvalidConfiguration when nothing of that is recorded."""
    if arch != host_capabilities().cpu.arch:
        raise InvalidConfiguration(
            f"only {host_capabilities().cpu.arch} hosts are recorded, not {arch}")
    facts = recorded_facts(VIRT_TYPE, {arch: machine})
    return MappingProxyType({r.trait: r for r in discovery.device_reports(facts)
                             if r.trait.startswith(MACHINE_TYPE_FAMILIES)})


class RecordedLibvirtDriver(LibvirtDriver):
    """The libvirt driver over recorded capabilities: real discovery and checks, guests
    recorded in memory instead of started (a SIMULATION)."""

    name = "libvirt-recorded"

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        super().__init__(conf)
        try:
            facts = recorded_facts(self.virt_type, self.machine_types)
        except MachineTypeError as exc:
            raise InvalidConfiguration(str(exc)) from None
        self._learn(facts)
        self._from_files = True  # no hypervisor: ``host`` says so if anything asks
        self.uri = URI
        self._recorded: dict[str, GuestConfig] = {}
        self._recorded_lock = threading.Lock()

    def node_info(self) -> NodeInfo:
        return NODE_INFO

    def spawn(self, guest: Guest) -> None:
        """Every check a real spawn makes, the domain XML built (and validated when
        libvirt's schema is installed); the guest is recorded, not started."""
        config, _document = self.prepare(guest)
        with self._recorded_lock:
            self._recorded[guest.uuid] = config

    def destroy(self, instance_uuid: str) -> None:
        with self._recorded_lock:
            self._recorded.pop(instance_uuid, None)

    def guests(self) -> list[str]:
        with self._recorded_lock:
            return sorted(self._recorded)

    def guest_config(self, instance_uuid: str) -> GuestConfig:
        """The configuration a recorded guest was given (KeyError if there is none)."""
        with self._recorded_lock:
            return self._recorded[instance_uuid]

    # -- spawn.prepare, with the recordings where it asks libvirt ------------------------

    def prepare(self, guest: Guest) -> tuple[GuestConfig, etree._Element]:
        reports = self.trait_reports(guest.node)
        check_reported_support(guest, [r for r in reports if not checks.per_platform(r.trait)])
        chosen = spawn.settings(self)
        where = guest_config.platform(guest.image, chosen, self.facts.host_arch)
        wants_cpu = bool(switches.cpu_features(guest.requested_traits))
        target = self._target(where, wants_cpu)
        # libvirt's schema when this machine has it (a recording needs no libvirt).
        return spawn.configure(guest, chosen, where, target,
                               validate=validation.DOMAIN_SCHEMA.exists())

    def _target(self, where: Platform, wants_cpu_features: bool) -> Target:
        """What the recording machine offers the guest's platform (``spawn._target``
        on a live host)."""
        arch_name = where.arch.value
        arch = next((g for g in host_capabilities().guests if g.arch == arch_name
                     and where.domain_type in g.domains), None)
        target = Target(self.virt_type, arch, None, libvirt_version=LIBVIRT_VERSION,
                        qemu_version=QEMU_VERSION)
        machine = where.machine.value if where.machine else None
        if arch is None or (machine is not None and arch.canonical(machine) is None):
            return target  # the checks refuse the architecture or the machine type
        try:
            caps = domain_capabilities(arch_name, machine)
        except LookupError as exc:
            raise UnsupportedHardware(
                f"hw_machine_type={machine}" if machine else f"arch={arch_name}",
                str(exc)) from None
        features = (cpu_features(arch_name) if wants_cpu_features else None) or frozenset()
        return Target(self.virt_type, arch, caps, features, device_list(arch_name),
                      _device_problem(arch_name), LIBVIRT_VERSION, QEMU_VERSION)

