"""Discovery rules per virt type and machine type, on domain capabilities captured from
this machine's QEMU: one fixture, a list of cases, one assertion each."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path

import os_traits as ot
import pytest

from moorage.model import vocabulary
from moorage.virt.libvirt import discovery, domcaps, qemu_devices
from moorage.virt.libvirt.discovery import GuestMachine, HostFacts
from moorage.virt.libvirt.tables import Version
from moorage.virt.report import Source, TraitReport

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "domcaps"
THIS_HOST: tuple[Version, Version] = ((9, 0, 0), (7, 2, 22))  # libvirt, QEMU here


def facts(*names: str, virt_type: str = "qemu",
          versions: tuple[Version, Version] | None = THIS_HOST,
          host_arch: str | None = None, devices: bool = True) -> HostFacts:
    """Facts from fixture files (the first one's architecture is the host's), with each
    architecture's recorded device list unless ``devices`` is False."""
    archs = {n.split("-")[1] for n in names}
    lists = {arch: FIXTURES / f"qemu-{arch}-devices.txt" for arch in archs
             if devices and (FIXTURES / f"qemu-{arch}-devices.txt").exists()}
    found = discovery.facts_from_files([FIXTURES / f"{n}.xml" for n in names], virt_type,
                                       host_arch=host_arch, devices=lists)
    if versions is None:
        return found
    return dataclasses.replace(found, libvirt_version=versions[0], qemu_version=versions[1])


def synthetic(body: str, arch: str = "x86_64", virt_type: str = "qemu",
              versions: tuple[Version, Version] = THIS_HOST, machine: str = "m",
              devices: str | None = None) -> HostFacts:
    """Facts from a hand-written document (for what this QEMU cannot show), with a
    hand-written device list (``-device help`` lines)."""
    caps = domcaps.parse(f"<domainCapabilities><domain>qemu</domain><arch>{arch}</arch>"
                         f"<machine>{machine}</machine>{body}</domainCapabilities>")
    listed = (qemu_devices.parse(devices, f"qemu-system-{arch}", "9.9.9", "test")
              if devices is not None else None)
    return HostFacts(virt_type, arch, {arch: GuestMachine(arch, machine, True, caps, listed)},
                     libvirt_version=versions[0], qemu_version=versions[1])


def lxc_host() -> HostFacts:
    """An LXC host: libvirt's LXC driver has no domain capabilities."""
    return HostFacts("lxc", "x86_64", {}, libvirt_version=(9, 0, 0))


def supported(reports: Iterable[TraitReport], prefix: str) -> set[str]:
    return {r.trait.removeprefix(prefix + "_") for r in reports
            if r.supported and r.trait.startswith(prefix)}


def by_trait(reports: Iterable[TraitReport]) -> dict[str, TraitReport]:
    reports = list(reports)
    table = {r.trait: r for r in reports}
    assert len(table) == len(reports), "a trait reported twice"
    return table


ALL_BUSES = {"FDC", "IDE", "LXC", "SATA", "SCSI", "UML", "USB", "VIRTIO", "XEN"}


