"""The Ironic driver: every bare-metal node is its own root provider, here on simulated
node records.

As upstream's: the nodes a compute service manages are those of its conductor
group; each node's provider is named after the node's uuid (names are optional
and can change in Ironic; the uuid cannot) and has one inventory, the node's
resource class as a custom class (``baremetal-gold`` -> CUSTOM_BAREMETAL_GOLD)
with total 1 and max_unit 1, fully reserved while the node cannot take an
instance (maintenance, not available, holding one). Its traits are the node
record's, plus upstream's ironic capability table (qcow2, raw and ami images).

Custom names: the compute agent creates every CUSTOM_* resource class of a
provider's inventory and every CUSTOM_* trait reported supported before writing
them (``ProviderTreeSync._ensure_custom_names``); ``custom_names(node)`` says
which ones a node needs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import os_resource_classes as orc
from oslo_config import cfg

from moorage.model.inventory import Inventory
from moorage.model.vocabulary import is_custom
from moorage.virt.capabilities import managed_elsewhere
from moorage.virt.driver import (
    ComputeDriver,
    Guest,
    GuestNotFound,
    NodeProvider,
    UnsupportedHardware,
    check_reported_support,
    device_model_traits,
)
from moorage.virt.ironic.simulator import (
    AVAILABLE,
    POWER_ON,
    REBOOTING,
    SOFT_POWER_OFF,
    SOFT_REBOOTING,
    IronicConflict,
    IronicSimulator,
    SimulatedNode,
)
from moorage.virt.report import Source, TraitReport
from moorage.virt.simulation import reaching
from moorage.virt.switches import guest_feature_traits

LOG = logging.getLogger(__name__)

# What the driver talks to, in its errors.
IRONIC = "simulated Ironic API"

# Upstream's ironic driver table: qcow2, raw and ami images (ami since Xena).
CAPABILITIES: Mapping[str, bool] = managed_elsewhere(
    has_imagecache=False, supports_migrate_to_same_host=False,
    image_types=("qcow2", "raw", "ami"))
# Power states in which a node's resources are not offered (upstream: ERROR, NOSTATE).
BAD_POWER_STATES = (None, "error")
# The guest features bare metal cannot be given unless the node has them.
GUEST_FEATURES = guest_feature_traits()


def resource_class_name(resource_class: str) -> str:
    """The custom resource class of an Ironic resource_class, as upstream normalizes it:
    runs of other characters than letters and digits become ``_``, upper case, one
    CUSTOM_ prefix (``baremetal-gold`` -> CUSTOM_BAREMETAL_GOLD)."""
    name: str = orc.normalize_name(resource_class)
    doubled = orc.CUSTOM_NAMESPACE * 2
    return name.removeprefix(orc.CUSTOM_NAMESPACE) if name.startswith(doubled) else name


def node_unavailable(node: SimulatedNode) -> str | None:
    """Why the node cannot take an instance now, or None."""
    if node.maintenance:
        return "in maintenance" + (f" ({node.maintenance_reason})"
                                   if node.maintenance_reason else "")
    if node.instance_uuid is not None:
        return f"holding instance {node.instance_uuid}"
    if node.provision_state != AVAILABLE:
        return f"{node.provision_state}, not {AVAILABLE}"
    if node.power_state in BAD_POWER_STATES:
        return f"in power state {node.power_state}"
    return None


@dataclass(frozen=True)
class CustomNames:
    """The CUSTOM_* names a node's provider needs placement to know."""

    resource_classes: frozenset[str]
    traits: frozenset[str]


