"""The fake driver: a host that exists only in memory, shaped as a test needs it.

A ``FakeHost`` says what the host is: its nodes, its architecture (x86_64, as
upstream's fake driver, by default), VCPU/MEMORY_MB/DISK_GB totals and reserved
amounts, a capability table (upstream's fake driver's by default), traits it
reports supported or not, nested providers under every node (NUMA cells, SR-IOV
PFs...) and "can run" rules. Build one in code, or let
``FakeHost.from_config`` read ``[fake_driver]``.

Guests are records in memory that keep a power state (running or shut off) and a
console: each boot, shutdown and reboot writes a line to it, as a guest's serial
log would show. ``break_power`` makes a guest's power actions fail, as a stuck
hypervisor would.

spawn keeps the late checks of a real driver, so that a host a scheduler picked
without prefiltering can still refuse a guest and have it rescheduled: the
image's hw_architecture (when it names one) must be the host's architecture, its
disk_format an image type the host supports, no trait the guest requires may be
one it reports unsupported, and the host's own rules must pass.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import os_resource_classes as orc
from oslo_config import cfg

from moorage.model.image import ARCHITECTURES
from moorage.model.inventory import Inventory
from moorage.model.vocabulary import HW_ARCH, KNOWN, reportable, trait_name
from moorage.virt.capabilities import IMAGE_TYPES, capability_reports, image_type_key
from moorage.virt.driver import (
    ComputeDriver,
    Guest,
    GuestNotFound,
    NodeProvider,
    ReportedSupport,
    UnsupportedHardware,
    device_model_traits,
)
from moorage.virt.report import Source, TraitReport

# Upstream's fake driver (nova/virt/fake.py): raw supported, vhd not, other image
# types not mentioned (so their traits are left alone).
UPSTREAM_CAPABILITIES: Mapping[str, bool] = MappingProxyType({
    "has_imagecache": True,
    "supports_evacuate": True,
    "supports_migrate_to_same_host": False,
    "supports_attach_interface": True,
    "supports_device_tagging": True,
    "supports_tagged_attach_interface": True,
    "supports_tagged_attach_volume": True,
    "supports_extend_volume": True,
    "supports_multiattach": True,
    "supports_trusted_certs": True,
    "supports_pcpus": False,
    "supports_accelerators": True,
    "supports_remote_managed_ports": True,
    "supports_address_space_passthrough": True,
    "supports_address_space_emulated": True,
    "supports_stateless_firmware": True,
    "supports_virtio_fs": True,
    "supports_mem_backing_file": True,
    image_type_key("raw"): True,
    image_type_key("vhd"): False,
})


def arch_trait(architecture: str) -> str | None:
    """HW_ARCH_<architecture>, or None for an architecture os-traits does not name
    (armv7l): placement cannot be told, only the late check sees it."""
    name = trait_name(HW_ARCH, architecture)
    return name if name in KNOWN else None


def contrary_arch_traits(architecture: str, reported: Mapping[str, bool]) -> list[str]:
    """The HW_ARCH_* traits of ``reported`` (trait -> supported) that contradict a host
    of ``architecture``: another architecture's said supported, its own unsupported."""
    own = arch_trait(architecture)
    return sorted(name for name, supported in reported.items()
                  if name.startswith(f"{HW_ARCH}_") and supported != (name == own))


@dataclass(frozen=True)
class FakeChild:
    """A nested provider under every node, named ``<node>_<name>``.

    ``parent`` is another child's name (declared before this one), or None for
    the node itself: a NUMA cell, and under it an SR-IOV PF, for instance.
    """

    name: str
    inventories: Mapping[str, Inventory]
    traits: Mapping[str, bool] = field(default_factory=dict)
    parent: str | None = None


@dataclass(frozen=True)
class RunRule:
    """A late check of this host: ``refuses(guest)`` is why it cannot give ``feature``
    to the guest, or None when it can."""

    feature: str
    refuses: Callable[[Guest], str | None]