@pytest.mark.parametrize(("files", "virt_type", "buses", "source"), [
    (["qemu-x86_64-pc"], "qemu", {"FDC", "IDE", "SATA", "SCSI", "USB", "VIRTIO"},
     Source.DOMAIN_CAPABILITIES),
    # q35 has no IDE controller
    (["qemu-x86_64-q35"], "qemu", {"FDC", "SATA", "SCSI", "USB", "VIRTIO"},
     Source.DOMAIN_CAPABILITIES),
    (["qemu-x86_64-q35"], "kvm", {"FDC", "SATA", "SCSI", "USB", "VIRTIO"},
     Source.DOMAIN_CAPABILITIES),
    # an emulated i686 (pc, with IDE) does not give a q35 x86_64 host IDE
    (["qemu-x86_64-q35", "qemu-i686-pc"], "qemu", {"FDC", "SATA", "SCSI", "USB", "VIRTIO"},
     Source.DOMAIN_CAPABILITIES),
    (["qemu-i686-pc", "qemu-x86_64-q35"], "qemu", {"FDC", "IDE", "SATA", "SCSI", "USB",
                                                   "VIRTIO"}, Source.DOMAIN_CAPABILITIES),
    # other virt types: upstream's static table, whatever the domain capabilities say
    (["qemu-x86_64-q35"], "lxc", {"LXC"}, Source.DRIVER_TABLE),
    (["qemu-x86_64-q35"], "parallels", {"IDE", "SCSI"}, Source.DRIVER_TABLE),
])
def test_storage_buses(files: list[str], virt_type: str, buses: set[str],
                       source: Source) -> None:
    reports = discovery.storage_bus_reports(facts(*files, virt_type=virt_type))
    assert supported(reports, vocabulary.STORAGE_BUS) == buses
    # every bus of the universe is owned: reported, True or False
    assert {r.trait.removeprefix("COMPUTE_STORAGE_BUS_") for r in reports} == ALL_BUSES
    assert {r.source for r in reports} == {source}


def test_bus_details_name_the_machine_type() -> None:
    q35 = discovery.facts_from_files([FIXTURES / "qemu-x86_64-q35.xml"], "qemu",
                                     machine_name="q35")
    ide = by_trait(discovery.storage_bus_reports(q35))[ot.COMPUTE_STORAGE_BUS_IDE]
    assert ide == TraitReport(ot.COMPUTE_STORAGE_BUS_IDE, False, Source.DOMAIN_CAPABILITIES,
                              "x86_64 q35 domain capabilities")


@pytest.mark.parametrize(("host", "models"), [
    (facts("qemu-x86_64-pc"), {"BOCHS", "CIRRUS", "NONE", "QXL", "VGA", "VIRTIO", "VMVGA"}),
    (facts("qemu-x86_64-q35"), {"BOCHS", "CIRRUS", "NONE", "QXL", "VGA", "VIRTIO", "VMVGA"}),
    # video comes from the domain capabilities for every virt type: LXC has none
    (lxc_host(), set()),
])
def test_video_models(host: HostFacts, models: set[str]) -> None:
    reports = discovery.video_model_reports(host)
    assert supported(reports, vocabulary.GRAPHICS_MODEL) == models
    assert len(reports) == len(ot.get_traits("COMPUTE_GRAPHICS_MODEL_"))


def test_values_outside_the_universe_are_ignored() -> None:
    host = synthetic("<devices><disk supported='yes'><enum name='bus'><value>nvme</value>"
                     "<value>sd</value><value>virtio</value></enum></disk>"
                     "<video supported='yes'><enum name='modelType'><value>ramfb</value>"
                     "<value>virtio</value></enum></video></devices>")
    reports = discovery.device_reports(host)
    assert supported(reports, vocabulary.STORAGE_BUS) == {"VIRTIO"}
    assert supported(reports, vocabulary.GRAPHICS_MODEL) == {"VIRTIO"}
    assert not {r.trait for r in reports} - vocabulary.KNOWN


# What this machine's qemu-system-x86_64 7.2 lists: no igb (QEMU 8.0), no spapr-vlan
# (Power) and no lan9118 (an ARM board's), and never Xen's netfront.
QEMU_NICS = {"VIRTIO", "NE2K_PCI", "PCNET", "RTL8139", "E1000", "E1000E", "VMXNET3"}
ALL_NICS = {t.removeprefix("COMPUTE_NET_VIF_MODEL_")
            for t in ot.get_traits("COMPUTE_NET_VIF_MODEL_")}
IGB_LINE = 'name "igb", bus PCI, desc "Intel 82576 Gigabit Ethernet Controller"\n'


