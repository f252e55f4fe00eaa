"""Guest configuration: from flavor, image and requested traits to the domain document.

Upstream's defaults per architecture, machine type and virt type; the image's
``hw_*`` properties; the traits that switch features on. The host is the domain
capabilities captured from this machine's QEMU (tests/fixtures/domcaps). Each
case reads the generated document with XPath, as libvirt would.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path

import os_traits as ot
import pytest
from lxml import etree

from moorage.virt.driver import Guest
from moorage.virt.libvirt import defaults, domcaps, hostcaps, qemu_devices
from moorage.virt.libvirt import guest as guest_config
from moorage.virt.libvirt.checks import Target
from moorage.virt.libvirt.guest import GuestConfig, Settings
from moorage.virt.switches import FlavorImageConflict
from tests.unit.virt import builders

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "domcaps"
HOST_CAPS = hostcaps.parse((FIXTURES / "host-capabilities.xml").read_bytes())
# CPU features a TCG guest can have on this machine (what libvirt expanded QEMU's
# host-model CPU to), enough for these tests.
TCG_CPU_FEATURES = frozenset({"sse4.2", "avx", "avx2", "aes", "pni", "ssse3", "fma"})
# The platform's domain capabilities file, by arch and machine type.
CAPS_FILES = {("x86_64", "pc"): "qemu-x86_64-pc.xml", ("x86_64", "q35"): "qemu-x86_64-q35.xml",
              ("i686", "pc"): "qemu-i686-pc.xml", ("aarch64", "virt"): "qemu-aarch64-virt.xml"}
THIS_LIBVIRT = (9, 0, 0)
NODE = "compute-1"


def settings(virt_type: str = "qemu", **machine_types: str) -> Settings:
    return Settings(virt_type=virt_type, machine_types=machine_types,
                    instances_path="/var/lib/moorage/instances")


def make_guest(properties: Mapping[str, object] | None = None, *, disk_format: str = "qcow2",
               extra_specs: Mapping[str, str] | None = None) -> Guest:
    return builders.guest(NODE, disk_format, properties, extra_specs)


def devices(arch: str) -> qemu_devices.DeviceList | None:
    """The device list recorded from this machine's emulator for ``arch``."""
    path = FIXTURES / f"qemu-{arch}-devices.txt"
    return qemu_devices.read_file(path, f"qemu-system-{arch}", "7.2.22") if path.exists() else None


def target(arch: str = "x86_64", machine: str | None = "pc", virt_type: str = "qemu",
           caps_file: str | None = None, cpu_features: frozenset[str] = TCG_CPU_FEATURES,
           device_list: qemu_devices.DeviceList | str | None = "recorded",
           libvirt_version: tuple[int, int, int] = THIS_LIBVIRT) -> Target:
    """This machine as the checks see it, for one platform."""
    guest_arch = next((g for g in HOST_CAPS.guests if g.arch == arch), None)
    board = ("q35" if defaults.is_q35(machine) else
             "virt" if machine and machine.startswith("virt") else "pc")
    name = caps_file or CAPS_FILES.get((arch, board))
    caps = domcaps.parse_file(FIXTURES / name) if name else None
    listed = devices(arch) if device_list == "recorded" else device_list
    assert not isinstance(listed, str)
    return Target(virt_type, guest_arch, caps, cpu_features, listed,
                  None if listed else "no device list", libvirt_version, (7, 2, 22))


def configure(guest: Guest, chosen: Settings | None = None,
              where: Target | None = None, host_arch: str = "x86_64") -> GuestConfig:
    """The guest's choices on this machine (no checks)."""
    chosen = chosen or settings()
    platform = guest_config.platform(guest.image, chosen, host_arch)
    machine = platform.machine.value if platform.machine else None
    if where is None:
        where = target(platform.arch.value, machine, chosen.virt_type)
    emulator = where.arch.emulator_for(platform.domain_type) if where.arch else None
    return guest_config.resolve(guest, chosen, platform, where.capabilities, emulator,
                                f"/var/lib/moorage/instances/{guest.uuid}")


