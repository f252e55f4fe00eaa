"""The emulator's device list, read from what this machine's QEMU printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from moorage.virt.libvirt import qemu_devices
from moorage.virt.libvirt.qemu_devices import DeviceProbeError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "domcaps"


def test_a_recorded_list() -> None:
    found = qemu_devices.read_file(FIXTURES / "qemu-x86_64-devices.txt",
                                   "/usr/bin/qemu-system-x86_64", "7.2.22")
    e1000 = found.get("e1000")
    assert e1000 is not None and (e1000.bus, e1000.category) == ("PCI", "Network devices")
    # an alias finds its device
    assert found.get("e1000-82540em") is e1000
    assert found.get("virtio-net") is found.get("virtio-net-pci")
    assert found.get("intel-iommu") is not None and found.get("intel-iommu").bus == "System"
    assert found.get("spapr-vlan") is None
    assert found.describe() == "qemu-system-x86_64 7.2.22"


def test_noise_is_ignored_and_a_nameless_device_is_an_error() -> None:
    text = ("module ui-ui-gtk not found\nNetwork devices:\n"
            'name "rtl8139", bus PCI\ntype is NULL\n')
    assert list(qemu_devices.parse(text, "q", None, "t").devices) == ["rtl8139"]
    with pytest.raises(DeviceProbeError, match="t: a device line without a quoted name"):
        qemu_devices.parse('name rtl8139, bus PCI\n', "q", None, "t")


def test_the_version_line() -> None:
    assert qemu_devices.version_of(
        "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\n") == "7.2.22"
    assert qemu_devices.version_of("something else") is None


def test_a_probe_is_asked_once_per_binary(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    fake = tmp_path / "qemu-system-fake"
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\n"
                    "if [ \"$1\" = -version ]; then echo 'QEMU emulator version 9.1.0'; "
                    "else printf 'Network devices:\\nname \"e1000\", bus PCI\\n'; fi\n")
    fake.chmod(0o755)
    first = qemu_devices.probe(str(fake))
    assert qemu_devices.probe(str(fake)) is first
    assert first.version == "9.1.0" and first.get("e1000") is not None
    assert calls.read_text().splitlines() == ["-version", "-device help"]


@pytest.mark.parametrize("text", ["", "\n\n", "garbage\n", "Network devices:\n"])
def test_a_list_with_no_device_is_an_error_naming_its_file(text: str) -> None:
    """Read as a list, it would report every NIC, sound and vIOMMU model False."""
    with pytest.raises(DeviceProbeError, match=r"^list\.txt: no device in it; expected the "
                       r"output of qemu-system-x86_64 -device help"):
        qemu_devices.parse(text, "/usr/bin/qemu-system-x86_64", None, "list.txt")