@pytest.mark.parametrize(("host", "nics"), [
    (facts("qemu-x86_64-q35"), QEMU_NICS),
    (facts("qemu-x86_64-pc"), QEMU_NICS),
    (facts("qemu-x86_64-q35", virt_type="kvm"), QEMU_NICS),
    (facts("qemu-i686-pc"), QEMU_NICS),
    # a newer libvirt does not give this QEMU an igb device
    (facts("qemu-x86_64-q35", versions=((9, 3, 0), (7, 2, 22))), QEMU_NICS),
    # a QEMU with igb: libvirt 9.3 configures it, 9.0 does not
    (synthetic("", machine="pc-q35-8.0", devices=IGB_LINE, versions=((9, 3, 0), (8, 0, 0))),
     {"IGB"}),
    (synthetic("", machine="pc-q35-8.0", devices=IGB_LINE), set()),
    # an ISA-only board has no PCI NIC
    (synthetic("", machine="isapc", devices='name "e1000", bus PCI\n'), set()),
    (facts("qemu-x86_64-q35", virt_type="lxc"), set()),
    (facts("qemu-x86_64-q35", virt_type="parallels"), {"VIRTIO", "RTL8139", "E1000"}),
])
def test_nic_models(host: HostFacts, nics: set[str]) -> None:
    reports = discovery.vif_model_reports(host)
    assert supported(reports, vocabulary.VIF_MODEL) == nics
    # every NIC model os-traits names is decided, True or False
    assert {r.trait.removeprefix("COMPUTE_NET_VIF_MODEL_") for r in reports} == ALL_NICS


def test_nic_details_name_the_device_or_why_not() -> None:
    reports = by_trait(discovery.vif_model_reports(facts("qemu-x86_64-q35")))
    e1000 = reports[ot.COMPUTE_NET_VIF_MODEL_E1000]
    assert (e1000.source, e1000.detail) == (
        Source.DEVICE_LIST,
        "x86_64 pc-q35-7.2 domain capabilities: e1000 (PCI) in qemu-system-x86_64")
    spapr = reports[ot.COMPUTE_NET_VIF_MODEL_SPAPR_VLAN]
    assert not spapr.supported
    assert spapr.detail.endswith("qemu-system-x86_64 has no spapr-vlan device")
    netfront = reports[ot.COMPUTE_NET_VIF_MODEL_NETFRONT]
    assert (netfront.supported, netfront.source) == (False, Source.DRIVER_TABLE)


def test_no_device_list_reports_no_nic_sound_or_viommu_and_says_why() -> None:
    host = facts("qemu-x86_64-q35", devices=False)
    reports = discovery.device_reports(host)
    families = (vocabulary.VIF_MODEL, vocabulary.SOUND_MODEL, vocabulary.VIOMMU_MODEL)
    # only the models that need no device of the emulator are decided
    assert {(r.trait, r.supported) for r in reports if r.trait.startswith(families)} == {
        (ot.COMPUTE_NET_VIF_MODEL_NETFRONT, False), (ot.COMPUTE_NET_VIF_MODEL_SRIOV, False),
        (ot.COMPUTE_NET_VIF_MODEL_VMXNET, False), (ot.COMPUTE_SOUND_MODEL_PCSPK, False),
        (ot.COMPUTE_VIOMMU_MODEL_SMMUV3, False)}
    assert discovery.notes(host) == [
        "x86_64: NIC, sound and vIOMMU models not reported: no device list given for "
        "x86_64 (the output of qemu-system-x86_64 -device help)",
        "x86_64: CPU feature traits only for the features the host-model CPU names beside "
        "its model (18 required, 10 disabled); the features of EPYC itself were not "
        "expanded: no host-model CPU given for x86_64 (libvirt's expansion of it: virsh "
        "hypervisor-cpu-baseline --features)",
        "x86_64 pc-q35-7.2 domain capabilities list video model ramfb, which os-traits "
        f"{vocabulary.OS_TRAITS_VERSION} has no trait for"]