def document(guest: Guest, chosen: Settings | None = None) -> etree._Element:
    return guest_config.domain_xml(configure(guest, chosen))


def one(element: etree._Element, xpath: str) -> str:
    """The single value ``xpath`` selects; fails when there are none or several."""
    found = element.xpath(xpath)
    assert isinstance(found, list) and len(found) == 1, f"{xpath}: {found}"
    return str(found[0])


def count(element: etree._Element, xpath: str) -> int:
    found = element.xpath(xpath)
    assert isinstance(found, list)
    return len(found)


# -- upstream's defaults ------------------------------------------------------------------

@pytest.mark.parametrize(("virt_type", "arch", "machine", "bus"), [
    ("qemu", "x86_64", "pc", "ide"),
    ("kvm", "x86_64", "pc-i440fx-7.2", "ide"),
    ("kvm", "x86_64", "q35", "sata"),
    ("qemu", "x86_64", "pc-q35-7.2", "sata"),
    ("kvm", "i686", None, "ide"),
    ("kvm", "aarch64", "virt", "scsi"),
    ("kvm", "ppc64le", "pseries", "scsi"),
    ("kvm", "s390x", "s390-ccw-virtio", "scsi"),
    ("parallels", "x86_64", None, "ide"),
    ("lxc", "x86_64", None, "lxc"),
])
def test_cdrom_bus_defaults(virt_type: str, arch: str, machine: str | None, bus: str) -> None:
    assert defaults.cdrom_bus(virt_type, arch, machine) == bus


@pytest.mark.parametrize(("virt_type", "disk", "vif"), [
    ("kvm", "virtio", "virtio"),
    ("qemu", "virtio", "virtio"),
    ("parallels", "scsi", "virtio"),
    ("lxc", "lxc", None),
])
def test_disk_and_nic_defaults(virt_type: str, disk: str, vif: str | None) -> None:
    assert (defaults.disk_bus(virt_type), defaults.vif_model(virt_type)) == (disk, vif)


@pytest.mark.parametrize(("virt_type", "arch", "video"), [
    ("qemu", "x86_64", "virtio"),
    ("kvm", "i686", "virtio"),
    ("kvm", "aarch64", "virtio"),
    ("kvm", "mipsel", "virtio"),
    ("kvm", "ppc64le", "vga"),
    ("kvm", "ppc", "vga"),
    ("parallels", "x86_64", "vga"),
    ("lxc", "x86_64", None),
])
def test_video_model_defaults(virt_type: str, arch: str, video: str | None) -> None:
    assert defaults.video_model(virt_type, arch) == video


@pytest.mark.parametrize(("arch", "properties", "configured", "machine"), [
    ("x86_64", {}, {}, "pc"),
    ("i686", {}, {}, "pc"),
    ("aarch64", {}, {}, "virt"),
    ("armv7l", {}, {}, "virt"),
    ("s390x", {}, {}, "s390-ccw-virtio"),
    ("ppc64le", {}, {}, None),
    ("x86_64", {}, {"x86_64": "q35"}, "q35"),
    ("x86_64", {}, {"aarch64": "virt"}, "pc"),
    ("x86_64", {"hw_machine_type": "pc-i440fx-6.2"}, {"x86_64": "q35"}, "pc-i440fx-6.2"),
    ("aarch64", {"hw_emulation_architecture": "aarch64"}, {"x86_64": "q35"}, "virt"),
])
def test_machine_type_precedence(arch: str, properties: dict[str, str],
                                 configured: dict[str, str], machine: str | None) -> None:
    image = make_guest(properties).image
    chosen = guest_config.platform(image, settings("kvm", **configured), arch)
    assert (chosen.machine.value if chosen.machine else None) == machine


