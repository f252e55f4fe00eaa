"""Late checks against this machine's real domain capabilities (tests/fixtures/domcaps):
what the host cannot give a guest is refused with UnsupportedHardware naming the
feature (its trait where there is one) before libvirt is asked to define anything.
"""

from __future__ import annotations

from dataclasses import replace

import os_traits as ot
import pytest

from moorage.virt.driver import Guest, UnsupportedHardware
from moorage.virt.libvirt import checks, domcaps, qemu_devices, spawn
from moorage.virt.libvirt import guest as guest_config
from moorage.virt.libvirt.checks import Target
from moorage.virt.libvirt.guest import GuestConfig, Settings
from moorage.virt.libvirt.hostcaps import GuestArch, Machine
from tests.unit.virt.libvirt.test_guest import FIXTURES, make_guest, settings, target


def run(guest: Guest, chosen: Settings | None = None, where: Target | None = None,
        host_arch: str = "x86_64") -> GuestConfig:
    """spawn.configure: choices, checks, document and schema, for this machine."""
    chosen = chosen or settings()
    platform = guest_config.platform(guest.image, chosen, host_arch)
    if where is None:
        machine = platform.machine.value if platform.machine else None
        where = target(platform.arch.value, machine, chosen.virt_type)
    config, _document = spawn.configure(guest, chosen, platform, where)
    return config


def refusal(guest: Guest, chosen: Settings | None = None,
            where: Target | None = None) -> UnsupportedHardware:
    with pytest.raises(UnsupportedHardware) as caught:
        run(guest, chosen, where)
    return caught.value


# -- disk buses: the virt type's table, then the machine type's domain capabilities -------

@pytest.mark.parametrize(("properties", "chosen"), [
    ({"hw_disk_bus": bus}, settings()) for bus in ("virtio", "ide", "sata", "scsi", "usb", "fdc")
] + [
    ({"hw_disk_bus": bus}, settings(x86_64="q35")) for bus in ("virtio", "sata", "scsi", "usb")
] + [
    ({"hw_machine_type": "q35", "hw_disk_bus": "sata"}, settings()),
])
def test_buses_the_machine_type_has_pass(properties: dict[str, str], chosen: Settings) -> None:
    config = run(make_guest(properties), chosen)
    assert config.root.bus.value == properties["hw_disk_bus"]


@pytest.mark.parametrize(("properties", "chosen", "disk_format"), [
    ({"hw_disk_bus": "ide"}, settings(x86_64="q35"), "qcow2"),
    ({"hw_machine_type": "q35", "hw_disk_bus": "ide"}, settings(), "qcow2"),
    ({"hw_machine_type": "pc-q35-7.2", "hw_disk_bus": "ide"}, settings(), "qcow2"),
    ({"hw_cdrom_bus": "ide"}, settings(x86_64="q35"), "iso"),
])
def test_q35_has_no_ide(properties: dict[str, str], chosen: Settings, disk_format: str) -> None:
    refused = refusal(make_guest(properties, disk_format=disk_format), chosen)
    assert refused.feature == ot.COMPUTE_STORAGE_BUS_IDE
    assert refused.reason == (
        f"ide (hw_{'cdrom' if disk_format == 'iso' else 'disk'}_bus): x86_64 pc-q35-7.2 "
        "offers fdc, scsi, virtio, usb, sata")


def test_the_cdrom_default_follows_the_machine_type() -> None:
    assert run(make_guest(disk_format="iso"), settings(x86_64="q35")).root.bus.value == "sata"
    assert run(make_guest(disk_format="iso")).root.bus.value == "ide"


@pytest.mark.parametrize("bus", ["xen", "lxc", "uml"])
def test_buses_that_are_not_qemus_are_refused(bus: str) -> None:
    refused = refusal(make_guest({"hw_disk_bus": bus}))
    assert refused.feature == f"COMPUTE_STORAGE_BUS_{bus.upper()}"
    assert "is not a disk bus of virt_type qemu" in refused.reason


# -- video and NIC models ------------------------------------------------------------------

@pytest.mark.parametrize("model", ["vga", "cirrus", "qxl", "virtio", "bochs", "none", "vmvga"])
@pytest.mark.parametrize("machine", ["pc", "q35"])
def test_video_models_qemu_offers_pass(model: str, machine: str) -> None:
    config = run(make_guest({"hw_video_model": model, "hw_machine_type": machine}))
    assert config.video is not None and config.video.value == model