def test_without_the_expansion_the_host_model_cpu_names_some_cpu_traits() -> None:
    """``--domcaps`` without ``--cpu``: the features the host-model CPU requires are
    True, those it disables False, and its model's own are not said (neither way)."""
    reports = by_trait(discovery.cpu_reports(facts("qemu-x86_64-q35")))
    assert {t: r.supported for t, r in reports.items()} == {
        ot.HW_CPU_X86_3DNOW: True, ot.HW_CPU_X86_AVX512VAES: True, ot.HW_CPU_X86_MPX: True,
        ot.HW_CPU_X86_SHA: False}
    assert reports[ot.HW_CPU_X86_SHA].detail == (
        "x86_64 pc-q35-7.2 domain capabilities: the TCG host-model CPU (EPYC) disables sha-ni")
    # SSE2 is EPYC's own: unknown without the expansion, so not reported
    assert ot.HW_CPU_X86_SSE2 not in reports
    # with the expansion, every CPU trait is decided and the named model is not used
    expanded = discovery.facts_from_files(
        [FIXTURES / "qemu-x86_64-q35.xml"], "qemu",
        cpu={"x86_64": FIXTURES / "qemu-x86_64-cpu-expanded.xml"})
    assert by_trait(discovery.cpu_reports(expanded))[ot.HW_CPU_X86_SSE2].supported
    assert not [n for n in discovery.notes(expanded) if "CPU feature" in n]


def test_a_host_model_cpu_is_read_from_the_domain_capabilities() -> None:
    caps = domcaps.parse_file(FIXTURES / "qemu-x86_64-q35.xml")
    assert caps.host_model is not None
    assert caps.host_model.model == "EPYC"
    assert "avx2" not in caps.host_model.required  # EPYC's own feature: not listed
    assert {"mpx", "vaes"} <= caps.host_model.required
    assert "sha-ni" in caps.host_model.disabled
    unsupported = domcaps.parse(
        "<domainCapabilities><domain>qemu</domain><arch>x86_64</arch><cpu><mode "
        "name='host-model' supported='no'/></cpu></domainCapabilities>")
    assert unsupported.host_model is None


def test_a_probe_that_fails_says_why(tmp_path: Path) -> None:
    missing = tmp_path / "qemu-system-x86_64"
    assert discovery.device_list(str(missing), "qemu:///system") == (
        None, f"cannot probe {missing}: No such file or directory")
    failing = tmp_path / "qemu-broken"
    failing.write_text("#!/bin/sh\necho 'cannot load module' >&2\nexit 3\n")
    failing.chmod(0o755)
    devices, problem = discovery.device_list(str(failing), "qemu:///embed?root=/x")
    assert devices is None and problem == f"{failing} -version failed: cannot load module"
    assert discovery.device_list("/usr/bin/qemu-system-x86_64", "qemu+ssh://h/system") == (
        None, "/usr/bin/qemu-system-x86_64 is on the host behind qemu+ssh://h/system; "
              "Moorage reads device lists of local emulators only")


@pytest.mark.parametrize(("host", "expected"), [
    (facts("qemu-x86_64-q35"), {ot.HW_ARCH_X86_64, ot.COMPUTE_ARCH_X86_64}),
    # os-traits has no COMPUTE_ARCH_I686: the i686 emulator adds nothing
    (facts("qemu-x86_64-q35", "qemu-i686-pc"), {ot.HW_ARCH_X86_64, ot.COMPUTE_ARCH_X86_64}),
    (facts("qemu-i686-pc"), {ot.HW_ARCH_I686}),
    (facts("qemu-x86_64-q35", virt_type="lxc", host_arch="aarch64"),
     {ot.HW_ARCH_AARCH64, ot.COMPUTE_ARCH_X86_64}),
    # an architecture os-traits does not name is left out, as upstream
    (dataclasses.replace(lxc_host(), host_arch="armv7l"), set()),
])
def test_architectures(host: HostFacts, expected: set[str]) -> None:
    reports = discovery.arch_reports(host)
    assert {r.trait for r in reports} == expected
    assert all(r.supported for r in reports)


VIOMMU_DEVICES = ('name "intel-iommu", bus System\n'
                  'name "virtio-iommu-pci", bus PCI, alias "virtio-iommu"\n')