# -- platform -------------------------------------------------------------------------

@pytest.mark.parametrize(("properties", "virt_type", "arch", "emulated", "domain_type"), [
    ({}, "qemu", "x86_64", False, "qemu"),
    ({}, "kvm", "x86_64", False, "kvm"),
    ({"hw_architecture": "i386"}, "kvm", "i686", False, "kvm"),
    ({"hw_architecture": "x86_64", "hw_emulation_architecture": "aarch64"}, "kvm", "aarch64",
     True, "qemu"),
    ({"hw_emulation_architecture": "i686"}, "qemu", "i686", True, "qemu"),
])
def test_platform_arch_and_domain_type(properties: dict[str, str], virt_type: str, arch: str,
                                       emulated: bool, domain_type: str) -> None:
    platform = guest_config.platform(make_guest(properties).image, settings(virt_type),
                                     "x86_64")
    assert (platform.arch.value, platform.emulated, platform.domain_type) == (
        arch, emulated, domain_type)


def test_platform_machine_type_says_where_it_came_from() -> None:
    q35_host = settings(x86_64="q35")
    image = make_guest().image
    assert str(guest_config.platform(image, settings(), "x86_64").machine) == (
        "pc (default for x86_64)")
    assert str(guest_config.platform(image, q35_host, "x86_64").machine) == (
        "q35 ([libvirt] hw_machine_type for x86_64)")
    pinned = make_guest({"hw_machine_type": "pc-i440fx-7.2"}).image
    assert str(guest_config.platform(pinned, q35_host, "x86_64").machine) == (
        "pc-i440fx-7.2 (hw_machine_type)")


@pytest.mark.parametrize("virt_type", ["lxc", "parallels"])
def test_only_qemu_guests_are_built(virt_type: str) -> None:
    with pytest.raises(Exception, match=f"virt_type={virt_type}"):
        guest_config.platform(make_guest().image, settings(virt_type), "x86_64")


# -- the document -----------------------------------------------------------------------

def test_a_guest_with_no_properties_gets_upstreams_defaults() -> None:
    guest = make_guest()
    xml = document(guest)
    assert one(xml, "/domain/@type") == "qemu"
    assert one(xml, "/domain/name/text()") == f"instance-{guest.uuid}"
    assert one(xml, "/domain/uuid/text()") == guest.uuid
    assert one(xml, "/domain/title/text()") == guest.name
    assert one(xml, "/domain/os/type/@arch") == "x86_64"
    assert one(xml, "/domain/os/type/@machine") == "pc"
    assert one(xml, "/domain/os/boot/@dev") == "hd"
    assert count(xml, "/domain/os/@firmware") == 0
    assert one(xml, "/domain/devices/emulator/text()") == "/usr/bin/qemu-system-x86_64"
    assert one(xml, "/domain/devices/disk/@device") == "disk"
    assert one(xml, "/domain/devices/disk/target/@bus") == "virtio"
    assert one(xml, "/domain/devices/disk/target/@dev") == "vda"
    assert one(xml, "/domain/devices/disk/driver/@type") == "qcow2"
    assert one(xml, "/domain/devices/disk/source/@file") == (
        f"/var/lib/moorage/instances/{guest.uuid}/disk")
    assert one(xml, "/domain/devices/video/model/@type") == "virtio"
    assert one(xml, "/domain/devices/interface/@type") == "user"
    assert one(xml, "/domain/devices/interface/model/@type") == "virtio"
    # TCG has no vhost-net: QEMU's own virtio-net, as upstream
    assert one(xml, "/domain/devices/interface/driver/@name") == "qemu"
    assert one(xml, "/domain/devices/serial/source/@path") == (
        f"/var/lib/moorage/instances/{guest.uuid}/console.log")
    assert one(xml, "/domain/cpu/@mode") == "host-model"
    assert count(xml, "/domain/cpu/feature") == 0
    assert count(xml, "/domain/clock/timer") == 0  # TCG: no timers unless asked
    assert count(xml, "/domain/devices/tpm") == 0