@pytest.mark.parametrize("model", ["xen", "gop"])
def test_video_models_qemu_lacks_are_refused(model: str) -> None:
    refused = refusal(make_guest({"hw_video_model": model}))
    assert refused.feature == f"COMPUTE_GRAPHICS_MODEL_{model.upper()}"
    assert refused.reason == (
        f"video model {model} (hw_video_model): x86_64 pc-i440fx-7.2 offers vga, cirrus, "
        "vmvga, qxl, virtio, none, bochs, ramfb")


@pytest.mark.parametrize("model", ["e1000", "e1000e", "rtl8139", "virtio", "pcnet", "ne2k_pci",
                                   "vmxnet3"])
def test_nic_models_of_the_virt_type_pass(model: str) -> None:
    config = run(make_guest({"hw_vif_model": model}))
    assert config.vif is not None and config.vif.value == model


@pytest.mark.parametrize(("model", "virt_type", "reason"), [
    ("sriov", "qemu", "sriov is Hyper-V's SR-IOV NIC"),
    ("netfront", "kvm", "netfront is Xen's paravirtual NIC, not a QEMU device"),
    ("vmxnet", "qemu", "QEMU has vmxnet3 only"),
    ("lan9118", "kvm", "qemu-system-x86_64 7.2.22 has no lan9118 device"),
    ("spapr-vlan", "qemu", "qemu-system-x86_64 7.2.22 has no spapr-vlan device"),
    ("igb", "qemu", "qemu-system-x86_64 7.2.22 has no igb device"),
])
def test_nic_models_the_host_cannot_run_are_refused(model: str, virt_type: str,
                                                    reason: str) -> None:
    guest = make_guest({"hw_vif_model": model})
    refused = refusal(guest, settings(virt_type), target(virt_type=virt_type))
    assert refused.feature == f"COMPUTE_NET_VIF_MODEL_{model.upper().replace('-', '_')}"
    assert reason in refused.reason


IGB = qemu_devices.parse('name "igb", bus PCI\n', "qemu-system-x86_64", "8.0.0", "test")


@pytest.mark.parametrize(("libvirt_version", "refused"), [((9, 3, 0), False),
                                                         ((9, 0, 0), True)])
def test_igb_needs_its_device_and_libvirt_93(libvirt_version: tuple[int, int, int],
                                            refused: bool) -> None:
    where = target(device_list=IGB, libvirt_version=libvirt_version)
    guest = make_guest({"hw_vif_model": "igb"})
    if refused:
        assert "the igb NIC needs libvirt >= 9.3.0" in refusal(guest, where=where).reason
    else:
        config = run(guest, where=where)
        assert config.vif is not None and config.vif.value == "igb"


def test_without_a_device_list_libvirt_decides() -> None:
    config = run(make_guest({"hw_vif_model": "spapr-vlan"}), where=target(device_list=None))
    assert config.vif is not None and config.vif.value == "spapr-vlan"


# -- CPU features ------------------------------------------------------------------------------

def test_cpu_features_the_hypervisor_has_pass() -> None:
    guest = make_guest(extra_specs={"trait:HW_CPU_X86_AVX2": "required"})
    assert [f.name for f in run(guest).cpu_features] == ["avx2"]


def test_cpu_features_it_lacks_are_refused_naming_the_trait() -> None:
    guest = make_guest({"trait:HW_CPU_X86_AVX512F": "required"},
                       extra_specs={"trait:HW_CPU_X86_AVX2": "required"})
    refused = refusal(guest)
    assert refused.feature == ot.HW_CPU_X86_AVX512F
    assert refused.reason == "CPU feature avx512f: this host's qemu guests cannot have it"


def test_x86_cpu_features_for_another_architecture_are_refused() -> None:
    guest = make_guest({"hw_emulation_architecture": "aarch64"},
                       extra_specs={"trait:HW_CPU_X86_AVX2": "required"})
    aarch64 = GuestArch("hvm", "aarch64", "/usr/bin/qemu-system-aarch64",
                        (Machine("virt"),), {"qemu": None})
    where = Target("qemu", aarch64, domcaps.parse_file(FIXTURES / "qemu-x86_64-pc.xml"),
                   frozenset({"avx2"}))
    refused = refusal(guest, where=where)
    assert refused.feature == ot.HW_CPU_X86_AVX2
    assert refused.reason == "an x86 CPU feature (avx2) for a aarch64 guest"