@dataclass(frozen=True)
class FakeHost:
    """What the fake host is. ``source`` and ``origin`` say where its traits came from."""

    nodes: tuple[str, ...]
    architecture: str = "x86_64"
    vcpus: int = 1000
    memory_mb: int = 800000
    disk_gb: int = 600000
    reserved_vcpus: int = 0
    reserved_memory_mb: int = 0
    reserved_disk_gb: int = 0
    capabilities: Mapping[str, bool] = field(default_factory=lambda: UPSTREAM_CAPABILITIES)
    traits: Mapping[str, bool] = field(default_factory=dict)
    children: tuple[FakeChild, ...] = ()
    rules: tuple[RunRule, ...] = ()
    source: Source = Source.DRIVER_TABLE
    origin: str = "fake host"

    def __post_init__(self) -> None:
        if not self.nodes or len(set(self.nodes)) != len(self.nodes):
            raise ValueError(f"a fake host needs distinct node names, not {self.nodes!r}")
        for total, reserved, rc in ((self.vcpus, self.reserved_vcpus, orc.VCPU),
                                    (self.memory_mb, self.reserved_memory_mb, orc.MEMORY_MB),
                                    (self.disk_gb, self.reserved_disk_gb, orc.DISK_GB)):
            if not 0 <= reserved <= total:
                raise ValueError(f"{rc}: reserved {reserved} is not within 0..{total}")
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture {self.architecture!r} is not one of "
                             f"{', '.join(ARCHITECTURES)}")
        capability_reports(self.capabilities)  # UnknownCapability for a bad key, now
        declared: set[str] = set()
        for child in self.children:
            if child.name in declared:
                raise ValueError(f"two children are called {child.name!r}")
            if child.parent is not None and child.parent not in declared:
                raise ValueError(f"child {child.name!r}: parent {child.parent!r} is not a "
                                 "child declared before it")
            declared.add(child.name)
            for name in child.traits:
                reportable(name)
        for name in self.traits:
            reportable(name)
        contrary = contrary_arch_traits(self.architecture, self.traits)
        if contrary:
            raise ValueError(f"traits {', '.join(contrary)} contradict the host's "
                             f"architecture {self.architecture}")

    @property
    def arch_trait(self) -> str | None:
        return arch_trait(self.architecture)

    @classmethod
    def from_config(cls, conf: cfg.ConfigOpts) -> FakeHost:
        """The host ``[fake_driver]`` describes, reserving what ``[DEFAULT]`` keeps."""
        opts = conf.fake_driver
        capabilities = dict(UPSTREAM_CAPABILITIES)
        if opts.supported_image_types is not None:
            wanted = set(opts.supported_image_types)
            capabilities.update({image_type_key(f): f in wanted for f in IMAGE_TYPES})
        reported = {name: True for name in opts.traits}
        reported.update({name: False for name in opts.unsupported_traits})
        return cls(
            nodes=tuple(opts.nodes) or (conf.host,),
            architecture=opts.architecture,
            vcpus=opts.vcpus,
            memory_mb=opts.memory_mb,
            disk_gb=opts.disk_gb,
            reserved_vcpus=min(conf.reserved_host_cpus, opts.vcpus),
            reserved_memory_mb=min(conf.reserved_host_memory_mb, opts.memory_mb),
            reserved_disk_gb=min(math.ceil(conf.reserved_host_disk_mb / 1024), opts.disk_gb),
            capabilities=MappingProxyType(capabilities),
            traits=reported,
            source=Source.CONFIGURATION,
            origin="[fake_driver]",
        )