def test_flavor_sizes_the_guest() -> None:
    guest = make_guest()
    xml = document(guest)
    assert one(xml, "/domain/vcpu/text()") == str(guest.flavor.vcpus)
    assert one(xml, "/domain/memory/text()") == str(guest.flavor.memory_mb)
    assert one(xml, "/domain/memory/@unit") == "MiB"


def test_metadata_names_the_instance_flavor_and_image() -> None:
    guest = make_guest()
    xml = document(guest)
    ns = {"m": guest_config.METADATA_NS}
    assert xml.xpath("/domain/metadata/m:instance/m:node/text()", namespaces=ns) == [NODE]
    assert xml.xpath("/domain/metadata/m:instance/m:flavor/@name", namespaces=ns) == [
        guest.flavor.name]
    assert xml.xpath("/domain/metadata/m:instance/m:image/@id", namespaces=ns) == [
        guest.image.id]


def test_mac_is_stable_and_openstacks() -> None:
    uuid = "0e5a3f4b-8f68-4c38-b8f7-3c0c5f1f8d6b"
    assert guest_config.mac_address(uuid) == "fa:16:3e:1f:8d:6b"
    assert guest_config.mac_address(uuid) == guest_config.mac_address(uuid)


@pytest.mark.parametrize(("properties", "bus", "dev"), [
    ({"hw_disk_bus": "virtio"}, "virtio", "vda"),
    ({"hw_disk_bus": "ide"}, "ide", "hda"),
    ({"hw_disk_bus": "sata"}, "sata", "sda"),
    ({"hw_disk_bus": "scsi"}, "scsi", "sda"),
    ({"hw_disk_bus": "usb"}, "usb", "sda"),
])
def test_disk_bus_from_the_image(properties: dict[str, str], bus: str, dev: str) -> None:
    xml = document(make_guest(properties))
    assert (one(xml, "//disk/target/@bus"), one(xml, "//disk/target/@dev")) == (bus, dev)
    assert one(xml, "//disk/@device") == "disk"


def test_a_disk_on_the_floppy_controller_is_a_floppy() -> None:
    xml = document(make_guest({"hw_disk_bus": "fdc"}))
    assert (one(xml, "//disk/@device"), one(xml, "//disk/target/@dev")) == ("floppy", "fda")
    assert one(xml, "/domain/os/boot/@dev") == "fd"


@pytest.mark.parametrize(("properties", "chosen", "bus"), [
    ({}, settings(), "ide"),
    ({}, settings(x86_64="q35"), "sata"),
    ({"hw_machine_type": "pc-q35-7.2"}, settings(), "sata"),
    ({"hw_cdrom_bus": "scsi"}, settings(), "scsi"),
    ({"hw_cdrom_bus": "usb", "hw_disk_bus": "ide"}, settings(x86_64="q35"), "usb"),
])
def test_an_iso_image_boots_from_a_cdrom_on_the_cdrom_bus(
        properties: dict[str, str], chosen: Settings, bus: str) -> None:
    xml = document(make_guest(properties, disk_format="iso"), chosen)
    assert one(xml, "//disk/@device") == "cdrom"
    assert one(xml, "//disk/target/@bus") == bus
    assert one(xml, "//disk/driver/@type") == "raw"
    assert count(xml, "//disk/readonly") == 1
    assert one(xml, "/domain/os/boot/@dev") == "cdrom"


@pytest.mark.parametrize("model", ["vga", "cirrus", "qxl", "virtio", "bochs", "none", "vmvga"])
def test_video_model_from_the_image(model: str) -> None:
    xml = document(make_guest({"hw_video_model": model}))
    assert one(xml, "//video/model/@type") == model