@pytest.mark.parametrize(("host", "models"), [
    (facts("qemu-x86_64-q35"), {"AUTO", "INTEL", "VIRTIO"}),
    # libvirt builds no vIOMMU on i440FX
    (facts("qemu-x86_64-pc"), set()),
    # before libvirt 8.3 no virtio vIOMMU: auto is intel
    (facts("qemu-x86_64-q35", versions=((8, 2, 0), (7, 2, 0))), {"AUTO", "INTEL"}),
    (synthetic("", arch="aarch64", machine="virt-7.2", devices=VIOMMU_DEVICES),
     {"AUTO", "SMMUV3", "VIRTIO"}),
    # An emulator without virtio-iommu-pci (an empty list is refused as no list).
    (synthetic("", arch="aarch64", machine="virt-7.2", devices='name "e1000", bus PCI\n'),
     {"AUTO", "SMMUV3"}),
    (lxc_host(), set()),
])
def test_viommu_models(host: HostFacts, models: set[str]) -> None:
    reports = discovery.viommu_reports(host)
    assert supported(reports, vocabulary.VIOMMU_MODEL) == models
    assert len(reports) == len(ot.get_traits("COMPUTE_VIOMMU_MODEL_"))


def test_viommu_virtio_is_not_guessed_without_versions() -> None:
    reports = by_trait(discovery.viommu_reports(facts("qemu-x86_64-q35", versions=None)))
    assert ot.COMPUTE_VIOMMU_MODEL_VIRTIO not in reports
    assert reports[ot.COMPUTE_VIOMMU_MODEL_INTEL].supported


TPM = {ot.COMPUTE_SECURITY_TPM_TIS, ot.COMPUTE_SECURITY_TPM_CRB, ot.COMPUTE_SECURITY_TPM_1_2,
       ot.COMPUTE_SECURITY_TPM_2_0}
TPM_DEVICE = ("<devices><tpm supported='yes'><enum name='model'><value>tpm-crb</value></enum>"
              "<enum name='backendModel'><value>emulator</value></enum>{}</tpm></devices>")


@pytest.mark.parametrize(("host", "expected", "detail"), [
    (facts("qemu-x86_64-q35"), TPM, "TPM"),
    # no swtpm: no guest can have a TPM, whatever the models
    (facts("qemu-x86_64-q35-bare"), set(), "no TPM emulator backend (swtpm)"),
    (lxc_host(), set(), "no x86_64 domain capabilities for virt_type lxc"),
    # libvirt < 8.6 lists no versions: both, as upstream assumes
    (synthetic(TPM_DEVICE.format("")),
     {ot.COMPUTE_SECURITY_TPM_CRB, ot.COMPUTE_SECURITY_TPM_1_2, ot.COMPUTE_SECURITY_TPM_2_0},
     "TPM"),
    (synthetic(TPM_DEVICE.format("<enum name='backendVersion'><value>2.0</value></enum>")),
     {ot.COMPUTE_SECURITY_TPM_CRB, ot.COMPUTE_SECURITY_TPM_2_0}, "m domain capabilities: TPM"),
])
def test_tpm(host: HostFacts, expected: set[str], detail: str) -> None:
    reports = by_trait(discovery.tpm_reports(host))
    assert set(reports) == TPM
    assert {t for t, r in reports.items() if r.supported} == expected
    assert all(detail in r.detail for r in reports.values())


@pytest.mark.parametrize(("host", "bios", "uefi"), [
    (facts("qemu-x86_64-pc"), True, True),
    (facts("qemu-x86_64-q35"), True, True),
    # before ovmf was installed: QEMU's own SeaBIOS only
    (facts("qemu-x86_64-q35-bare"), True, False),
    # libvirt lists OVMF files for i686, but no EFI firmware can be selected for it
    (facts("qemu-i686-pc"), True, False),
    (synthetic("<os supported='yes'><enum name='firmware'><value>efi</value></enum></os>",
               arch="aarch64"), False, True),
])
def test_firmware(host: HostFacts, bios: bool, uefi: bool) -> None:
    reports = by_trait(discovery.firmware_reports(host))
    assert reports[ot.COMPUTE_FIRMWARE_BIOS].supported is bios
    assert reports[ot.COMPUTE_FIRMWARE_UEFI].supported is uefi


