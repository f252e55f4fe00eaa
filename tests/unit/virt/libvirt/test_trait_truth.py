"""A trait the libvirt driver reports True is one its late check accepts; one it reports
False is one its late check refuses. Held by construction, on the captures recorded
from this machine's QEMU 7.2 / libvirt 9.0 (tests/fixtures/domcaps): for every trait
of every family the driver owns, a guest asks for it (through the image property and
through the trait) and the driver's report and its late check must agree.

The same property on the live host, and real QEMU starting a sample per family, is
tests/functional/virt/libvirt/test_trait_truth.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import os_traits as ot
import pytest

from moorage.model import vocabulary
from moorage.virt import switches as features
from moorage.virt.driver import Guest, UnsupportedHardware, check_reported_support
from moorage.virt.libvirt import checks, discovery, hostcaps, models, spawn, switches, tables
from moorage.virt.libvirt import guest as guest_config
from moorage.virt.libvirt.checks import Target
from moorage.virt.libvirt.discovery import HostFacts
from moorage.virt.libvirt.driver import LibvirtDriver
from moorage.virt.libvirt.guest import Settings
from moorage.virt.report import TraitReport
from moorage.virt.switches import FlavorImageConflict
from tests.unit.virt import builders

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "domcaps"
HOST_CAPS = hostcaps.parse((FIXTURES / "host-capabilities-with-arm.xml").read_bytes())
THIS_HOST = ((9, 0, 0), (7, 2, 22))
NODE = "fake-host"


@dataclass(frozen=True)
class Capture:
    """One recorded platform: its domain capabilities, device list and the
    ``[libvirt] hw_machine_type`` that makes it the host's default."""

    name: str
    arch: str
    machine_types: tuple[tuple[str, str], ...] = ()

    def facts(self) -> HostFacts:
        cpu = FIXTURES / f"qemu-{self.arch}-cpu-expanded.xml"
        found = discovery.facts_from_files(
            [FIXTURES / f"{self.name}.xml"], "qemu",
            devices={self.arch: FIXTURES / f"qemu-{self.arch}-devices.txt"},
            cpu={self.arch: cpu} if cpu.exists() else None)
        return dataclasses.replace(found, libvirt_version=THIS_HOST[0],
                                   qemu_version=THIS_HOST[1])


CAPTURES = {
    "x86_64 pc": Capture("qemu-x86_64-pc", "x86_64"),
    "x86_64 q35": Capture("qemu-x86_64-q35", "x86_64", (("x86_64", "q35"),)),
    "i686 pc": Capture("qemu-i686-pc", "i686"),
    "aarch64 virt": Capture("qemu-aarch64-virt", "aarch64"),
}

# family -> (the image property that names its models, the models the driver decides);
# the trait family of each property is the vocabulary's.
PROPERTY_FAMILIES = {
    "NIC": ("hw_vif_model", tuple(models.NIC_MODELS)),
    "sound": ("hw_sound_model", tuple(models.SOUND_MODELS)),
    "vIOMMU": ("hw_viommu_model", (*models.VIOMMU_MODELS, "auto")),
    "video": ("hw_video_model", tuple(features.MODEL_SWITCHES["hw_video_model"].values())),
    "disk bus": ("hw_disk_bus",
                 tuple(sorted({b for buses in tables.DEVICE_BUSES.values() for b in buses}))),
}
# Families a guest asks for through the trait only.
TRAIT_FAMILIES = {
    "CPU": tuple(switches.ALL_CPU_FEATURES),
    "TPM": (*tables.TPM_MODEL_TRAITS.values(), *tables.TPM_VERSION_TRAITS.values()),
    "firmware": tuple(tables.FIRMWARE_TRAITS.values()),
    "secure boot": (ot.COMPUTE_SECURITY_UEFI_SECURE_BOOT,),
    "packed virtqueues": (ot.COMPUTE_NET_VIRTIO_PACKED,),
}


@dataclass(frozen=True)
class Ask:
    """One way of asking for one trait."""

    trait: str
    properties: tuple[tuple[str, str], ...] = ()
    via: str = "trait"

    def guest(self) -> Guest:
        extra = {} if self.properties else {f"trait:{self.trait}": "required"}
        return builders.guest(NODE, "qcow2", dict(self.properties), extra)


def asks() -> Iterator[Ask]:
    for prop, names in PROPERTY_FAMILIES.values():
        for name in names:
            trait = vocabulary.property_family(prop).trait(name)
            yield Ask(trait, ((prop, name),), prop)
            if prop != "hw_disk_bus":  # a bus trait is a requirement on the host only
                yield Ask(trait)
    for names in TRAIT_FAMILIES.values():
        for trait in names:
            yield Ask(trait)


def owned(trait: str, facts: HostFacts) -> bool:
    """Whether the driver decides ``trait`` on this host: every trait asked above but
    the CPU features of another architecture, or of a CPU it cannot know."""
    if trait not in switches.ALL_CPU_FEATURES:
        return True
    guest = facts.host_guest
    return (guest is not None and guest.cpu_features is not None
            and facts.host_arch in switches.CPU_FEATURE_ARCHS[trait])


