"""What the live libvirt host reports is what its driver builds, on real QEMU (TCG).

For the pc and q35 machine types of this machine's QEMU, through libvirt's embedded
driver:

1. every trait of every family the driver owns: reported True <=> the late check
   accepts a guest that asks for it (the same property as on the recorded captures,
   tests/unit/virt/libvirt/test_trait_truth.py, here on the live host);
2. the NIC, sound and vIOMMU models whole, and a sample of the other families:
   the guest, built as the driver builds it but with the late checks skipped,
   defines and starts on real QEMU <=> the trait is reported True. So a False report
   is a real refusal of libvirt or QEMU, not a table's.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import os_traits as ot
import pytest

from moorage.conf import load_config
from moorage.virt.driver import Guest, UnsupportedHardware
from moorage.virt.libvirt import guest as guest_config
from moorage.virt.libvirt import models, root_disk, spawn
from moorage.virt.libvirt.driver import LibvirtDriver
from moorage.virt.switches import FlavorImageConflict
from tests.unit.virt.libvirt.test_trait_truth import Ask, asks, owned

NODE = "truth-1"
MACHINES = {"pc": None, "q35": "q35"}
# Asked on real QEMU beyond NIC, sound and vIOMMU: one supported and one not per family.
SAMPLES = [
    Ask(ot.COMPUTE_NET_VIRTIO_PACKED),
    Ask(ot.HW_CPU_X86_SSE2),
    Ask(ot.HW_CPU_X86_AVX512F),
    Ask(ot.COMPUTE_STORAGE_BUS_IDE, (("hw_disk_bus", "ide"),), "hw_disk_bus"),
    Ask(ot.COMPUTE_STORAGE_BUS_SATA, (("hw_disk_bus", "sata"),), "hw_disk_bus"),
    Ask(ot.COMPUTE_GRAPHICS_MODEL_GOP, (("hw_video_model", "gop"),), "hw_video_model"),
    Ask(ot.COMPUTE_GRAPHICS_MODEL_BOCHS, (("hw_video_model", "bochs"),), "hw_video_model"),
]


@pytest.fixture(scope="module")
def drivers(libvirt_embed_uri: str) -> Iterator[dict[str, LibvirtDriver]]:
    instances = Path(tempfile.mkdtemp(prefix="truth-"))
    found = {}
    for name, machine in MACHINES.items():
        overrides: list[tuple[str, str, object]] = [
            ("libvirt", "virt_type", "qemu"),
            ("libvirt", "connection_uri", libvirt_embed_uri),
            ("DEFAULT", "host", NODE),
            ("DEFAULT", "instances_path", str(instances)),
        ]
        if machine:
            overrides.append(("libvirt", "hw_machine_type", [f"x86_64={machine}"]))
        driver = LibvirtDriver(load_config(overrides=overrides))
        driver.init_host()
        found[name] = driver
    yield found
    shutil.rmtree(instances, ignore_errors=True)


def _small(guest: Guest) -> Guest:
    return dataclasses.replace(guest, flavor=dataclasses.replace(guest.flavor, vcpus=1,
                                                                 memory_mb=128))


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_reported_true_is_accepted_and_false_refused_live(
        drivers: dict[str, LibvirtDriver], machine: str) -> None:
    driver = drivers[machine]
    reported = {r.trait: r for r in driver.trait_reports(NODE)}
    disagreements = []
    for ask in asks():
        if not owned(ask.trait, driver.facts):
            assert ask.trait not in reported
            continue
        report = reported.get(ask.trait)
        assert report is not None, f"{ask.trait} is owned but not reported on {machine}"
        guest = dataclasses.replace(ask.guest(), node=NODE)
        try:
            spawn.prepare(driver, guest)
            refusal = None
        except (UnsupportedHardware, FlavorImageConflict) as refused:
            refusal = str(refused)
        if report.supported != (refusal is None):
            disagreements.append(f"{ask.trait} via {ask.via}: reported {report.supported} "
                                 f"({report.detail}), late check {refusal or 'accepts'}")
    assert disagreements == []


def started_on_qemu(driver: LibvirtDriver, guest: Guest) -> str | None:
    """Build ``guest`` as the driver would, skip the late checks, define and start it on
    real QEMU. None if it ran, else libvirt's or QEMU's refusal. Undone either way."""
    import libvirt

    chosen = spawn.settings(driver)
    where = guest_config.platform(guest.image, chosen, driver.facts.host_arch)
    target = spawn._target(driver, where, False)
    assert target.arch is not None
    config = guest_config.resolve(guest, chosen, where, target.capabilities,
                                  target.arch.emulator_for(where.domain_type),
                                  str(Path(chosen.instances_path) / guest.uuid),
                                  models.auto_viommu(target.platform(where.arch.value)))
    conn = driver.host.connection()
    Path(config.console_log).parent.mkdir(parents=True, exist_ok=True)
    domain = None
    try:
        root_disk.create(config.root, 1, None)
        domain = conn.defineXML(guest_config.to_string(guest_config.domain_xml(config)))
        domain.create()
        return None
    except libvirt.libvirtError as exc:
        return " ".join(str(exc).split())
    finally:
        if domain is not None:
            spawn._stop_and_undefine(libvirt, domain)
        shutil.rmtree(Path(config.console_log).parent, ignore_errors=True)


def on_qemu() -> list[Ask]:
    families = ("hw_vif_model", "hw_sound_model", "hw_viommu_model")
    return [ask for ask in asks() if ask.via in families] + SAMPLES


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_real_qemu_starts_exactly_what_is_reported(
        drivers: dict[str, LibvirtDriver], machine: str) -> None:
    driver = drivers[machine]
    reported = {r.trait: r.supported for r in driver.trait_reports(NODE)}
    disagreements = []
    for ask in on_qemu():
        guest = _small(dataclasses.replace(ask.guest(), node=NODE))
        refusal = started_on_qemu(driver, guest)
        if reported[ask.trait] != (refusal is None):
            disagreements.append(f"{ask.trait} via {ask.via}: reported {reported[ask.trait]},"
                                 f" real QEMU: {refusal or 'started'}")
    assert disagreements == []
    # the families above include models both ways on this host
    assert {reported[a.trait] for a in on_qemu()} == {True, False}
