"""The libvirt driver: QEMU/KVM for real (also LXC and Parallels), through libvirt-python.

Discovery lives here: what the host reports (``trait_reports``, ``provider_tree``)
comes from the hypervisor's real capabilities, probed once per driver and cached
(``discovery`` says how). Guests (``spawn``/``destroy``) land in ``guest.py`` and
``spawn.py``.
"""

from __future__ import annotations

import logging
import math
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import os_resource_classes as orc
from lxml import etree
from oslo_config import cfg

from moorage.conf import InvalidOption, option_value
from moorage.model.inventory import Inventory
from moorage.virt import host_uptime
from moorage.virt.capabilities import CAPABILITY_TRAITS
from moorage.virt.driver import (
    ComputeDriver,
    Guest,
    GuestNotFound,
    HypervisorUnavailable,
    NodeProvider,
)
from moorage.virt.image_service import ImageService
from moorage.virt.libvirt import discovery, power, spawn
from moorage.virt.libvirt.discovery import Finding, HostFacts
from moorage.virt.libvirt.host import Host, NodeInfo, default_uri, disk_gb
from moorage.virt.report import Source, TraitReport

LOG = logging.getLogger(__name__)
_CAPABILITY_BY_TRAIT = {trait: key for key, trait in CAPABILITY_TRAITS.items()}


class InvalidConfiguration(ValueError):
    """An option whose value the driver cannot use, in one line."""