class IronicDriver(ComputeDriver):
    """A ComputeDriver over the (simulated) Ironic nodes of one conductor group."""

    name = "ironic"
    capabilities = CAPABILITIES

    def __init__(self, conf: cfg.ConfigOpts, simulator: IronicSimulator | None = None) -> None:
        super().__init__(conf)
        if simulator is None:
            path = conf.ironic.simulation_file
            simulator = IronicSimulator.from_file(path) if path else IronicSimulator()
        self.simulator = simulator
        # node -> every trait its record has carried: the driver owns those, so a trait
        # taken off the record is removed from the provider too.
        self._owned: dict[str, set[str]] = {}

    @property
    def conductor_group(self) -> str | None:
        group: str | None = self.conf.ironic.conductor_group
        return group

    def init_host(self) -> None:
        with reaching(IRONIC):
            self.simulator.ping()

    def nodes(self) -> list[str]:
        with reaching(IRONIC):
            return [n.uuid for n in self.simulator.list_nodes(self.conductor_group)]

    def _node(self, node: str) -> SimulatedNode:
        with reaching(IRONIC):
            record = self.simulator.get_node(node)
        if self.conductor_group is not None and record.conductor_group != self.conductor_group:
            raise LookupError(f"node {node} is in conductor group "
                              f"{record.conductor_group!r}, not this service's "
                              f"{self.conductor_group!r}")
        return record

    def provider_tree(self, node: str) -> list[NodeProvider]:
        record = self._node(node)
        inventories: dict[str, Inventory] = {}
        if record.resource_class is None:
            # Upstream fails the node's update; nothing to schedule to is the same outcome.
            LOG.warning("Ironic node %s has no resource_class: no inventory", record.uuid)
        else:
            reserved = 1 if node_unavailable(record) else 0
            inventories[resource_class_name(record.resource_class)] = Inventory.of(
                1, reserved=reserved, max_unit=1)
        return [NodeProvider(record.uuid, inventories)]

    def device_reports(self, node: str) -> list[TraitReport]:
        """The record's traits True; a trait it carried once and no longer does, and
        every guest feature not on it, False."""
        record = self._node(node)
        owned = self._owned.setdefault(record.uuid, set())
        owned |= record.traits
        reports = [TraitReport(trait, trait in record.traits, Source.NODE_RECORD,
                               f"node {record.uuid}" if trait in record.traits else
                               f"node {record.uuid}: no longer on the record")
                   for trait in sorted(owned)]
        reports += [TraitReport(trait, False, Source.NODE_RECORD,
                                f"node {record.uuid}: bare metal, and not on its record")
                    for trait in sorted(GUEST_FEATURES - owned)]
        return reports

    def custom_names(self, node: str) -> CustomNames:
        """The CUSTOM_* resource classes and traits ``node``'s provider uses."""
        classes = {rc for p in self.provider_tree(node) for rc in p.inventories if is_custom(rc)}
        names = {r.trait for r in self.trait_reports(node) if r.supported and is_custom(r.trait)}
        return CustomNames(frozenset(classes), frozenset(names))

    # -- guests ---------------------------------------------------------------------------
    def spawn(self, guest: Guest) -> None:
        record = self._node(guest.node)
        why = node_unavailable(record)
        if why is not None:
            feature = "maintenance" if record.maintenance else "provision_state"
            raise UnsupportedHardware(feature, f"node {record.uuid} is {why}")
        reports = self.trait_reports(guest.node)
        check_reported_support(guest, reports)
        # Ironic checks that the required traits are the node's (deploy templates
        # switch on by them); a trait the driver says nothing about is not on the node.
        present = {r.trait for r in reports if r.supported}
        missing = sorted(guest.requested_traits - present)
        if missing:
            raise UnsupportedHardware(
                missing[0], f"node {record.uuid} does not have it; its traits: "
                f"{', '.join(sorted(record.traits)) or 'none'}")
        # The traits the guest asks for, by trait or by property, that the node has: what
        # deploy templates switch on, and what the guest is built with.
        asked = guest.requested_traits | device_model_traits(guest.image).keys()
        instance_info = {"image_source": guest.image.id,
                         "traits": sorted(asked & record.traits)}
        with reaching(IRONIC):
            try:
                self.simulator.deploy(record.uuid, guest.uuid, instance_info)
            except IronicConflict as exc:  # taken or put in maintenance meanwhile
                raise UnsupportedHardware("provision_state", str(exc)) from None

    def supported_instances(self) -> list[tuple[str, str, str]]:
        """Upstream's: ("<cpu_arch>", "baremetal", "hvm") of every node whose record
        has a cpu_arch property, here over all the nodes of this service."""
        with reaching(IRONIC):
            arches = {str(n.properties["cpu_arch"])
                      for n in self.simulator.list_nodes(self.conductor_group)
                      if n.properties.get("cpu_arch")}
        return [(arch, "baremetal", "hvm") for arch in sorted(arches)]

    def hypervisor_version(self) -> int | None:
        return 1  # upstream's ironic driver reports 1

    def destroy(self, instance_uuid: str) -> None:
        with reaching(IRONIC):
            record = self.simulator.node_by_instance(instance_uuid)
            if record is None:
                return
            if self.conductor_group is None or record.conductor_group == self.conductor_group:
                self.simulator.undeploy(record.uuid)

    # Ironic's own power targets: a soft power off or reboot asks the node's OS (over
    # ACPI, through its BMC); the simulated nodes obey at once.
    def power_off(self, instance_uuid: str) -> None:
        self._power(instance_uuid, SOFT_POWER_OFF)

    def power_on(self, instance_uuid: str) -> None:
        self._power(instance_uuid, POWER_ON)

    def reboot(self, instance_uuid: str, hard: bool) -> None:
        self._power(instance_uuid, REBOOTING if hard else SOFT_REBOOTING)

    def _power(self, instance_uuid: str, target: str) -> None:
        with reaching(IRONIC):
            record = self.simulator.node_by_instance(instance_uuid)
            if record is None or (self.conductor_group is not None
                                  and record.conductor_group != self.conductor_group):
                raise GuestNotFound(instance_uuid, "this service's Ironic nodes")
            self.simulator.set_power_state(record.uuid, target)

    def guests(self) -> list[str]:
        with reaching(IRONIC):
            return [n.instance_uuid for n in self.simulator.list_nodes(self.conductor_group)
                    if n.instance_uuid is not None]
