"""The connection to libvirt, and what it tells about the host.

One connection per URI per process, shared by everything that asks for it (the
driver, later its guests): ``qemu:///embed?root=DIR`` runs QEMU inside this
process, and a second process on the same root is refused by libvirt, so the
connection must not be opened twice. The embedded driver also needs libvirt's
event loop, registered once per process and run by a daemon thread.

Anything that stops us talking to the hypervisor (no libvirt-python, a wrong
URI, no daemon) is ``HypervisorUnavailable`` with a one-line reason: the agent
then reports nothing, rather than capabilities it did not see.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TypeVar

from lxml import etree

from moorage.model import vocabulary
from moorage.virt.driver import HypervisorUnavailable
from moorage.virt.libvirt import discovery, domcaps, hostcaps, reaper, tables
from moorage.virt.libvirt.bindings import Connection
from moorage.virt.libvirt.discovery import GuestMachine, HostFacts, MachineTypeError
from moorage.virt.libvirt.domcaps import DomainCapabilities
from moorage.virt.libvirt.hostcaps import HostCapabilities
from moorage.virt.libvirt.tables import Version

LOG = logging.getLogger(__name__)
T = TypeVar("T")

# The usual URI per virt type when [libvirt] connection_uri is empty (as upstream).
DEFAULT_URIS = {
    "kvm": "qemu:///system",
    "qemu": "qemu:///system",
    "lxc": "lxc:///",
    "parallels": "parallels:///system",
}
# virt type -> the domain type libvirt knows it by
DOMAIN_TYPES = {"kvm": "kvm", "qemu": "qemu", "lxc": "lxc", "parallels": "vz"}

_lock = threading.Lock()
_connections: dict[str, Connection] = {}
_event_loop_started = False
_quiet = False


def default_uri(virt_type: str) -> str:
    return DEFAULT_URIS[virt_type]


def _libvirt() -> ModuleType:
    """The libvirt module, quiet (its errors become our exceptions, not stderr lines)."""
    global _quiet
    try:
        libvirt = importlib.import_module("libvirt")
    except ImportError:
        raise HypervisorUnavailable(
            "libvirt-python is not installed (pip install 'moorage[libvirt]')") from None
    if not _quiet:
        libvirt.registerErrorHandler(lambda _context, _error: None, None)
        _quiet = True
    return libvirt


def _start_event_loop(libvirt: ModuleType) -> None:
    """libvirt's default event loop, once per process (the embedded driver needs it)."""
    global _event_loop_started
    if _event_loop_started:
        return
    libvirt.virEventRegisterDefaultImpl()

    def run() -> None:
        while True:
            libvirt.virEventRunDefaultImpl()

    threading.Thread(target=run, name="libvirt-events", daemon=True).start()
    _event_loop_started = True


def connect(uri: str) -> Connection:
    """This process's connection to ``uri``, opened on first use and reused after."""
    libvirt = _libvirt()
    with _lock:
        conn = _connections.get(uri)
        if conn is not None and conn.isAlive():
            return conn
        _start_event_loop(libvirt)
        if uri.startswith("qemu:///embed"):
            # This process is that libvirt's daemon: its QEMU processes are ours to reap.
            reaper.adopt_orphans()
        try:
            opened: Connection = libvirt.open(uri)
        except libvirt.libvirtError as exc:
            raise HypervisorUnavailable(
                f"cannot connect to libvirt at {uri}: {_reason(exc)}") from None
        _connections[uri] = opened
        return opened


def open_uris() -> list[str]:
    """The URIs this process holds a connection to (an embedded driver's root can be
    opened once per process: whoever needs one again asks here)."""
    with _lock:
        return list(_connections)


@atexit.register
def _close_all() -> None:
    """Close the connections while libvirt-python is still whole (closing them when the
    interpreter tears its modules down prints errors)."""
    with _lock:
        for conn in _connections.values():
            with contextlib.suppress(Exception):  # exiting anyway
                conn.close()
        _connections.clear()


