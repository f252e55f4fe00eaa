"""A trait a driver reports True is one a guest that asks for it is built with; one it
reports False is one its late check refuses. For the VMware, Ironic and fake drivers,
on their simulations, for every guest-feature trait each owns, asked through the image
property that names it and through the trait itself:

    reported True  <=>  spawn accepts  <=>  the guest is built with it

"Built with" is read back from what the driver created: the VM vCenter holds (its NIC,
disk controller, video card, firmware), the Ironic node's ``instance_info["traits"]``
(the traits its deploy templates switch on), the fake guest's record.

The libvirt driver's proof, on recorded captures and on real QEMU, is
tests/unit/virt/libvirt/test_trait_truth.py and its functional twin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import os_traits as ot
import pytest

from moorage.model import vocabulary
from moorage.virt import switches
from moorage.virt.driver import ComputeDriver, Guest, UnsupportedHardware, device_model_traits
from moorage.virt.fake import FakeDriver, FakeHost
from moorage.virt.ironic.driver import IronicDriver
from moorage.virt.ironic.simulator import IronicSimulator, SimulatedNode
from moorage.virt.vmware import driver as vmware
from moorage.virt.vmware.driver import VMwareDriver, built_traits
from moorage.virt.vmware.simulator import VCenterSimulator
from tests.unit.virt import builders

# Image properties outside the families that name one guest feature's trait each.
FEATURE_PROPERTIES = (
    *(("hw_firmware_type", kind) for kind in switches.FIRMWARE.values()),
    ("os_secure_boot", "required"),
    *(("hw_tpm_version", v) for v in switches.TPM_VERSIONS.values()),
    *(("hw_tpm_model", m) for m in switches.TPM_MODELS.values()),
)
BUS_TRAITS = frozenset(ot.get_traits(vocabulary.STORAGE_BUS + "_"))


@dataclass(frozen=True)
class Ask:
    """One way of asking for one trait."""

    trait: str
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def via(self) -> str:
        return ", ".join(f"{p}={v}" for p, v in self.properties) or "the trait"

    def guest(self, node: str, disk_format: str) -> Guest:
        extra = {} if self.properties else {f"trait:{self.trait}": "required"}
        return builders.guest(node, disk_format, dict(self.properties), extra)


def asks() -> Iterator[Ask]:
    """Every guest-feature trait, by the property value naming it (the CD-ROM bus is the
    disk bus's family again) and by the trait (a bus trait only constrains the host)."""
    for named in vocabulary.PROPERTY_FAMILIES:
        if named.device_model and named.name != "hw_cdrom_bus":
            for value in named.values:
                yield Ask(named.trait(value), ((named.name, value),))
    for prop, value in FEATURE_PROPERTIES:
        image = builders.guest("n", "raw", {prop: value}).image
        (trait,) = device_model_traits(image)
        yield Ask(trait, ((prop, value),))
    for trait in sorted(switches.guest_feature_traits() - BUS_TRAITS):
        yield Ask(trait)


def test_every_guest_feature_is_asked_both_ways() -> None:
    by_property = {a.trait for a in asks() if a.properties}
    by_trait = {a.trait for a in asks() if not a.properties}
    features = switches.guest_feature_traits()
    assert by_trait == features - BUS_TRAITS
    # every feature a property can name is asked by it (secret security and packed
    # virtqueues have no property)
    assert features - by_property == switches.TPM_SECRET_SECURITY | {switches.VIRTIO_PACKED}


@dataclass(frozen=True)
class Subject:
    """A driver on its simulation, the image type it boots, and how to read back what
    it built for a guest."""

    driver: ComputeDriver
    node: str
    disk_format: str
    built: Callable[[str], frozenset[str]]
    # The traits the driver must decide, whole: True or False, never left out.
    owns: frozenset[str]


def vmware_subject(simulator: VCenterSimulator) -> Subject:
    driver = VMwareDriver(builders.config(), simulator)

    def built(uuid: str) -> frozenset[str]:
        (vm,) = [vm for vm in simulator.list_vms() if vm.uuid == uuid]
        return built_traits(vm)

    return Subject(driver, driver.nodes()[0], "vmdk", built, switches.guest_feature_traits())


NODE_FEATURES = frozenset({ot.COMPUTE_FIRMWARE_UEFI, ot.COMPUTE_SECURITY_UEFI_SECURE_BOOT,
                           ot.COMPUTE_SECURITY_TPM_2_0, ot.COMPUTE_NET_VIF_MODEL_E1000,
                           ot.COMPUTE_STORAGE_BUS_SATA})


def ironic_subject(traits: frozenset[str]) -> Subject:
    uuid = "1b0c6d1e-0000-4000-8000-00000000a001"
    simulator = IronicSimulator([SimulatedNode(uuid, "bm-1", "baremetal", traits,
                                               {"cpu_arch": "x86_64"})])
    driver = IronicDriver(builders.config(), simulator)

    def built(instance: str) -> frozenset[str]:
        record = simulator.node_by_instance(instance)
        assert record is not None
        return frozenset(record.instance_info["traits"])  # type: ignore[arg-type]

    return Subject(driver, uuid, "raw", built, switches.guest_feature_traits())


# A fake host standing in for a QEMU q35 host: what it says, both ways.
FAKE_TRAITS = {
    ot.COMPUTE_NET_VIF_MODEL_VIRTIO: True, ot.COMPUTE_NET_VIF_MODEL_E1000: True,
    ot.COMPUTE_NET_VIF_MODEL_NE2K_PCI: False, ot.COMPUTE_STORAGE_BUS_SATA: True,
    ot.COMPUTE_STORAGE_BUS_IDE: False, ot.COMPUTE_GRAPHICS_MODEL_QXL: True,
    ot.COMPUTE_GRAPHICS_MODEL_XEN: False, ot.COMPUTE_SOUND_MODEL_ICH9: True,
    ot.COMPUTE_SOUND_MODEL_SB16: False, ot.COMPUTE_VIOMMU_MODEL_INTEL: True,
    ot.COMPUTE_VIOMMU_MODEL_SMMUV3: False, ot.COMPUTE_FIRMWARE_UEFI: True,
    ot.COMPUTE_SECURITY_TPM_1_2: False, ot.COMPUTE_SECURITY_TPM_2_0: True,
    ot.COMPUTE_NET_VIRTIO_PACKED: False,
}


def fake_subject() -> Subject:
    driver = FakeDriver(builders.config(), FakeHost(nodes=("fake-1",), traits=FAKE_TRAITS))
    return Subject(driver, "fake-1", "raw", driver.built_with, frozenset(FAKE_TRAITS))


SUBJECTS: dict[str, Callable[[], Subject]] = {
    "vmware, every device": lambda: vmware_subject(VCenterSimulator()),
    # the defaults (e1000, LSI Logic SCSI) and little else
    "vmware, e1000 on IDE and SCSI": lambda: vmware_subject(VCenterSimulator(
        nic_devices=("VirtualE1000",),
        disk_controllers=("VirtualIDEController", "VirtualLsiLogicController"))),
    "ironic, a node with features": lambda: ironic_subject(NODE_FEATURES),
    "ironic, a bare node": lambda: ironic_subject(frozenset()),
    "fake": fake_subject,
}


def disagreements(subject: Subject) -> list[str]:
    """Every ask on which the report, the late check and the built guest disagree."""
    driver, node = subject.driver, subject.node
    reported = {r.trait: r for r in driver.trait_reports(node)}
    found = []
    for ask in asks():
        report = reported.get(ask.trait)
        if report is None:
            assert ask.trait not in subject.owns, f"{ask.trait} is owned but not reported"
            continue
        guest = ask.guest(node, subject.disk_format)
        try:
            driver.spawn(guest)
        except UnsupportedHardware as refused:
            if report.supported:
                found.append(f"{ask.trait} via {ask.via}: reported True ({report.detail}), "
                             f"refused: {refused}")
            continue
        built = subject.built(guest.uuid)
        driver.destroy(guest.uuid)
        if not report.supported:
            found.append(f"{ask.trait} via {ask.via}: reported False ({report.detail}), "
                         "accepted")
        elif ask.trait not in built:
            found.append(f"{ask.trait} via {ask.via}: reported True and accepted, "
                         f"built with {sorted(built)}")
    return found


@pytest.mark.parametrize("name", sorted(SUBJECTS))
def test_reported_true_is_built_and_false_refused(name: str) -> None:
    assert disagreements(SUBJECTS[name]()) == []


@pytest.mark.parametrize("name", sorted(SUBJECTS))
def test_each_subject_has_both_answers(name: str) -> None:
    """The test above sees True and False reports on every subject but the bare node,
    so it tests both halves; the bare node refuses every feature."""
    subject = SUBJECTS[name]()
    asked = {a.trait for a in asks()}
    answers = {r.supported for r in subject.driver.trait_reports(subject.node)
               if r.trait in asked}
    assert answers == ({False} if name == "ironic, a bare node" else {True, False})


def test_a_report_the_driver_does_not_build_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """If the VMware driver claimed a sound card it never adds, the test would fail."""
    claimed = tuple(
        r if r.trait != ot.COMPUTE_SOUND_MODEL_AC97 else
        vmware.TraitReport(r.trait, True, r.source, "claimed") for r in vmware.FEATURE_REPORTS)
    monkeypatch.setattr(vmware, "FEATURE_REPORTS", claimed)
    found = disagreements(vmware_subject(VCenterSimulator()))
    assert found == [
        f"{ot.COMPUTE_SOUND_MODEL_AC97} via {how}: reported True and accepted, built with "
        f"{sorted(built_traits_of_default())}" for how in ("hw_sound_model=ac97", "the trait")]


def built_traits_of_default() -> frozenset[str]:
    """What a VM on the default cluster is built with when the image names nothing."""
    return frozenset({ot.COMPUTE_NET_VIF_MODEL_E1000, ot.COMPUTE_STORAGE_BUS_SCSI,
                      ot.COMPUTE_GRAPHICS_MODEL_VMVGA, ot.COMPUTE_FIRMWARE_BIOS})


def test_a_refusal_the_driver_does_not_report_is_caught() -> None:
    """If an Ironic node's record said it has UEFI but the driver refused it, the test
    would fail: here the node is in maintenance, so every spawn is refused."""
    subject = ironic_subject(NODE_FEATURES)
    assert isinstance(subject.driver, IronicDriver)
    subject.driver.simulator.set_maintenance(subject.node, True, "fan")
    found = disagreements(subject)
    assert f"{ot.COMPUTE_FIRMWARE_UEFI} via the trait" in "\n".join(found)