@pytest.mark.parametrize("model", ["e1000", "e1000e", "rtl8139", "virtio", "pcnet", "ne2k_pci",
                                   "vmxnet3"])
def test_nic_model_from_the_image(model: str) -> None:
    xml = document(make_guest({"hw_vif_model": model}))
    assert one(xml, "//interface/model/@type") == model
    assert count(xml, "//interface/driver") == (1 if model == "virtio" else 0)


def test_vmware_nic_names_are_canonical_models() -> None:
    xml = document(make_guest({"hw_vif_model": "VirtualE1000"}))
    assert one(xml, "//interface/model/@type") == "e1000"


def test_kvm_keeps_vhost_for_virtio() -> None:
    xml = document(make_guest(), settings("kvm"))
    assert one(xml, "/domain/@type") == "kvm"
    assert count(xml, "//interface/driver") == 0


def test_scsi_model_adds_the_controller() -> None:
    xml = document(make_guest({"hw_disk_bus": "scsi", "hw_scsi_model": "virtio-scsi"}))
    assert one(xml, "//controller[@type='scsi']/@model") == "virtio-scsi"
    assert count(document(make_guest({"hw_disk_bus": "scsi"})), "//controller") == 0


# -- architecture -----------------------------------------------------------------------

def test_emulated_architecture_runs_under_tcg_with_a_generic_cpu() -> None:
    guest = make_guest({"hw_emulation_architecture": "i686"})
    xml = document(guest, settings("kvm"))
    assert one(xml, "/domain/@type") == "qemu"
    assert one(xml, "/domain/os/type/@arch") == "i686"
    assert one(xml, "/domain/devices/emulator/text()") == "/usr/bin/qemu-system-i386"
    assert one(xml, "/domain/cpu/@mode") == "custom"
    assert one(xml, "/domain/cpu/model/text()") == "qemu32"


def test_image_architecture_picks_its_emulator() -> None:
    xml = document(make_guest({"hw_architecture": "i386"}), settings("kvm"))
    assert one(xml, "/domain/@type") == "kvm"
    assert one(xml, "/domain/os/type/@arch") == "i686"
    assert one(xml, "/domain/devices/emulator/text()") == "/usr/bin/qemu-system-i386"
    assert one(xml, "/domain/cpu/@mode") == "host-model"


# -- traits that switch features on -----------------------------------------------------

@pytest.mark.parametrize(("flavor", "image", "features"), [
    ({"trait:HW_CPU_X86_AVX2": "required"}, {}, ["avx2"]),
    ({}, {"trait:HW_CPU_X86_SSE42": "required"}, ["sse4.2"]),
    ({"trait1:HW_CPU_X86_AESNI": "required", "trait:HW_CPU_X86_SSE3": "required"},
     {"trait:HW_CPU_X86_AVX2": "required"}, ["aes", "avx2", "pni"]),
    # forbidden traits and images' non-required ones switch nothing on
    ({"trait:HW_CPU_X86_AVX2": "forbidden"}, {"trait:HW_CPU_X86_AVX": "preferred"}, []),
    # traits that are no CPU flag constrain the host only
    ({"trait:HW_CPU_X86_AMD_SEV": "required", "trait:COMPUTE_STORAGE_BUS_SATA": "required",
      "trait:CUSTOM_GOLD": "required"}, {}, []),
])
def test_required_cpu_traits_become_required_cpu_features(
        flavor: dict[str, str], image: dict[str, str], features: list[str]) -> None:
    xml = document(make_guest(image, extra_specs=flavor))
    assert xml.xpath("/domain/cpu/feature/@name") == features
    assert set(xml.xpath("/domain/cpu/feature/@policy")) <= {"require"}