def _reason(exc: Exception) -> str:
    """libvirt's message on one line."""
    return " ".join(str(exc).split()) or type(exc).__name__


@dataclass(frozen=True)
class NodeInfo:
    """``virNodeGetInfo``: the host's size."""

    arch: str
    memory_mb: int
    cpus: int


class Host:
    """The hypervisor behind one URI: capabilities, versions and size, cached."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._capabilities: HostCapabilities | None = None
        self._domcaps: dict[tuple[str, str | None, str], DomainCapabilities] = {}
        self._cpus: dict[tuple[str, str | None, str], frozenset[str] | None] = {}
        self._cpu_lock = threading.Lock()

    def connection(self) -> Connection:
        return connect(self.uri)

    def _call(self, what: str, call: Callable[[Connection], T]) -> T:
        """One libvirt call; its failure is HypervisorUnavailable saying what was asked."""
        libvirt = _libvirt()
        try:
            return call(self.connection())
        except libvirt.libvirtError as exc:
            raise HypervisorUnavailable(
                f"libvirt at {self.uri} cannot give {what}: {_reason(exc)}") from None

    def capabilities(self) -> HostCapabilities:
        """The host capabilities (the first call makes libvirt probe every emulator)."""
        if self._capabilities is None:
            xml = self._call("its host capabilities", lambda c: c.getCapabilities())
            self._capabilities = hostcaps.parse(xml, f"host capabilities of {self.uri}")
        return self._capabilities

    def domain_capabilities(self, arch: str, machine: str | None, virt_type: str,
                            emulator: str | None = None) -> DomainCapabilities:
        """Domain capabilities of one architecture and machine type (None: the
        default), cached; libvirt's refusal is the libvirtError it raised."""
        key = (arch, machine, virt_type)
        if key not in self._domcaps:
            xml = self.connection().getDomainCapabilities(
                emulator, arch, machine, DOMAIN_TYPES[virt_type], 0)
            self._domcaps[key] = domcaps.parse(
                xml, f"{arch} {machine or 'default'} domain capabilities of {self.uri}")
        return self._domcaps[key]

    def cpu_features(self, arch: str, machine: str | None, domain_type: str,
                     emulator: str | None) -> frozenset[str] | None:
        """The CPU features a guest of this platform can be given: the domain
        capabilities' host-model CPU (under TCG what QEMU emulates, under KVM what the
        host's CPU and KVM give), expanded by libvirt to every feature it implies. None
        when the hypervisor has no host-model CPU for it. Asked once per platform."""
        libvirt = _libvirt()
        key = (arch, machine, domain_type)
        with self._cpu_lock:
            if key in self._cpus:
                return self._cpus[key]
        conn = self.connection()
        try:
            document = etree.fromstring(conn.getDomainCapabilities(
                emulator, arch, machine, domain_type, 0).encode())
            mode = document.find("cpu/mode[@name='host-model']")
            features: frozenset[str] | None = None
            if mode is not None and mode.get("supported") == "yes":
                cpu = etree.Element("cpu")
                cpu.extend(mode)
                features = hostcaps.expanded_cpu_features(conn.baselineHypervisorCPU(
                    emulator, arch, machine, domain_type, [etree.tostring(cpu).decode()],
                    libvirt.VIR_CONNECT_BASELINE_CPU_EXPAND_FEATURES),
                    f"{arch} host-model CPU of {self.uri}")
        except libvirt.libvirtError as exc:
            raise HypervisorUnavailable(
                f"libvirt at {self.uri} cannot give the {arch} {domain_type} host-model "
                f"CPU: {_reason(exc)}") from None
        with self._cpu_lock:
            self._cpus[key] = features
        return features

    def libvirt_version(self) -> Version:
        return tables.version_from_number(
            self._call("its version", lambda c: c.getLibVersion()))

    def hypervisor(self) -> tuple[str, Version]:
        """The hypervisor's name (QEMU, LXC...) and version."""
        name = self._call("the hypervisor's name", lambda c: c.getType())
        number = self._call("the hypervisor's version", lambda c: c.getVersion())
        return name, tables.version_from_number(number)

    def node_info(self) -> NodeInfo:
        arch, memory_mb, cpus, *_ = self._call("the host's size", lambda c: c.getInfo())
        return NodeInfo(str(arch), int(memory_mb), int(cpus))

    def probe(self, virt_type: str, machine_types: Mapping[str, str]) -> HostFacts:
        """Everything discovery needs, asked once: see ``discovery`` for how machine
        types are chosen. The host architecture's domain capabilities are required
        for QEMU (without them its guests cannot run); another architecture whose
        probe fails (kvm cannot run foreign ones) is left out, as upstream does."""
        libvirt = _libvirt()
        started = time.perf_counter()
        caps = self.capabilities()
        host_arch = caps.cpu.arch
        guests: dict[str, GuestMachine] = {}
        for guest in caps.guests_for(DOMAIN_TYPES[virt_type]):
            configured = machine_types.get(guest.arch)
            if configured and guest.canonical(configured) is None:
                raise MachineTypeError(
                    f"[libvirt] hw_machine_type {guest.arch}={configured}: libvirt has no "
                    f"such machine type for {guest.arch} (known: "
                    f"{', '.join(sorted(guest.aliases))}, ...)")
            try:
                probed = self.domain_capabilities(
                    guest.arch, configured, virt_type, guest.emulator_for(virt_type))
            except libvirt.libvirtError as exc:
                if guest.arch == host_arch and virt_type in vocabulary.QEMU_VIRT_TYPES:
                    raise HypervisorUnavailable(
                        f"libvirt at {self.uri} cannot run {virt_type} guests for "
                        f"{guest.arch}: {_reason(exc)}") from None
                LOG.debug("no %s domain capabilities for %s: %s", virt_type, guest.arch,
                          _reason(exc))
                continue
            emulator = probed.emulator or guest.emulator_for(virt_type)
            devices, problem = discovery.device_list(emulator, self.uri)
            cpu = (self.cpu_features(guest.arch, configured, DOMAIN_TYPES[virt_type],
                                     emulator) if guest.arch == host_arch else None)
            guests[guest.arch] = GuestMachine(
                arch=guest.arch,
                name=configured or probed.machine or guest.default_machine or "?",
                configured=bool(configured),
                capabilities=probed,
                devices=devices,
                devices_problem=problem,
                cpu_features=cpu,
                cpu_problem=None if cpu is not None else (
                    f"libvirt at {self.uri} has no host-model CPU for {virt_type} "
                    f"{guest.arch} guests"),
            )
        if virt_type in vocabulary.QEMU_VIRT_TYPES and host_arch not in guests:
            raise HypervisorUnavailable(
                f"libvirt at {self.uri} has no {virt_type} guests for the host "
                f"architecture {host_arch}")
        hypervisor, hypervisor_version = self.hypervisor()
        facts = HostFacts(
            virt_type=virt_type,
            host_arch=host_arch,
            guests=guests,
            libvirt_version=self.libvirt_version(),
            qemu_version=hypervisor_version if hypervisor == "QEMU" else None,
            arch_detail=f"host CPU in the host capabilities of {self.uri}",
        )
        LOG.info("probed %s in %.2f s: %s guests for %s", self.uri,
                 time.perf_counter() - started, virt_type, ", ".join(sorted(guests)))
        return facts


def disk_gb(path: str) -> int:
    """Size in GiB of the file system ``path`` is (or will be) on: its nearest
    existing directory, so that a not yet created instances_path still counts."""
    while not os.path.exists(path):
        parent = os.path.dirname(path.rstrip("/")) or "/"
        if parent == path:
            break
        path = parent
    stat = os.statvfs(path)
    return stat.f_frsize * stat.f_blocks // 1024**3