class LibvirtDriver(ComputeDriver):
    """One libvirt host: a single node named after ``[DEFAULT] host``."""

    name = "libvirt"

    def __init__(self, conf: cfg.ConfigOpts, facts: HostFacts | None = None) -> None:
        """``facts`` stands in for the hypervisor (``moorage compute traits --domcaps``):
        such a driver reports traits but has no host to size or run guests on."""
        super().__init__(conf)
        self.virt_type = str(_option(conf, "libvirt", "virt_type"))
        try:
            self.machine_types = discovery.machine_types(
                list(conf.libvirt.hw_machine_type))
        except ValueError as exc:
            raise InvalidConfiguration(str(exc)) from None
        self.uri = str(conf.libvirt.connection_uri or default_uri(self.virt_type))
        self._findings: dict[str, Finding] = discovery.static_capabilities(
            self.virt_type, str(_option(conf, "libvirt", "images_type")),
            bool(conf.force_raw_images))
        self.capabilities = self._capability_values()
        self._host: Host | None = None
        self._facts: HostFacts | None = None
        self._from_files = facts is not None
        if facts is not None:
            self._learn(facts)
        # [libvirt] stop_after_spawn: the guests being stopped, by instance uuid.
        self._stopping: dict[str, Future[None]] = {}
        self._stopper: ThreadPoolExecutor | None = None
        self._stopping_lock = threading.Lock()
        self._image_service: ImageService | None = None

    # -- discovery --------------------------------------------------------------

    @property
    def host(self) -> Host:
        if self._from_files:
            raise HypervisorUnavailable(
                "no hypervisor: this driver was built from domain capabilities files")
        if self._host is None:
            self._host = Host(self.uri)
        return self._host

    @property
    def facts(self) -> HostFacts:
        """The host's facts, probed on first use and kept (the first probe of a fresh
        libvirt takes seconds, the next ones milliseconds)."""
        if self._facts is None:
            try:
                probed = self.host.probe(self.virt_type, self.machine_types)
            except discovery.MachineTypeError as exc:
                raise InvalidConfiguration(str(exc)) from None
            self._learn(probed)
        assert self._facts is not None
        return self._facts

    def _learn(self, facts: HostFacts) -> None:
        for note in discovery.notes(facts):
            LOG.info("%s: %s", self.uri, note)
        self._facts = facts
        self._findings.update(discovery.host_capabilities(facts))
        self.capabilities = self._capability_values()

    def _capability_values(self) -> dict[str, bool]:
        return {key: finding.supported for key, finding in self._findings.items()}

    def init_host(self) -> None:
        self.facts  # noqa: B018 - connect and probe now, not at the first report

    def nodes(self) -> list[str]:
        return [str(self.conf.host)]

    def trait_reports(self, node: str) -> list[TraitReport]:
        self.init_host()
        return [self._sourced(report) for report in super().trait_reports(node)]

    def _sourced(self, report: TraitReport) -> TraitReport:
        """A capability learned from the hypervisor or the configuration says so (the
        capability table only knows "driver table")."""
        finding = self._findings.get(_CAPABILITY_BY_TRAIT.get(report.trait, ""))
        if (report.source is not Source.DRIVER_TABLE or finding is None
                or finding.source is Source.DRIVER_TABLE):
            return report
        return TraitReport(report.trait, report.supported, finding.source, finding.detail)

    def device_reports(self, node: str) -> list[TraitReport]:
        return discovery.device_reports(self.facts)

    def notes(self) -> list[str]:
        return discovery.notes(self.facts)

    def supported_instances(self) -> list[tuple[str, str, str]]:
        """(arch, virt_type, vm mode) of every guest architecture the host capabilities
        offer for ``virt_type`` and whose domain capabilities could be read; LXC
        guests are "exe" (containers), the others "hvm"."""
        facts = self.facts
        mode = "exe" if facts.virt_type == "lxc" else "hvm"
        return [(arch, facts.virt_type, mode) for arch in sorted(facts.guests or
                                                                 [facts.host_arch])]

    def hypervisor_version(self) -> int | None:
        """QEMU's version from libvirt's getVersion (7002000 is 7.2.0); None when the
        hypervisor is not QEMU or its version was not probed (facts from files)."""
        version = self.facts.qemu_version
        if version is None:
            return None
        major, minor, micro = version
        return major * 1_000_000 + minor * 1_000 + micro

    def provider_tree(self, node: str) -> list[NodeProvider]:
        """The compute node: its CPUs and memory (libvirt's node info) and the size of
        the file system under ``[DEFAULT] instances_path``."""
        conf = self.conf
        sized = conf.libvirt
        # The [libvirt] inventory_* options stand in for the machine's size (several
        # hosts on one machine); libvirt is asked only for what they leave out.
        info = (None if sized.inventory_vcpus and sized.inventory_memory_mb
                else self.node_info())
        vcpus = sized.inventory_vcpus or (info.cpus if info else 0)
        memory_mb = sized.inventory_memory_mb or (info.memory_mb if info else 0)
        inventories = {
            orc.VCPU: Inventory.of(vcpus, reserved=conf.reserved_host_cpus,
                                   allocation_ratio=conf.cpu_allocation_ratio),
            orc.MEMORY_MB: Inventory.of(memory_mb, reserved=conf.reserved_host_memory_mb,
                                        allocation_ratio=conf.ram_allocation_ratio),
            orc.DISK_GB: Inventory.of(sized.inventory_disk_gb or disk_gb(conf.instances_path),
                                      reserved=math.ceil(conf.reserved_host_disk_mb / 1024),
                                      allocation_ratio=conf.disk_allocation_ratio),
        }
        return [NodeProvider(node, inventories)]

    def node_info(self) -> NodeInfo:
        """The machine's size, as libvirt's node info gives it."""
        return self.host.node_info()

    # -- guests -----------------------------------------------------------------

    @property
    def image_service(self) -> ImageService | None:
        """Where guests' images' data comes from ([glance] api_servers, else the
        compute API's /image); None when this host knows none."""
        if self._image_service is None:
            self._image_service = ImageService.of(self.conf)
        return self._image_service

    def spawn(self, guest: Guest) -> None:
        spawn.spawn(self, guest)
        if self.conf.libvirt.stop_after_spawn:
            with self._stopping_lock:
                if self._stopper is None:
                    self._stopper = ThreadPoolExecutor(
                        max_workers=2, thread_name_prefix=f"stop-{self.conf.host}")
                self._stopping[guest.uuid] = self._stopper.submit(self._stop, guest.uuid)

    def destroy(self, instance_uuid: str) -> None:
        """Stop and undefine this host's guest; nothing for another host's guest on
        the same libvirt, or for no guest at all."""
        with self._stopping_lock:
            stopping = self._stopping.pop(instance_uuid, None)
        if stopping is not None:
            stopping.result()  # libvirt refuses a second destroy while the first runs
        if self._guest_node(instance_uuid) not in (None, self._node):
            return
        spawn.destroy(self, instance_uuid)

    # -- power and console (power.py) ------------------------------------------------

    def _own(self, instance_uuid: str) -> None:
        """GuestNotFound unless the guest is this host's; a stop after its spawn
        ([libvirt] stop_after_spawn) is waited for."""
        with self._stopping_lock:
            stopping = self._stopping.pop(instance_uuid, None)
        if stopping is not None:
            stopping.result()
        if self._guest_node(instance_uuid) != self._node:
            raise GuestNotFound(instance_uuid, f"host {self._node}")

    def power_off(self, instance_uuid: str) -> None:
        self._own(instance_uuid)
        power.power_off(self.host, instance_uuid, float(self.conf.shutdown_timeout))

    def power_on(self, instance_uuid: str) -> None:
        self._own(instance_uuid)
        power.power_on(self.host, instance_uuid)

    def reboot(self, instance_uuid: str, hard: bool) -> None:
        self._own(instance_uuid)
        power.reboot(self.host, instance_uuid, hard=hard,
                     soft_timeout=float(self.conf.libvirt.wait_soft_reboot_seconds))

    def console_output(self, instance_uuid: str) -> str:
        self._own(instance_uuid)
        return power.console_output(self.host, instance_uuid)

    def host_uptime(self) -> str:
        """The uptime of the machine libvirt runs on: this one (the agent runs beside
        its libvirt, as nova-compute does)."""
        return host_uptime.this_host()

    def guests(self) -> list[str]:
        """This host's guests. One libvirt may hold the guests of several hosts (the
        hosts of ``moorage run`` share one embedded QEMU driver): each domain's
        metadata names the node it was spawned for."""
        return [uuid for uuid in spawn.guests(self) if self._guest_node(uuid) == self._node]

    @property
    def _node(self) -> str:
        return str(self.conf.host)

    def _guest_node(self, instance_uuid: str) -> str | None:
        """The node in the Moorage metadata of ``instance_uuid``'s domain; None when
        there is no such domain or it has no Moorage metadata."""
        import libvirt

        from moorage.virt.libvirt.guest import METADATA_NS

        try:
            domain = self.host.connection().lookupByUUIDString(instance_uuid)
            text = domain.metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, METADATA_NS, 0)
        except libvirt.libvirtError:
            return None
        # libvirt gives the element back without its namespace
        document = etree.fromstring(text.encode())
        node = document.findtext("node") or document.findtext(f"{{{METADATA_NS}}}node")
        return node.strip() if node else None

    def _stop(self, instance_uuid: str) -> None:
        """Stop a guest's QEMU, keeping its domain ([libvirt] stop_after_spawn)."""
        import libvirt

        try:
            domain = self.host.connection().lookupByUUIDString(instance_uuid)
            if domain.isActive():
                domain.destroy()
        except libvirt.libvirtError as exc:
            LOG.warning("could not stop %s after its start: %s", instance_uuid, exc)


def _option(conf: cfg.ConfigOpts, group: str, name: str) -> object:
    """An option's value; an invalid one is InvalidConfiguration (one line)."""
    try:
        return option_value(conf, group, name)
    except InvalidOption as exc:
        raise InvalidConfiguration(str(exc)) from None
