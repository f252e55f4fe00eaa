"""Every domain document the builder generates validates against libvirt's RNG schema
(/usr/share/libvirt/schemas/domain.rng, from libvirt0), for a large table of guests:
every bus, CD-ROM bus, video and NIC model, firmware, TPM, HPET, CPU features,
architectures. The late checks are not run here: a document the host would refuse
must still be one libvirt could read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import os_traits as ot
import pytest
from lxml import etree

from moorage.model import image
from moorage.virt import switches as features
from moorage.virt.libvirt import guest as guest_config
from moorage.virt.libvirt import switches, tables, validation
from moorage.virt.libvirt.guest import Settings
from tests.unit.virt.libvirt.test_guest import configure, make_guest, settings

Case = tuple[str, Mapping[str, str], Mapping[str, str], str, Settings]
CASES: list[Case] = []


def case(name: str, properties: Mapping[str, str] | None = None,
         flavor: Mapping[str, str] | None = None, disk_format: str = "qcow2",
         chosen: Settings | None = None) -> None:
    CASES.append((name, properties or {}, flavor or {}, disk_format, chosen or settings()))


for machine in ("pc", "q35"):
    for bus in tables.DEVICE_BUSES["qemu"]:
        case(f"disk-{bus}-{machine}", {"hw_disk_bus": bus, "hw_machine_type": machine})
        case(f"cdrom-{bus}-{machine}", {"hw_cdrom_bus": bus, "hw_machine_type": machine},
             disk_format="iso")
    case(f"cdrom-default-{machine}", {"hw_machine_type": machine}, disk_format="iso")
    for model in image.VIDEO_MODELS:
        case(f"video-{model}-{machine}", {"hw_video_model": model, "hw_machine_type": machine})
for model in image.VIF_MODELS:
    case(f"nic-{model}", {"hw_vif_model": model})
    case(f"nic-{model}-kvm", {"hw_vif_model": model}, chosen=settings("kvm"))
for scsi in image.SCSI_MODELS:
    case(f"scsi-{scsi}", {"hw_disk_bus": "scsi", "hw_scsi_model": scsi})
for firmware_case, properties, flavor in [
    ("uefi", {"hw_firmware_type": "uefi"}, {}),
    ("uefi-trait", {}, {"trait:COMPUTE_FIRMWARE_UEFI": "required"}),
    ("bios", {"hw_firmware_type": "bios"}, {}),
    ("bios-trait", {}, {"trait:COMPUTE_FIRMWARE_BIOS": "required"}),
    ("secure-boot", {"hw_machine_type": "q35", "os_secure_boot": "required"}, {}),
    ("secure-boot-trait", {"hw_machine_type": "q35"},
     {"trait:COMPUTE_SECURITY_UEFI_SECURE_BOOT": "required"}),
    ("secure-boot-optional", {"hw_machine_type": "q35", "hw_firmware_type": "uefi",
                              "os_secure_boot": "optional"}, {}),
    ("secure-boot-disabled", {"hw_firmware_type": "uefi", "os_secure_boot": "disabled"}, {}),
]:
    case(f"firmware-{firmware_case}", properties, flavor)
for tpm_trait in sorted(features.tpm_traits(ot.get_traits("COMPUTE_SECURITY_TPM_"))):
    case(f"tpm-{tpm_trait}", flavor={f"trait:{tpm_trait}": "required"})
for version in image.TPM_VERSIONS:
    for model in image.TPM_MODELS:
        if (model, version) != ("tpm-crb", "1.2"):
            case(f"tpm-{model}-{version}", {"hw_tpm_model": model, "hw_tpm_version": version})
for virt_type in ("qemu", "kvm"):
    case(f"hpet-on-{virt_type}", {"hw_time_hpet": "true"}, chosen=settings(virt_type))
    case(f"hpet-off-{virt_type}", {"hw_time_hpet": "false"}, chosen=settings(virt_type))
case("hpet-on-aarch64", {"hw_time_hpet": "true", "hw_emulation_architecture": "aarch64"})
case("cpu-every-feature",
     flavor={f"trait:{t}": "required" for t in switches.CPU_FEATURES})
case("cpu-features-kvm", {"trait:HW_CPU_X86_AVX2": "required"},
     {"trait:HW_CPU_X86_SSE42": "required"}, chosen=settings("kvm"))
for arch in ("i686", "aarch64", "ppc64le", "s390x"):
    case(f"emulated-{arch}", {"hw_emulation_architecture": arch}, chosen=settings("kvm"))
case("windows", {"os_type": "windows"})
case("raw-disk", chosen=Settings("qemu", {}, "/srv/instances", disk_format="raw"))
case("q35-configured", chosen=settings(x86_64="q35"))
case("everything", {
    "hw_machine_type": "q35", "hw_disk_bus": "sata", "hw_video_model": "qxl",
    "hw_vif_model": "e1000e", "hw_time_hpet": "yes", "hw_tpm_model": "tpm-crb",
    "hw_firmware_type": "uefi", "os_secure_boot": "required"},
    {"trait:HW_CPU_X86_AVX2": "required"}, chosen=settings("kvm"))


def generated(properties: Mapping[str, str], flavor: Mapping[str, str], disk_format: str,
              chosen: Settings) -> etree._Element:
    guest = make_guest(properties, disk_format=disk_format, extra_specs=flavor)
    return guest_config.domain_xml(configure(guest, chosen))


@pytest.mark.parametrize(("properties", "flavor", "disk_format", "chosen"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_generated_domains_validate(properties: Mapping[str, str], flavor: Mapping[str, str],
                                    disk_format: str, chosen: Settings) -> None:
    validation.validate(generated(properties, flavor, disk_format, chosen))


def test_the_table_is_large() -> None:
    assert len(CASES) >= 100


@pytest.mark.parametrize(("xpath", "attribute", "value", "complaint"), [
    ("devices/disk/target", "bus", "lxc", "devices"),
    ("devices/video/model", "type", "bogus-video", "devices"),
    ("clock", "offset", "sometimes", "clock"),
    ("os/type", "arch", "", "os"),
])
def test_the_schema_refuses_what_libvirt_would(xpath: str, attribute: str, value: str,
                                               complaint: str) -> None:
    document = generated({}, {}, "qcow2", settings())
    element = document.find(xpath)
    assert element is not None
    element.set(attribute, value)
    with pytest.raises(validation.InvalidDomainXML) as refused:
        validation.validate(document)
    assert any(complaint in error for error in refused.value.errors), refused.value.errors


def test_an_unknown_element_is_refused() -> None:
    document = generated({}, {}, "qcow2", settings())
    etree.SubElement(document, "frobnicate")
    with pytest.raises(validation.InvalidDomainXML, match="frobnicate"):
        validation.validate(document)


def test_a_missing_schema_says_so(tmp_path: Path) -> None:
    missing = tmp_path / "domain.rng"
    with pytest.raises(validation.SchemaUnavailable, match="cannot load libvirt's domain"):
        validation.validate(generated({}, {}, "qcow2", settings()), missing)