def test_every_owned_family_is_asked_whole() -> None:
    """The families above are os-traits' whole families: a new name is asked too."""
    asked = {ask.trait for ask in asks()}
    for prefix in (vocabulary.VIF_MODEL, vocabulary.SOUND_MODEL, vocabulary.VIOMMU_MODEL,
                   vocabulary.GRAPHICS_MODEL, vocabulary.STORAGE_BUS, vocabulary.FIRMWARE):
        assert set(ot.get_traits(prefix + "_")) <= asked, prefix
    # every x86 CPU trait is a feature the driver can switch on, or one it says it cannot
    assert set(ot.get_traits("HW_CPU_X86_")) == (
        set(switches.CPU_FEATURES) | switches.NOT_CPU_FEATURES)


def driver_for(capture: Capture) -> LibvirtDriver:
    conf = builders.config(libvirt__virt_type="qemu",
                           libvirt__hw_machine_type=[f"{a}={m}" for a, m in
                                                     capture.machine_types])
    return LibvirtDriver(conf, capture.facts())


def target_for(facts: HostFacts, where: guest_config.Platform) -> Target:
    """What the capture offers a guest of ``where`` (``spawn._target`` on a live host)."""
    arch = next(g for g in HOST_CAPS.guests if g.arch == where.arch.value)
    guest = facts.guests[where.arch.value]
    return Target("qemu", arch, guest.capabilities, guest.cpu_features or frozenset(),
                  guest.devices, guest.devices_problem, facts.libvirt_version,
                  facts.qemu_version)


def late_check(driver: LibvirtDriver, reports: list[TraitReport], guest: Guest) -> str | None:
    """None if the late check accepts ``guest``, else its refusal (``spawn.prepare``
    with the capture standing in for the hypervisor)."""
    facts = driver.facts
    chosen = Settings("qemu", driver.machine_types, "/var/lib/moorage/instances")
    try:
        check_reported_support(guest, [r for r in reports if not checks.per_platform(r.trait)])
        where = guest_config.platform(guest.image, chosen, facts.host_arch)
        spawn.configure(guest, chosen, where, target_for(facts, where))
    except UnsupportedHardware as refused:
        return str(refused)
    return None


@pytest.mark.parametrize("capture", sorted(CAPTURES))
def test_reported_true_is_accepted_and_false_refused(capture: str) -> None:
    driver = driver_for(CAPTURES[capture])
    reports = driver.trait_reports(NODE)
    reported = {r.trait: r for r in reports}
    disagreements = []
    for ask in asks():
        if not owned(ask.trait, driver.facts):
            assert ask.trait not in reported  # not this architecture's, or unknown
            continue
        report = reported.get(ask.trait)
        assert report is not None, f"{ask.trait} is owned but not reported on {capture}"
        try:
            refusal = late_check(driver, reports, ask.guest())
        except FlavorImageConflict as conflict:
            refusal = f"conflict: {conflict}"
        if report.supported != (refusal is None):
            disagreements.append(
                f"{ask.trait} via {ask.via}: reported {report.supported} "
                f"({report.detail}), late check {'accepts' if refusal is None else refusal}")
    assert disagreements == []


def test_the_cpu_traits_are_tcgs() -> None:
    reported = {r.trait: r for r in driver_for(CAPTURES["x86_64 q35"]).trait_reports(NODE)}
    assert reported[ot.HW_CPU_X86_SSE2].supported
    assert reported[ot.HW_CPU_X86_AVX2].supported  # QEMU 7.2's TCG emulates AVX2
    avx512 = reported[ot.HW_CPU_X86_AVX512F]
    assert not avx512.supported
    assert avx512.detail == ("x86_64 pc-q35-7.2 domain capabilities: the TCG host-model "
                             "CPU lacks avx512f")
    assert ot.HW_CPU_X86_AMD_SEV not in reported  # no CPUID flag: not the driver's


def test_an_unknown_cpu_is_a_note_not_a_guess() -> None:
    driver = driver_for(CAPTURES["aarch64 virt"])
    assert not [r for r in driver.trait_reports(NODE) if r.trait.startswith("HW_CPU_")]
    assert ("aarch64: CPU feature traits not reported: no host-model CPU given for aarch64 "
            "(libvirt's expansion of it: virsh hypervisor-cpu-baseline --features)"
            in driver.notes())


def test_a_disagreement_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """If discovery claimed a NIC the emulator lacks, the test above would fail."""
    original = models.nic

    def claims_spapr(model: str, platform: models.GuestPlatform) -> models.Decision:
        if model == "spapr-vlan":
            return models.Decision(True, "claimed")
        return original(model, platform)

    monkeypatch.setattr(models, "nic", claims_spapr)
    driver = driver_for(CAPTURES["x86_64 q35"])
    reports = driver.trait_reports(NODE)
    assert {r.trait: r.supported for r in reports}[ot.COMPUTE_NET_VIF_MODEL_SPAPR_VLAN]
    monkeypatch.setattr(models, "nic", original)
    refusal = late_check(driver, reports, Ask(ot.COMPUTE_NET_VIF_MODEL_SPAPR_VLAN).guest())
    assert refusal is not None and "has no spapr-vlan device" in refusal
