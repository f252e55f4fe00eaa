"""The compute driver interface.

A driver answers three questions for the compute agent:

- which nodes it manages (one per host, or one per bare-metal node for Ironic),
- what providers each node has, with their inventories (``provider_tree``),
- what the hypervisor can do, as traits it owns (``trait_reports``): True means
  "add this trait", False "remove it". A trait a driver says nothing about is
  left alone, so operators' own traits survive.

And it runs guests (``spawn``/``destroy``), keeping a late check: asked for a
device model or feature its host cannot provide, it raises ``UnsupportedHardware``
naming it, so that the build can go to another host. It powers them off and on,
reboots them and reads their console (``power_off``, ``power_on``, ``reboot``,
``console_output``): a driver that cannot says so (``NotImplementedError``).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar

from oslo_config import cfg

from moorage.model.flavor import Flavor, required_traits
from moorage.model.image import Image
from moorage.model.inventory import Inventory
from moorage.model.vocabulary import IMAGE_TYPE, PROPERTY_FAMILIES, trait_name
from moorage.virt import switches
from moorage.virt.capabilities import capability_reports
from moorage.virt.report import TraitReport


class HypervisorUnavailable(Exception):
    """The driver cannot reach its hypervisor; it reports nothing rather than guess."""


class UnsupportedHardware(Exception):
    """A guest asks for hardware this host cannot provide (a late check)."""

    def __init__(self, feature: str, reason: str) -> None:
        super().__init__(f"{feature}: {reason}")
        self.feature = feature
        self.reason = reason


class GuestNotFound(LookupError):
    """The driver runs no such guest."""

    def __init__(self, instance_uuid: str, where: str) -> None:
        super().__init__(f"no guest {instance_uuid} on {where}")
        self.instance_uuid = instance_uuid


@dataclass(frozen=True)
class NodeProvider:
    """One resource provider of a node's tree: the node itself, or a child of it.

    ``parent`` names another provider of the same tree (None for the node).
    ``reports`` are the traits the driver owns on this provider.
    """

    name: str
    inventories: Mapping[str, Inventory]
    parent: str | None = None
    reports: Sequence[TraitReport] = ()


@dataclass(frozen=True)
class Guest:
    """What to boot: the instance, its flavor and image, and the node it was placed on."""

    uuid: str
    name: str
    node: str
    flavor: Flavor
    image: Image
    # Providers and amounts the claim holds, when the scheduler made one.
    allocations: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # Boots from a volume made from the image: the host never reads the image itself.
    volume_backed: bool = False

    @property
    def requested_traits(self) -> frozenset[str]:
        return required_traits(self.flavor, self.image)


def device_model_traits(image: Image) -> dict[str, str]:
    """{trait: "property=value"} for the guest features ``image``'s properties ask
    for: the vocabulary's device models (NIC, video, sound and vIOMMU models, disk and
    CD-ROM buses) and the firmware, TPM and secure boot properties
    (``switches.property_traits``). A host must not have reported them unsupported
    for the guest to boot there. Of two properties naming one trait, the first in the
    vocabulary's order is named (hw_cdrom_bus=ide before hw_disk_bus=ide)."""
    found: dict[str, str] = {}
    for named in PROPERTY_FAMILIES:
        value = getattr(image.properties, named.name) if named.device_model else None
        if value:
            found.setdefault(named.trait(value), f"{named.name}={value}")
    for trait, wanted in switches.property_traits(image).items():
        found.setdefault(trait, wanted)
    return found


@dataclass(frozen=True)
class ReportedSupport:
    """A node's trait reports, indexed for the late checks of its spawns: a driver
    whose reports do not change (a simulated host) builds this once, not per spawn
    (per spawn it was a fifth of a 2,000-host fleet's CPU)."""

    supported: frozenset[str]
    unsupported: Mapping[str, TraitReport]

    @classmethod
    def of(cls, reports: Sequence[TraitReport]) -> ReportedSupport:
        supported = frozenset(r.trait for r in reports if r.supported)
        return cls(supported, MappingProxyType(
            {r.trait: r for r in reports if not r.supported and r.trait not in supported}))

    def check(self, guest: Guest) -> None:
        """The late checks every driver can make from its own reports on the guest's
        node: the image's disk_format is an image type reported supported (unless the
        guest boots from a volume), no device model the image asks for (the
        vocabulary's: ``device_model_traits``) and no trait the guest requires is
        reported unsupported. UnsupportedHardware names the first that fails."""
        unsupported = self.unsupported
        image_type = trait_name(IMAGE_TYPE, guest.image.disk_format)
        if image_type not in self.supported and not guest.volume_backed:
            why = unsupported.get(image_type)
            raise UnsupportedHardware(
                f"disk_format={guest.image.disk_format}",
                f"{image_type} is not supported on {guest.node}"
                + (f" ({why.source}: {why.detail})" if why else ""))
        for trait, wanted in sorted(device_model_traits(guest.image).items()):
            if trait in unsupported:
                why = unsupported[trait]
                raise UnsupportedHardware(
                    wanted, f"{trait} is not supported on {guest.node} "
                    f"({why.source}: {why.detail})")
        for trait in sorted(guest.requested_traits):
            if trait in unsupported:
                why = unsupported[trait]
                raise UnsupportedHardware(
                    trait, f"reported unsupported on {guest.node} ({why.source}: {why.detail})")