@pytest.mark.parametrize(("properties", "virt_type", "timers"), [
    ({"hw_time_hpet": "true"}, "qemu", [("hpet", "yes")]),
    ({"hw_time_hpet": "yes"}, "kvm", [("pit", None), ("rtc", None), ("hpet", "yes")]),
    ({"hw_time_hpet": "false"}, "kvm", [("pit", None), ("rtc", None), ("hpet", "no")]),
    ({}, "kvm", [("pit", None), ("rtc", None), ("hpet", "no")]),
    ({}, "qemu", []),
    ({"hw_time_hpet": "blah"}, "qemu", []),  # upstream's lenient booleans: off
    ({"hw_time_hpet": "true", "hw_architecture": "i686"}, "qemu", [("hpet", "yes")]),
])
def test_hpet_timer_on_x86(properties: dict[str, str], virt_type: str,
                           timers: list[tuple[str, str | None]]) -> None:
    xml = document(make_guest(properties), settings(virt_type))
    found = [(t.get("name"), t.get("present")) for t in xml.iterfind("clock/timer")]
    assert found == timers


def test_hpet_on_another_architecture_is_a_warning_not_an_element(
        caplog: pytest.LogCaptureFixture) -> None:
    guest = make_guest({"hw_time_hpet": "true", "hw_emulation_architecture": "aarch64"})
    platform = guest_config.platform(guest.image, settings(), "x86_64")
    config = guest_config.resolve(guest, settings(), platform, None, None, "/i")
    assert config.hpet is None
    assert config.warnings == (
        "hw_time_hpet ignored: HPET is an x86 timer and the guest is aarch64",)
    assert guest_config.domain_xml(config).find("clock/timer") is None
    with caplog.at_level(logging.WARNING, logger="moorage.virt.libvirt.guest"):
        guest_config.log_warnings(config)
    assert caplog.messages == [f"instance {guest.uuid}: {config.warnings[0]}"]


def test_windows_guests_keep_local_time() -> None:
    xml = document(make_guest({"os_type": "windows"}))
    assert one(xml, "/domain/clock/@offset") == "localtime"
    assert one(document(make_guest()), "/domain/clock/@offset") == "utc"


@pytest.mark.parametrize(("properties", "flavor", "model", "version"), [
    ({"hw_tpm_version": "2.0"}, {}, "tpm-tis", "2.0"),
    ({"hw_tpm_version": "1.2"}, {}, "tpm-tis", "1.2"),
    ({"hw_tpm_version": "2.0", "hw_tpm_model": "tpm-crb"}, {}, "tpm-crb", "2.0"),
    ({"hw_tpm_model": "tpm-crb"}, {}, "tpm-crb", "2.0"),
    ({}, {"trait:COMPUTE_SECURITY_TPM_2_0": "required"}, "tpm-tis", "2.0"),
    ({}, {"trait:COMPUTE_SECURITY_TPM_1_2": "required"}, "tpm-tis", "1.2"),
    ({}, {"trait:COMPUTE_SECURITY_TPM_CRB": "required"}, "tpm-crb", "2.0"),
    ({}, {"trait:COMPUTE_SECURITY_TPM_TIS": "required",
          "trait:COMPUTE_SECURITY_TPM_1_2": "required"}, "tpm-tis", "1.2"),
    ({}, {"trait:COMPUTE_SECURITY_TPM_SECRET_SECURITY_HOST": "required"}, "tpm-tis", "2.0"),
    ({"hw_tpm_version": "2.0", "trait:COMPUTE_SECURITY_TPM_CRB": "required"}, {},
     "tpm-crb", "2.0"),
])
def test_tpm_from_properties_and_traits(properties: dict[str, str], flavor: dict[str, str],
                                        model: str, version: str) -> None:
    xml = document(make_guest(properties, extra_specs=flavor))
    assert one(xml, "//tpm/@model") == model
    assert one(xml, "//tpm/backend/@type") == "emulator"
    assert one(xml, "//tpm/backend/@version") == version