def test_no_firmware_traits_without_domain_capabilities() -> None:
    assert discovery.firmware_reports(lxc_host()) == []


@pytest.mark.parametrize(("host", "secure_boot", "vtpm"), [
    (facts("qemu-x86_64-q35"), True, True),
    (facts("qemu-x86_64-pc"), False, True),  # secure boot needs SMM: q35
    (facts("qemu-x86_64-q35-bare"), False, False),
    (lxc_host(), False, False),
])
def test_secure_boot_and_vtpm(host: HostFacts, secure_boot: bool, vtpm: bool) -> None:
    found = discovery.host_capabilities(host)
    assert found["supports_secure_boot"].supported is secure_boot
    assert found["supports_secure_boot"].source is Source.DOMAIN_CAPABILITIES
    assert found["supports_vtpm"].supported is vtpm


@pytest.mark.parametrize(("host", "expected"), [
    (facts("qemu-x86_64-q35"), dict.fromkeys((
        "supports_remote_managed_ports", "supports_virtio_fs",
        "supports_address_space_passthrough", "supports_address_space_emulated",
        "supports_stateless_firmware"), True)),
    (facts("qemu-x86_64-q35", versions=((8, 5, 0), (6, 1, 0))), {
        "supports_remote_managed_ports": True, "supports_virtio_fs": False,
        "supports_address_space_passthrough": False,
        "supports_address_space_emulated": False, "supports_stateless_firmware": False}),
    # maxphysaddr and virtio-fs are QEMU's
    (lxc_host(), {"supports_remote_managed_ports": True, "supports_virtio_fs": False,
                  "supports_address_space_passthrough": False,
                  "supports_address_space_emulated": False,
                  "supports_stateless_firmware": True}),
    (facts("qemu-x86_64-q35", versions=None), {}),
])
def test_version_gated_capabilities(host: HostFacts, expected: dict[str, bool]) -> None:
    found = discovery.host_capabilities(host)
    gated = {k: f.supported for k, f in found.items()
             if k not in ("supports_secure_boot", "supports_vtpm")}
    assert gated == expected


SOUND = {"SB16", "ES1370", "AC97", "ICH6", "ICH9", "USB"}
ALL_SOUND = {t.removeprefix("COMPUTE_SOUND_MODEL_") for t in ot.get_traits("COMPUTE_SOUND_MODEL_")}


@pytest.mark.parametrize(("host", "models", "undecided"), [
    # this QEMU has every model's devices but virtio-sound (QEMU 8.2); libvirt 9.0 gives
    # it the PC speaker as -soundhw, which QEMU 7.1 removed (the guest fails to start)
    (facts("qemu-x86_64-q35"), SOUND, set()),
    (facts("qemu-x86_64-pc"), SOUND, set()),
    # before QEMU 7.1, -soundhw pcspk works
    (synthetic("", machine="pc-i440fx-7.0", versions=((8, 0, 0), (7, 0, 0)),
               devices='name "AC97", bus PCI\n'), {"AC97", "PCSPK"}, set()),
    # a newer libvirt: whether it builds the PC speaker is not known here
    (synthetic("", machine="pc-q35-8.2", versions=((10, 4, 0), (8, 2, 0)),
               devices='name "virtio-sound-pci", bus PCI\n'), {"VIRTIO"}, {"PCSPK"}),
    (synthetic("", machine="pc-q35-8.2", devices='name "virtio-sound-pci", bus PCI\n'),
     set(), set()),
    # an ARM board has no PC speaker and no ISA bus for a Sound Blaster
    (synthetic("", arch="aarch64", machine="virt-7.2",
               devices='name "sb16", bus ISA\nname "AC97", bus PCI\n'), {"AC97"}, set()),
])
def test_sound_models(host: HostFacts, models: set[str], undecided: set[str]) -> None:
    reports = discovery.sound_reports(host)
    assert supported(reports, vocabulary.SOUND_MODEL) == models
    assert {r.trait.removeprefix("COMPUTE_SOUND_MODEL_") for r in reports} == (
        ALL_SOUND - undecided)


