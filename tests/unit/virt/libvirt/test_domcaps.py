"""The domain and host capabilities parsers, on documents captured from this machine's
QEMU (tests/fixtures/domcaps) and on generated and broken ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moorage.virt.libvirt import domcaps, hostcaps
from moorage.virt.libvirt.domcaps import DomainCapabilitiesError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "domcaps"


def fixture(name: str) -> domcaps.DomainCapabilities:
    return domcaps.parse_file(FIXTURES / f"{name}.xml")


@pytest.mark.parametrize(("name", "arch", "machine", "emulator", "buses"), [
    ("qemu-x86_64-pc", "x86_64", "pc-i440fx-7.2", "/usr/bin/qemu-system-x86_64",
     ("ide", "fdc", "scsi", "virtio", "usb", "sata")),
    ("qemu-x86_64-q35", "x86_64", "pc-q35-7.2", "/usr/bin/qemu-system-x86_64",
     ("fdc", "scsi", "virtio", "usb", "sata")),
    ("qemu-i686-pc", "i686", "pc-i440fx-7.2", "/usr/bin/qemu-system-i386",
     ("ide", "fdc", "scsi", "virtio", "usb", "sata")),
])
def test_captured_documents(name: str, arch: str, machine: str, emulator: str,
                            buses: tuple[str, ...]) -> None:
    caps = fixture(name)
    assert (caps.arch, caps.machine, caps.emulator, caps.virt_type) == (
        arch, machine, emulator, "qemu")
    assert caps.disk_buses == buses
    assert caps.disk_devices == ("disk", "cdrom", "floppy", "lun")
    # the same video models on every machine type, ramfb included (no trait names it)
    assert caps.video_models == ("vga", "cirrus", "vmvga", "qxl", "virtio", "none", "bochs",
                                 "ramfb")
    assert "vnc" in caps.graphics_types
    assert caps.tpm_models == ("tpm-tis", "tpm-crb")
    assert caps.features["vmcoreinfo"] is True and caps.features["sev"] is False


def test_firmware_and_tpm_follow_the_installed_packages() -> None:
    pc, q35, i686 = fixture("qemu-x86_64-pc"), fixture("qemu-x86_64-q35"), fixture(
        "qemu-i686-pc")
    # ovmf installed: EFI for x86_64, secure boot only where SMM is (q35)
    assert pc.firmware.uefi and q35.firmware.uefi and not i686.firmware.uefi
    # libvirt lists its built-in (64-bit) OVMF files for i686 too: no proof of UEFI
    assert "/usr/share/OVMF/OVMF_CODE.fd" in i686.firmware.loader_paths
    assert q35.firmware.secure_boot and not pc.firmware.secure_boot
    assert "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd" in q35.firmware.loader_paths
    assert pc.firmware.loader_types == ("rom", "pflash")
    # swtpm installed: the emulator backend with both TPM versions
    assert "emulator" in q35.tpm_backends
    assert q35.tpm_versions == ("1.2", "2.0")
    bare = fixture("qemu-x86_64-q35-bare")
    assert not bare.firmware.uefi and not bare.firmware.secure_boot
    assert bare.firmware.autoselect == ()
    assert bare.tpm_backends == ("passthrough",) and bare.tpm_versions is None


def document(body: str) -> str:
    return f"<domainCapabilities>{body}</domainCapabilities>"


MINIMAL = "<path>/usr/bin/qemu</path><domain>qemu</domain><arch>x86_64</arch>"


@pytest.mark.parametrize(("xml", "element", "problem"), [
    (document("<domain>qemu</domain>"), "domainCapabilities/arch", "missing"),
    (document("<arch>x86_64</arch>"), "domainCapabilities/domain", "missing"),
    (document(MINIMAL.replace("x86_64", " ")), "domainCapabilities/arch", "empty"),
    (document(MINIMAL + "<vcpu max='many'/>"), "domainCapabilities/vcpu",
     "max='many' is not a whole number"),
    (document(MINIMAL + "<devices><disk supported='maybe'/></devices>"),
     "domainCapabilities/devices/disk", "supported='maybe' is neither"),
    (document(MINIMAL + "<devices><video/></devices>"), "domainCapabilities/devices/video",
     "supported=None"),
    (document(MINIMAL + "<devices><disk supported='yes'><enum><value>ide</value></enum>"
              "</disk></devices>"), "domainCapabilities/devices/disk/enum",
     "an <enum> without a name"),
    (document(MINIMAL + "<devices><disk supported='yes'><enum name='bus'><value/></enum>"
              "</disk></devices>"), "domainCapabilities/devices/disk/enum/value",
     "an empty value in enum 'bus'"),
    (document(MINIMAL + "<os supported='yes'><loader supported='yes'><value/></loader></os>"),
     "domainCapabilities/os/loader/value", "an empty loader path"),
    (document(MINIMAL + "<features><sev/></features>"), "domainCapabilities/features/sev",
     "supported=None"),
    ("<capabilities><host/></capabilities>", "domainCapabilities",
     "the document's root is <capabilities>"),
    (document(MINIMAL + "<devices><disk supported='yes'></devices>"), "domainCapabilities",
     "not well-formed XML: Opening and ending tag mismatch: disk"),
    ("", "domainCapabilities", "not well-formed XML: Document is empty"),
])
def test_malformed_documents_name_the_element(xml: str, element: str, problem: str) -> None:
    with pytest.raises(DomainCapabilitiesError) as caught:
        domcaps.parse(xml, "broken.xml")
    assert caught.value.source == "broken.xml"
    assert caught.value.element == element
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"broken.xml: <{element}>: ")
    assert "\n" not in str(caught.value)


def test_a_file_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x86_64-q35.xml"
    path.write_text((FIXTURES / "qemu-x86_64-q35.xml").read_text().replace(
        "<arch>x86_64</arch>", ""))
    with pytest.raises(DomainCapabilitiesError, match=rf"^{path}: <domainCapabilities/arch>: "
                                                      "missing$"):
        domcaps.parse_file(path)
    with pytest.raises(DomainCapabilitiesError, match="cannot read the file: No such file"):
        domcaps.parse_file(tmp_path / "missing.xml")


def test_unsupported_devices_offer_nothing_and_unknown_elements_are_ignored() -> None:
    caps = domcaps.parse(document(
        MINIMAL + "<devices><disk supported='no'><enum name='bus'><value>ide</value></enum>"
        "</disk><crypto supported='yes'><enum name='model'><value>qemu</value></enum>"
        "</crypto></devices><launchSecurity/>"))
    assert caps.disk_buses == ()
    assert caps.device("crypto").values("model") == ("qemu",)
    assert caps.video_models == () and caps.tpm_versions is None
    assert caps.machine is None and caps.max_vcpus is None


NAMES = st.from_regex(r"\A[a-z][a-z0-9-]{0,12}\Z")


@given(st.lists(NAMES, unique=True, max_size=8), st.lists(NAMES, unique=True, max_size=8),
       st.booleans())
def test_generated_documents_round_trip(buses: list[str], models: list[str],
                                        disk_supported: bool) -> None:
    def enum(name: str, values: list[str]) -> str:
        return f"<enum name='{name}'>{''.join(f'<value>{v}</value>' for v in values)}</enum>"

    yes_no = "yes" if disk_supported else "no"
    caps = domcaps.parse(document(
        f"{MINIMAL}<machine>pc-q35-7.2</machine><devices>"
        f"<disk supported='{yes_no}'>{enum('bus', buses)}</disk>"
        f"<video supported='yes'>{enum('modelType', models)}</video></devices>"))
    assert caps.disk_buses == (tuple(buses) if disk_supported else ())
    assert caps.video_models == tuple(models)
    assert caps.machine == "pc-q35-7.2"


@given(st.text(max_size=200))
def test_any_text_is_a_value_or_a_domain_capabilities_error(text: str) -> None:
    try:
        domcaps.parse(text)
    except DomainCapabilitiesError as exc:
        assert "\n" not in exc.element


@given(st.integers(0, 8700).map(lambda cut: cut))
def test_truncated_captures_fail_cleanly(cut: int) -> None:
    text = (FIXTURES / "qemu-x86_64-q35.xml").read_text()[:cut]
    with pytest.raises(DomainCapabilitiesError):
        domcaps.parse(text, "cut.xml")


def test_host_capabilities() -> None:
    caps = hostcaps.parse((FIXTURES / "host-capabilities.xml").read_bytes())
    assert caps.cpu.arch == "x86_64"
    assert caps.cpu.model == "Broadwell-noTSX-IBRS"
    assert {"avx512f", "vme"} <= caps.cpu.features
    guests = {g.arch: g for g in caps.guests_for("qemu")}
    assert set(guests) == {"i686", "x86_64"}
    x86_64 = guests["x86_64"]
    assert x86_64.emulator_for("qemu") == "/usr/bin/qemu-system-x86_64"
    assert x86_64.default_machine == "pc-i440fx-7.2"
    assert x86_64.aliases == {"pc": "pc-i440fx-7.2", "q35": "pc-q35-7.2"}
    assert x86_64.canonical("q35") == "pc-q35-7.2"
    assert x86_64.canonical("pc-q35-5.2") == "pc-q35-5.2"
    assert x86_64.canonical("virt") is None
    assert caps.guests_for("lxc") == []


@pytest.mark.parametrize(("xml", "element"), [
    ("<capabilities/>", "capabilities/host/cpu"),
    ("<capabilities><host><cpu/></host></capabilities>", "capabilities/host/cpu/arch"),
    ("<capabilities><host><cpu><arch>x86_64</arch></cpu></host><guest><arch/></guest>"
     "</capabilities>", "capabilities/guest[1]/arch/@name"),
    ("<domainCapabilities/>", "capabilities"),
])
def test_malformed_host_capabilities(xml: str, element: str) -> None:
    with pytest.raises(hostcaps.HostCapabilitiesError) as caught:
        hostcaps.parse(xml, "caps.xml")
    assert caught.value.element == element