@pytest.mark.parametrize(("properties", "flavor", "message"), [
    ({"hw_tpm_version": "2.0"}, {"trait:COMPUTE_SECURITY_TPM_1_2": "required"},
     "conflicting TPM version: 2.0 (hw_tpm_version), 1.2 (COMPUTE_SECURITY_TPM_1_2)"),
    ({}, {"trait:COMPUTE_SECURITY_TPM_TIS": "required",
          "trait:COMPUTE_SECURITY_TPM_CRB": "required"}, "conflicting TPM model"),
    ({"hw_tpm_version": "1.2", "hw_tpm_model": "tpm-crb"}, {}, "needs TPM 2.0"),
    ({"hw_firmware_type": "bios"}, {"trait:COMPUTE_SECURITY_UEFI_SECURE_BOOT": "required"},
     "conflicting firmware"),
    ({}, {"trait:COMPUTE_FIRMWARE_BIOS": "required",
          "trait:COMPUTE_FIRMWARE_UEFI": "required"}, "conflicting firmware"),
    ({"os_secure_boot": "disabled"}, {"trait:COMPUTE_SECURITY_UEFI_SECURE_BOOT": "required"},
     "os_secure_boot=disabled"),
])
def test_contradictions_are_refused(properties: dict[str, str], flavor: dict[str, str],
                                    message: str) -> None:
    with pytest.raises(FlavorImageConflict, match=message.replace("(", r"\(").replace(
            ")", r"\)")):
        configure(make_guest(properties, extra_specs=flavor))


@pytest.mark.parametrize(("properties", "flavor", "machine", "secure"), [
    ({"hw_firmware_type": "uefi"}, {}, "pc", "off"),
    ({}, {"trait:COMPUTE_FIRMWARE_UEFI": "required"}, "pc", "off"),
    ({"hw_machine_type": "q35", "os_secure_boot": "required"}, {}, "q35", "on"),
    ({"hw_machine_type": "q35"}, {"trait:COMPUTE_SECURITY_UEFI_SECURE_BOOT": "required"},
     "q35", "on"),
    # optional: on where the firmware offers it (q35), off where it does not (pc)
    ({"hw_machine_type": "q35", "hw_firmware_type": "uefi", "os_secure_boot": "optional"}, {},
     "q35", "on"),
    ({"hw_firmware_type": "uefi", "os_secure_boot": "optional"}, {}, "pc", "off"),
    ({"hw_machine_type": "q35", "hw_firmware_type": "uefi", "os_secure_boot": "disabled"},
     {}, "q35", "off"),
])
def test_uefi_and_secure_boot(properties: dict[str, str], flavor: dict[str, str], machine: str,
                              secure: str) -> None:
    xml = document(make_guest(properties, extra_specs=flavor))
    assert one(xml, "/domain/os/@firmware") == "efi"
    assert one(xml, "/domain/os/type/@machine") == machine
    assert one(xml, "/domain/os/firmware/feature[@name='secure-boot']/@enabled") == (
        "yes" if secure == "on" else "no")
    if secure == "on":
        assert one(xml, "/domain/os/firmware/feature[@name='enrolled-keys']/@enabled") == "yes"
        assert one(xml, "/domain/os/loader/@secure") == "yes"
        assert one(xml, "/domain/features/smm/@state") == "on"
    else:
        assert count(xml, "/domain/os/loader") == 0
        assert count(xml, "/domain/features/smm") == 0


def test_bios_is_the_default_firmware() -> None:
    config = configure(make_guest({"hw_firmware_type": "bios"}))
    assert str(config.firmware.type) == "bios (hw_firmware_type)"
    assert guest_config.domain_xml(config).find("os").get("firmware") is None


def test_choices_say_where_they_came_from() -> None:
    config = configure(make_guest({"hw_vif_model": "e1000"}), settings(x86_64="q35"))
    assert str(config.vif) == "e1000 (hw_vif_model)"
    assert str(config.video) == "virtio (default for x86_64)"
    assert str(config.root.bus) == "virtio (default for qemu)"
    assert str(config.platform.machine) == "q35 ([libvirt] hw_machine_type for x86_64)"