# -- TPM ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("properties", "flavor"), [
    ({"hw_tpm_version": "2.0"}, {}),
    ({"hw_tpm_version": "1.2"}, {}),
    ({"hw_tpm_model": "tpm-crb"}, {}),
    ({}, {"trait:COMPUTE_SECURITY_TPM_2_0": "required"}),
    ({}, {"trait:COMPUTE_SECURITY_TPM_CRB": "required"}),
])
def test_an_emulated_tpm_passes_where_swtpm_is(properties: dict[str, str],
                                               flavor: dict[str, str]) -> None:
    assert run(make_guest(properties, extra_specs=flavor)).tpm is not None


def test_no_swtpm_no_tpm() -> None:
    guest = make_guest(extra_specs={"trait:COMPUTE_SECURITY_TPM_2_0": "required"})
    refused = refusal(guest, where=target(caps_file="qemu-x86_64-pc-bare.xml"))
    assert refused.feature == ot.COMPUTE_SECURITY_TPM_2_0
    assert refused.reason == (
        "TPM 2.0 (COMPUTE_SECURITY_TPM_2_0): x86_64 pc-i440fx-7.2 has no emulated TPM "
        "(swtpm); TPM backends: passthrough")


def test_a_tpm_model_or_version_the_emulator_lacks_is_refused() -> None:
    where = target()
    assert where.capabilities is not None
    tpm = where.capabilities.device("tpm")
    only_tis_20 = replace(tpm, enums={**tpm.enums, "model": ("tpm-tis",),
                                      "backendVersion": ("2.0",)})
    narrow = replace(where, capabilities=replace(
        where.capabilities, devices={**where.capabilities.devices, "tpm": only_tis_20}))
    crb = refusal(make_guest({"hw_tpm_model": "tpm-crb"}), where=narrow)
    assert crb.feature == ot.COMPUTE_SECURITY_TPM_CRB
    old = refusal(make_guest({"hw_tpm_version": "1.2"}), where=narrow)
    assert old.feature == ot.COMPUTE_SECURITY_TPM_1_2
    assert old.reason == "TPM version 1.2 (hw_tpm_version): x86_64 pc-i440fx-7.2 offers 2.0"


# -- firmware ---------------------------------------------------------------------------------

def test_uefi_needs_firmware_libvirt_can_select() -> None:
    guest = make_guest(extra_specs={"trait:COMPUTE_FIRMWARE_UEFI": "required"})
    assert run(guest).firmware.type.value == "uefi"
    refused = refusal(guest, where=target(caps_file="qemu-x86_64-pc-bare.xml"))
    assert refused.feature == ot.COMPUTE_FIRMWARE_UEFI
    assert "has no UEFI firmware libvirt can select" in refused.reason


def test_secure_boot_needs_q35() -> None:
    guest = make_guest(extra_specs={"trait:COMPUTE_SECURITY_UEFI_SECURE_BOOT": "required"})
    refused = refusal(guest)
    assert refused.feature == ot.COMPUTE_SECURITY_UEFI_SECURE_BOOT
    assert refused.reason.startswith(
        "secure boot (COMPUTE_SECURITY_UEFI_SECURE_BOOT): x86_64 pc-i440fx-7.2 has no "
        "secure-boot firmware")
    on_q35 = run(guest, settings(x86_64="q35")).firmware.secure_boot
    assert on_q35 is not None and on_q35.value == "on"


def test_optional_secure_boot_is_never_refused() -> None:
    guest = make_guest({"hw_firmware_type": "uefi", "os_secure_boot": "optional"})
    secure = run(guest).firmware.secure_boot
    assert secure is not None and secure.value == "off"


# -- platform -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("properties", "feature"), [
    ({"hw_architecture": "aarch64"}, "HW_ARCH_AARCH64"),
    ({"hw_emulation_architecture": "aarch64"}, "COMPUTE_ARCH_AARCH64"),
    ({"hw_emulation_architecture": "s390x"}, "COMPUTE_ARCH_S390X"),
])
def test_architectures_the_host_cannot_run_are_refused(properties: dict[str, str],
                                                       feature: str) -> None:
    guest = make_guest(properties)
    platform = guest_config.platform(guest.image, settings(), "x86_64")
    refused = refusal(guest, where=target(platform.arch.value))
    assert refused.feature == feature
    assert "this host runs no qemu guests of that architecture" in refused.reason