def check_reported_support(guest: Guest, reports: Sequence[TraitReport]) -> None:
    """``ReportedSupport.check`` from reports read now."""
    ReportedSupport.of(reports).check(guest)


class ComputeDriver(abc.ABC):
    """One kind of hypervisor."""

    #: The name operators give in ``[DEFAULT] compute_driver``.
    name: ClassVar[str]
    #: Upstream's capability keys (``supports_*``); a key left out says nothing.
    capabilities: Mapping[str, bool] = {}

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf

    def init_host(self) -> None:  # noqa: B027 - most drivers have nothing to connect to
        """Connect to the hypervisor and learn what it can do.

        HypervisorUnavailable (with the reason) when it cannot be reached.
        """

    @abc.abstractmethod
    def nodes(self) -> list[str]:
        """Names of the nodes this driver manages."""

    @abc.abstractmethod
    def provider_tree(self, node: str) -> list[NodeProvider]:
        """The node's providers, the node first, parents before children. The node's
        own ``reports`` are left empty: ``trait_reports`` gives them."""

    def trait_reports(self, node: str) -> list[TraitReport]:
        """Every trait this driver owns on ``node``'s own provider."""
        excluded = self.conf.compute.image_type_exclude_list
        return [*capability_reports(self.capabilities, excluded), *self.device_reports(node)]

    def notes(self) -> list[str]:
        """What an operator should know about this host's reports: a family the driver
        could not decide, and why (``moorage compute traits`` prints them)."""
        return []

    def device_reports(self, node: str) -> list[TraitReport]:
        """Device models, architectures, firmware...: nothing unless the driver knows."""
        return []

    @abc.abstractmethod
    def spawn(self, guest: Guest) -> None:
        """Boot ``guest`` on its node; UnsupportedHardware if the host cannot run it."""

    @abc.abstractmethod
    def destroy(self, instance_uuid: str) -> None:
        """Stop and remove a guest (nothing if it is not there)."""

    def guests(self) -> list[str]:
        """Uuids of the guests this driver runs (powered on or off)."""
        return []

    # -- power and console: GuestNotFound for a guest the driver does not run -----------
    def power_off(self, instance_uuid: str) -> None:
        """Shut the guest down, keeping it defined: cleanly if the hypervisor can ask
        it to and it obeys within ``[DEFAULT] shutdown_timeout`` seconds, else by
        force. Nothing if it is off already."""
        raise NotImplementedError(f"the {self.name} driver cannot power guests off")

    def power_on(self, instance_uuid: str) -> None:
        """Start a guest that is off; nothing if it runs."""
        raise NotImplementedError(f"the {self.name} driver cannot power guests on")

    def reboot(self, instance_uuid: str, hard: bool) -> None:
        """Reboot the guest. Soft: ask it to restart, and power-cycle it if it has not
        gone down by itself in time. Hard: power-cycle it at once (an off guest is
        started)."""
        raise NotImplementedError(f"the {self.name} driver cannot reboot guests")

    def console_output(self, instance_uuid: str) -> str:
        """What the guest wrote to its console (the last of it, when it wrote much)."""
        raise NotImplementedError(f"the {self.name} driver keeps no console output")

    def host_uptime(self) -> str:
        """The host's uptime line (``moorage.virt.host_uptime``), as nova's drivers
        report it; NotImplementedError when the driver cannot tell (a simulated host,
        a node it does not run on)."""
        raise NotImplementedError(f"the {self.name} driver does not report its host's "
                                  "uptime")

    def supported_instances(self) -> list[tuple[str, str, str]]:
        """(architecture, hypervisor type, VM mode) triples of the guests this host runs,
        as upstream's compute nodes report them (ImagePropertiesFilter reads them).
        Empty when the driver does not know."""
        return []

    def hypervisor_version(self) -> int | None:
        """The hypervisor's version as upstream encodes it (major * 1,000,000 +
        minor * 1,000 + micro); None when unknown."""
        return None