def test_the_pc_speaker_says_why_not() -> None:
    pcspk = by_trait(discovery.sound_reports(facts("qemu-x86_64-q35")))[
        ot.COMPUTE_SOUND_MODEL_PCSPK]
    assert (pcspk.supported, pcspk.source) == (False, Source.HYPERVISOR)
    assert pcspk.detail.endswith("libvirt 9.0.0 gives QEMU the PC speaker as -soundhw, which "
                                 "QEMU 7.2.22 no longer has (removed in 7.1.0)")


def test_packed_virtqueue_always() -> None:
    [packed] = discovery.packed_virtqueue_reports(lxc_host())
    assert (packed.trait, packed.supported) == (ot.COMPUTE_NET_VIRTIO_PACKED, True)


@pytest.mark.parametrize(("images_type", "force_raw", "virt_type", "qcow2", "ploop"), [
    ("default", True, "kvm", True, False),
    ("rbd", True, "kvm", True, False),
    ("rbd", False, "kvm", False, False),
    ("lvm", False, "qemu", False, False),
    ("qcow2", False, "qemu", True, False),
    ("default", True, "parallels", True, True),
    ("lvm", False, "parallels", False, True),
])
def test_image_types(images_type: str, force_raw: bool, virt_type: str, qcow2: bool,
                     ploop: bool) -> None:
    found = discovery.static_capabilities(virt_type, images_type, force_raw)
    image_types = {k.removeprefix("supports_image_type_"): f.supported
                   for k, f in found.items() if k.startswith("supports_image_type_")}
    assert image_types == {"aki": True, "ari": True, "ami": True, "raw": True, "iso": True,
                           "qcow2": qcow2, "ploop": ploop}
    if not qcow2:
        assert found["supports_image_type_qcow2"].source is Source.CONFIGURATION


@pytest.mark.parametrize(("entries", "expected"), [
    ([], {}),
    (["x86_64=q35"], {"x86_64": "q35"}),
    ([" amd64 = pc-q35-7.2", "aarch64=virt"], {"x86_64": "pc-q35-7.2", "aarch64": "virt"}),
])
def test_machine_types(entries: list[str], expected: dict[str, str]) -> None:
    assert discovery.machine_types(entries) == expected


@pytest.mark.parametrize("entry", ["q35", "=q35", "x86_64=", "x86_64 q35"])
def test_malformed_machine_types(entry: str) -> None:
    with pytest.raises(discovery.MachineTypeError, match=r"hw_machine_type: .* is not "
                                                         r"ARCH=MACHINE"):
        discovery.machine_types([entry])


def test_files_need_the_host_architecture_for_qemu() -> None:
    with pytest.raises(ValueError, match="no domain capabilities file for the host "
                                         "architecture aarch64"):
        facts("qemu-x86_64-q35", host_arch="aarch64")
    with pytest.raises(ValueError, match="a second domain capabilities file for x86_64"):
        facts("qemu-x86_64-q35", "qemu-x86_64-pc")


@pytest.mark.parametrize("host", [
    facts("qemu-x86_64-pc"), facts("qemu-x86_64-q35", "qemu-i686-pc", virt_type="kvm"),
    facts("qemu-x86_64-q35-bare", virt_type="parallels", versions=None), lxc_host(),
])
def test_every_device_report_is_an_os_trait_once(host: HostFacts) -> None:
    reports = discovery.device_reports(host)
    assert not {r.trait for r in reports} - vocabulary.KNOWN
    by_trait(reports)


def test_a_table_drifting_from_os_traits_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vocabulary, "KNOWN", vocabulary.KNOWN - {ot.COMPUTE_STORAGE_BUS_SATA})
    with pytest.raises(vocabulary.UnknownTrait, match="COMPUTE_STORAGE_BUS_SATA"):
        discovery.device_reports(facts("qemu-x86_64-q35"))
