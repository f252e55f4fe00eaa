"""libvirt's host capabilities (``virsh capabilities``) as a typed value.

What discovery needs from it: the host's CPU (architecture, model, features), and
the guest architectures the hypervisor can run with their emulators and machine
types, the canonical ones (``pc`` stands for ``pc-i440fx-7.2``) and the default
(libvirt lists it first). Pure, like ``domcaps``: errors name the element.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lxml import etree

from moorage.virt.libvirt.domcaps import DomainCapabilitiesError, root_element


class HostCapabilitiesError(DomainCapabilitiesError):
    """A host capabilities document that cannot be read (same shape of message)."""


@dataclass(frozen=True)
class HostCPU:
    arch: str
    model: str | None = None
    vendor: str | None = None
    features: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Machine:
    name: str
    # Set on aliases: the machine type this name stands for (pc -> pc-i440fx-7.2).
    canonical: str | None = None
    max_cpus: int | None = None
    deprecated: bool = False


@dataclass(frozen=True)
class GuestArch:
    """One ``<guest>``: an OS type and architecture, and the domain types that run it."""

    os_type: str
    arch: str
    emulator: str | None
    machines: tuple[Machine, ...]
    # domain type (qemu, kvm, lxc...) -> its own emulator, when it has one
    domains: Mapping[str, str | None] = field(default_factory=dict)

    @property
    def default_machine(self) -> str | None:
        """What libvirt picks when asked for no machine type: the first one listed."""
        return self.machines[0].name if self.machines else None

    @property
    def aliases(self) -> dict[str, str]:
        """Alias -> canonical machine type (``{"pc": "pc-i440fx-7.2", "q35": ...}``)."""
        return {m.name: m.canonical for m in self.machines if m.canonical}

    def canonical(self, machine: str) -> str | None:
        """The canonical name of ``machine``, None if this architecture lacks it."""
        if machine in self.aliases:
            return self.aliases[machine]
        return machine if any(m.name == machine for m in self.machines) else None

    def emulator_for(self, domain_type: str) -> str | None:
        return self.domains.get(domain_type) or self.emulator


@dataclass(frozen=True)
class HostCapabilities:
    cpu: HostCPU
    guests: tuple[GuestArch, ...] = ()

    def guests_for(self, domain_type: str) -> list[GuestArch]:
        """The guest architectures that ``domain_type`` runs (one per arch)."""
        found: dict[str, GuestArch] = {}
        for guest in self.guests:
            if domain_type in guest.domains and guest.arch not in found:
                found[guest.arch] = guest
        return list(found.values())


def parse(document: str | bytes, source: str = "host capabilities") -> HostCapabilities:
    root = root_element(document, source, "capabilities", HostCapabilitiesError)

    def missing(where: str) -> HostCapabilitiesError:
        return HostCapabilitiesError(source, where, "missing")

    cpu = root.find("host/cpu")
    if cpu is None:
        raise missing("capabilities/host/cpu")
    arch = (cpu.findtext("arch") or "").strip()
    if not arch:
        raise missing("capabilities/host/cpu/arch")
    host_cpu = HostCPU(
        arch=arch,
        model=(cpu.findtext("model") or "").strip() or None,
        vendor=(cpu.findtext("vendor") or "").strip() or None,
        features=frozenset(f.get("name", "") for f in cpu.findall("feature")) - {""},
    )
    guests = []
    for index, guest in enumerate(root.findall("guest"), start=1):
        where = f"capabilities/guest[{index}]"
        guest_arch = guest.find("arch")
        if guest_arch is None or not guest_arch.get("name"):
            raise missing(f"{where}/arch/@name")
        guests.append(GuestArch(
            os_type=(guest.findtext("os_type") or "").strip(),
            arch=guest_arch.get("name", ""),
            emulator=(guest_arch.findtext("emulator") or "").strip() or None,
            machines=tuple(_machine(m, source, f"{where}/arch/machine")
                           for m in guest_arch.findall("machine")),
            domains={
                d.get("type", ""): (d.findtext("emulator") or "").strip() or None
                for d in guest_arch.findall("domain")
            },
        ))
    return HostCapabilities(host_cpu, tuple(guests))


def _machine(element: etree._Element, source: str, where: str) -> Machine:
    name = (element.text or "").strip()
    if not name:
        raise HostCapabilitiesError(source, where, "a machine type without a name")
    max_cpus = element.get("maxCpus")
    return Machine(
        name=name,
        canonical=element.get("canonical"),
        max_cpus=int(max_cpus) if max_cpus and max_cpus.isdigit() else None,
        deprecated=element.get("deprecated") == "yes",
    )


def expanded_cpu_features(document: str | bytes, source: str = "expanded CPU") -> frozenset[str]:
    """The features of a CPU definition libvirt expanded (``baselineHypervisorCPU`` with
    ``VIR_CONNECT_BASELINE_CPU_EXPAND_FEATURES``, or ``virsh hypervisor-cpu-baseline
    --features``): every feature it requires, the model's own included."""
    root = root_element(document, source, "cpu", HostCapabilitiesError)
    return frozenset(f.get("name", "") for f in root.findall("feature")
                     if f.get("policy") in ("require", None)) - {""}