def test_cpu_feature_table_spot_checks() -> None:
    config = configure(make_guest(extra_specs={
        f"trait:{ot.HW_CPU_X86_AVX2}": "required", f"trait:{ot.HW_CPU_X86_SSE42}": "required"}))
    assert [(f.trait, f.name) for f in config.cpu_features] == [
        (ot.HW_CPU_X86_AVX2, "avx2"), (ot.HW_CPU_X86_SSE42, "sse4.2")]


# -- device models a required trait switches on ---------------------------------------------

@pytest.mark.parametrize(("trait", "xpath", "value"), [
    (ot.COMPUTE_NET_VIF_MODEL_E1000, "/domain/devices/interface/model/@type", "e1000"),
    (ot.COMPUTE_GRAPHICS_MODEL_QXL, "/domain/devices/video/model/@type", "qxl"),
    (ot.COMPUTE_SOUND_MODEL_ICH9, "/domain/devices/sound/@model", "ich9"),
    (ot.COMPUTE_VIOMMU_MODEL_VIRTIO, "/domain/devices/iommu/@model", "virtio"),
    (ot.COMPUTE_NET_VIRTIO_PACKED, "/domain/devices/interface/driver/@packed", "on"),
])
def test_a_required_model_trait_is_the_guests_model(trait: str, xpath: str,
                                                     value: str) -> None:
    assert one(document(make_guest(extra_specs={f"trait:{trait}": "required"})),
               xpath) == value


def test_the_image_and_a_trait_naming_the_same_model_agree() -> None:
    guest = make_guest({"hw_vif_model": "e1000"},
                       extra_specs={f"trait:{ot.COMPUTE_NET_VIF_MODEL_E1000}": "required"})
    assert configure(guest).vif == guest_config.Choice("e1000", "hw_vif_model")


@pytest.mark.parametrize(("properties", "extra_specs", "message"), [
    ({"hw_vif_model": "virtio"}, {"trait:COMPUTE_NET_VIF_MODEL_E1000": "required"},
     "conflicting vif model: virtio (hw_vif_model), e1000 (COMPUTE_NET_VIF_MODEL_E1000)"),
    ({}, {"trait:COMPUTE_SOUND_MODEL_AC97": "required",
          "trait:COMPUTE_SOUND_MODEL_ICH9": "required"},
     "conflicting sound model: ac97 (COMPUTE_SOUND_MODEL_AC97), "
     "ich9 (COMPUTE_SOUND_MODEL_ICH9)"),
])
def test_two_models_for_one_device_conflict(properties: dict[str, str],
                                            extra_specs: dict[str, str], message: str) -> None:
    with pytest.raises(FlavorImageConflict, match=re.escape(message)):
        configure(make_guest(properties, extra_specs=extra_specs))


def test_packed_virtqueues_on_a_nic_that_is_not_virtio_is_a_warning() -> None:
    config = configure(make_guest({"hw_vif_model": "e1000"}, extra_specs={
        f"trait:{ot.COMPUTE_NET_VIRTIO_PACKED}": "required"}))
    assert config.warnings == (
        "COMPUTE_NET_VIRTIO_PACKED asks for packed virtqueues, which only virtio devices "
        "have; the NIC is e1000 (hw_vif_model)",)
    assert count(guest_config.domain_xml(config), "/domain/devices/interface/driver") == 0


def test_viommu_auto_becomes_the_model_the_platform_takes() -> None:
    guest = make_guest({"hw_viommu_model": "auto", "hw_machine_type": "q35"})
    chosen = settings()
    where = guest_config.platform(guest.image, chosen, "x86_64")
    config = guest_config.resolve(guest, chosen, where, None, None, "/x", "virtio")
    assert config.viommu == guest_config.Choice("virtio", "auto (hw_viommu_model)")