def test_an_unknown_machine_type_is_refused() -> None:
    refused = refusal(make_guest({"hw_machine_type": "pc-i440fx-99.0"}),
                      where=target(machine=None))
    assert refused.feature == "hw_machine_type=pc-i440fx-99.0"
    assert refused.reason.startswith(
        "pc-i440fx-99.0 (hw_machine_type) is not a machine type of x86_64 on this host")


def test_more_vcpus_than_the_machine_type_takes_are_refused() -> None:
    guest = make_guest()
    big = replace(guest, flavor=replace(guest.flavor, vcpus=4096))
    refused = refusal(big)
    assert refused.feature == "vcpus=4096"
    assert refused.reason == (
        "the flavor has 4096 vCPUs; x86_64 pc-i440fx-7.2 guests have at most 255")


def test_the_first_refusal_is_the_answer() -> None:
    # a bus and a video model q35 lacks: the bus is checked first
    guest = make_guest({"hw_machine_type": "q35", "hw_disk_bus": "ide",
                        "hw_video_model": "gop"})
    assert refusal(guest).feature == ot.COMPUTE_STORAGE_BUS_IDE
    assert [c.__name__ for c in checks.CHECKS][:3] == [
        "check_architecture", "check_machine_type", "check_capabilities"]


# -- required device traits, held to the guest's own machine type ------------------------

@pytest.mark.parametrize(("properties", "flavor", "feature", "reason"), [
    ({"hw_machine_type": "q35"}, {"trait:COMPUTE_STORAGE_BUS_IDE": "required"},
     ot.COMPUTE_STORAGE_BUS_IDE, "required, but x86_64 pc-q35-7.2 offers"),
    ({}, {"trait:COMPUTE_STORAGE_BUS_XEN": "required"}, ot.COMPUTE_STORAGE_BUS_XEN,
     "required, but xen is not a disk bus of virt_type qemu"),
    # a required video model trait is the guest's video model, refused as such
    ({"trait:COMPUTE_GRAPHICS_MODEL_GOP": "required"}, {}, ot.COMPUTE_GRAPHICS_MODEL_GOP,
     "video model gop (COMPUTE_GRAPHICS_MODEL_GOP): x86_64 pc-i440fx-7.2 offers"),
    ({}, {"trait:COMPUTE_NET_VIF_MODEL_SPAPR_VLAN": "required"},
     ot.COMPUTE_NET_VIF_MODEL_SPAPR_VLAN,
     "NIC model spapr-vlan (COMPUTE_NET_VIF_MODEL_SPAPR_VLAN): NIC model spapr-vlan: "
     "qemu-system-x86_64 7.2.22 has no spapr-vlan device"),
])
def test_required_device_traits_the_machine_type_lacks_are_refused(
        properties: dict[str, str], flavor: dict[str, str], feature: str, reason: str) -> None:
    refused = refusal(make_guest(properties, extra_specs=flavor))
    assert refused.feature == feature
    assert refused.reason.startswith(reason)


def test_required_device_traits_the_machine_type_has_pass() -> None:
    guest = make_guest(extra_specs={"trait:COMPUTE_STORAGE_BUS_IDE": "required",
                                    "trait:COMPUTE_GRAPHICS_MODEL_QXL": "required"})
    config = run(guest)
    assert config.root.bus.value == "virtio"  # a bus is required of the host, not used
    assert config.video == guest_config.Choice("qxl", ot.COMPUTE_GRAPHICS_MODEL_QXL)


@pytest.mark.parametrize(("trait", "per_platform"), [
    (ot.COMPUTE_STORAGE_BUS_IDE, True),
    (ot.COMPUTE_GRAPHICS_MODEL_QXL, True),
    (ot.COMPUTE_SECURITY_TPM_2_0, True),
    (ot.COMPUTE_FIRMWARE_UEFI, True),
    (ot.COMPUTE_SECURITY_UEFI_SECURE_BOOT, True),
    (ot.COMPUTE_NET_VIF_MODEL_E1000, True),
    (ot.COMPUTE_SOUND_MODEL_ICH9, True),
    (ot.COMPUTE_VIOMMU_MODEL_AUTO, True),
    (ot.COMPUTE_IMAGE_TYPE_QCOW2, False),
    (ot.COMPUTE_VOLUME_MULTI_ATTACH, False),
])
def test_which_reports_depend_on_the_machine_type(trait: str, per_platform: bool) -> None:
    assert checks.per_platform(trait) is per_platform