class FakeDriver(ComputeDriver):
    """A ComputeDriver over a ``FakeHost``; guests are records in memory."""

    name = "fake"

    def __init__(self, conf: cfg.ConfigOpts, host: FakeHost | None = None) -> None:
        super().__init__(conf)
        self.host = host if host is not None else FakeHost.from_config(conf)
        self.capabilities = self.host.capabilities
        self._guests: dict[str, Guest] = {}
        self._off: set[str] = set()
        self._console: dict[str, list[str]] = {}
        self._built: dict[str, frozenset[str]] = {}
        self._broken: dict[str, str] = {}
        self._lock = threading.Lock()
        # A fake host never changes: its reports are read once per node.
        self._support: dict[str, ReportedSupport] = {}

    def nodes(self) -> list[str]:
        return list(self.host.nodes)

    def _known(self, node: str) -> str:
        if node not in self.host.nodes:
            raise LookupError(f"{node!r} is not a node of this fake host "
                              f"(nodes: {', '.join(self.host.nodes)})")
        return node

    def provider_tree(self, node: str) -> list[NodeProvider]:
        self._known(node)
        host, conf = self.host, self.conf
        amounts = ((orc.VCPU, host.vcpus, host.reserved_vcpus, conf.cpu_allocation_ratio),
                   (orc.MEMORY_MB, host.memory_mb, host.reserved_memory_mb,
                    conf.ram_allocation_ratio),
                   (orc.DISK_GB, host.disk_gb, host.reserved_disk_gb, conf.disk_allocation_ratio))
        # Placement refuses a total of 0: a class the host has none of is not offered.
        root = NodeProvider(node, {rc: Inventory.of(total, reserved=reserved,
                                                    allocation_ratio=ratio)
                                   for rc, total, reserved, ratio in amounts if total > 0})
        children = [
            NodeProvider(
                f"{node}_{child.name}",
                child.inventories,
                parent=f"{node}_{child.parent}" if child.parent else node,
                reports=[TraitReport(name, supported, host.source,
                                     f"{host.origin} child {child.name}")
                         for name, supported in child.traits.items()],
            )
            for child in host.children
        ]
        return [root, *children]

    def device_reports(self, node: str) -> list[TraitReport]:
        """The host's traits, and HW_ARCH_<architecture> unless they already say it.
        Other HW_ARCH_* traits are left alone, as upstream's drivers leave them."""
        self._known(node)
        host = self.host
        reports = [TraitReport(name, supported, host.source, host.origin)
                   for name, supported in host.traits.items()]
        if host.arch_trait is not None and host.arch_trait not in host.traits:
            reports.append(TraitReport(host.arch_trait, True, host.source,
                                       f"{host.origin} architecture {host.architecture}"))
        return reports

    def spawn(self, guest: Guest) -> None:
        node = self._known(guest.node)
        wanted = guest.image.properties.hw_architecture
        if wanted is not None and wanted != self.host.architecture:
            raise UnsupportedHardware(
                f"hw_architecture={wanted}",
                f"{node} runs {self.host.architecture} guests only ({self.host.origin})")
        support = self._support.get(node)
        if support is None:
            support = self._support[node] = ReportedSupport.of(self.trait_reports(node))
        support.check(guest)
        for rule in self.host.rules:
            reason = rule.refuses(guest)
            if reason is not None:
                raise UnsupportedHardware(rule.feature, reason)
        with self._lock:
            if guest.uuid in self._guests:
                raise ValueError(f"guest {guest.uuid} already runs on this fake host")
            self._guests[guest.uuid] = guest
            # What the guest asked for, by trait or property, that the host says it has:
            # what a real driver would have switched on.
            self._built[guest.uuid] = (guest.requested_traits
                                       | device_model_traits(guest.image).keys()
                                       ) & support.supported
            self._console[guest.uuid] = [f"fake guest {guest.uuid} booted on {node}"]

    def destroy(self, instance_uuid: str) -> None:
        with self._lock:
            self._guests.pop(instance_uuid, None)
            self._built.pop(instance_uuid, None)
            self._off.discard(instance_uuid)
            self._console.pop(instance_uuid, None)
            self._broken.pop(instance_uuid, None)

    # -- power and console ---------------------------------------------------------
    def _powered(self, instance_uuid: str, action: str) -> list[str]:
        """The guest's console, once its power action may go on (lock held)."""
        if instance_uuid not in self._guests:
            raise GuestNotFound(instance_uuid, f"fake host {', '.join(self.host.nodes)}")
        broken = self._broken.get(instance_uuid)
        if broken is not None:
            raise RuntimeError(f"{action} of {instance_uuid} failed: {broken}")
        return self._console[instance_uuid]

    def power_off(self, instance_uuid: str) -> None:
        with self._lock:
            console = self._powered(instance_uuid, "power off")
            if instance_uuid not in self._off:
                self._off.add(instance_uuid)
                console.append("fake guest shut down")

    def power_on(self, instance_uuid: str) -> None:
        with self._lock:
            console = self._powered(instance_uuid, "power on")
            if instance_uuid in self._off:
                self._off.discard(instance_uuid)
                console.append("fake guest booted")

    def reboot(self, instance_uuid: str, hard: bool) -> None:
        with self._lock:
            console = self._powered(instance_uuid, "reboot")
            self._off.discard(instance_uuid)
            console.append(f"fake guest rebooted ({'hard' if hard else 'soft'})")

    def console_output(self, instance_uuid: str) -> str:
        with self._lock:
            if instance_uuid not in self._guests:
                raise GuestNotFound(instance_uuid, f"fake host {', '.join(self.host.nodes)}")
            return "".join(line + "\n" for line in self._console[instance_uuid])

    def running(self, instance_uuid: str) -> bool:
        """Is the guest powered on? (GuestNotFound if it is not here.)"""
        with self._lock:
            if instance_uuid not in self._guests:
                raise GuestNotFound(instance_uuid, "this fake host")
            return instance_uuid not in self._off

    def break_power(self, instance_uuid: str, reason: str | None) -> None:
        """Make the guest's power actions fail with ``reason`` (None: work again)."""
        with self._lock:
            if reason is None:
                self._broken.pop(instance_uuid, None)
            else:
                self._broken[instance_uuid] = reason

    def guests(self) -> list[str]:
        with self._lock:
            return list(self._guests)

    def supported_instances(self) -> list[tuple[str, str, str]]:
        # Upstream's fake driver: guests of the host's architecture (x86_64 there),
        # hypervisor type "fake".
        return [(self.host.architecture, "fake", "hvm")]

    def hypervisor_version(self) -> int | None:
        return 1000  # "1.0", upstream's fake driver's

    def built_with(self, instance_uuid: str) -> frozenset[str]:
        """The traits the host reports supported that the guest asked for, by trait or
        by property: the features it was built with (KeyError if it does not run here)."""
        with self._lock:
            return self._built[instance_uuid]

    def guest(self, instance_uuid: str) -> Guest:
        """The guest as it was spawned (KeyError if it does not run here)."""
        with self._lock:
            return self._guests[instance_uuid]
