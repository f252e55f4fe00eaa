"""The libvirt driver over captured domain capabilities (no hypervisor): its capability
table as traits, where each answer comes from, and the configuration it refuses."""

from __future__ import annotations

import sys
from pathlib import Path

import os_traits as ot
import pytest

from moorage.conf import load_config
from moorage.virt.driver import HypervisorUnavailable
from moorage.virt.libvirt import discovery, host
from moorage.virt.libvirt.driver import InvalidConfiguration, LibvirtDriver
from moorage.virt.loader import load_driver
from moorage.virt.report import Source
from tests.unit.virt.builders import by_trait, config

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "domcaps"


def driver(fixture: str = "qemu-x86_64-q35", **options: object) -> LibvirtDriver:
    conf = config(libvirt__virt_type="qemu", **options)
    facts = discovery.facts_from_files([FIXTURES / f"{fixture}.xml"], "qemu",
                                       machine_name="q35",
                                       devices={"x86_64": FIXTURES / "qemu-x86_64-devices.txt"})
    return LibvirtDriver(conf, facts)


def reports(d: LibvirtDriver) -> dict[str, object]:
    return {t: (r.supported, r.source) for t, r in by_trait(d.trait_reports("fake-host")).items()}


def test_image_types_as_upstream() -> None:
    found = reports(driver())
    for disk_format in ("AKI", "ARI", "AMI", "RAW", "ISO", "QCOW2"):
        assert found[f"COMPUTE_IMAGE_TYPE_{disk_format}"] == (True, Source.DRIVER_TABLE)
    assert found[ot.COMPUTE_IMAGE_TYPE_PLOOP] == (False, Source.CONFIGURATION)
    # libvirt says nothing of the formats it has no key for
    for disk_format in ("VDI", "VHD", "VHDX", "VMDK"):
        assert f"COMPUTE_IMAGE_TYPE_{disk_format}" not in found


def test_a_raw_only_backend_withdraws_qcow2() -> None:
    d = driver(libvirt__images_type="rbd", DEFAULT__force_raw_images=False)
    qcow2 = by_trait(d.trait_reports("fake-host"))[ot.COMPUTE_IMAGE_TYPE_QCOW2]
    assert (qcow2.supported, qcow2.source) == (False, Source.CONFIGURATION)
    assert "[libvirt] images_type = rbd" in qcow2.detail
    assert d.capabilities["supports_image_type_qcow2"] is False


def test_the_exclude_list_wins() -> None:
    found = reports(driver(compute__image_type_exclude_list=["qcow2", "iso"]))
    assert found[ot.COMPUTE_IMAGE_TYPE_QCOW2] == (False, Source.CONFIGURATION)
    assert found[ot.COMPUTE_IMAGE_TYPE_ISO] == (False, Source.CONFIGURATION)
    assert found[ot.COMPUTE_IMAGE_TYPE_RAW] == (True, Source.DRIVER_TABLE)


def test_capabilities_learned_from_the_hypervisor_say_so() -> None:
    q35, bare = driver(), driver("qemu-x86_64-q35-bare")
    assert reports(q35)[ot.COMPUTE_SECURITY_UEFI_SECURE_BOOT] == (
        True, Source.DOMAIN_CAPABILITIES)
    assert reports(bare)[ot.COMPUTE_SECURITY_UEFI_SECURE_BOOT] == (
        False, Source.DOMAIN_CAPABILITIES)
    assert q35.capabilities["supports_secure_boot"] is True
    assert q35.capabilities["supports_vtpm"] is True
    # with no versions (a file), version-gated capabilities are not guessed
    assert ot.COMPUTE_STORAGE_VIRTIO_FS not in reports(q35)
    assert "supports_virtio_fs" not in q35.capabilities


def test_device_reports_come_with_the_capabilities() -> None:
    found = reports(driver())
    assert found[ot.COMPUTE_STORAGE_BUS_IDE] == (False, Source.DOMAIN_CAPABILITIES)
    assert found[ot.COMPUTE_NET_VIF_MODEL_E1000] == (True, Source.DEVICE_LIST)
    assert found[ot.COMPUTE_NET_VIF_MODEL_NETFRONT] == (False, Source.DRIVER_TABLE)
    assert found[ot.HW_ARCH_X86_64] == (True, Source.DOMAIN_CAPABILITIES)


def test_no_hypervisor_means_no_host_to_size() -> None:
    with pytest.raises(HypervisorUnavailable, match="built from domain capabilities files"):
        driver().provider_tree("fake-host")


@pytest.mark.parametrize(("virt_type", "uri"), [
    ("kvm", "qemu:///system"), ("qemu", "qemu:///system"), ("lxc", "lxc:///"),
    ("parallels", "parallels:///system"),
])
def test_the_usual_uri_per_virt_type(virt_type: str, uri: str) -> None:
    assert LibvirtDriver(config(libvirt__virt_type=virt_type)).uri == uri
    assert LibvirtDriver(config(libvirt__virt_type=virt_type,
                                libvirt__connection_uri="qemu:///session")).uri == (
        "qemu:///session")


def test_the_loader_gives_the_libvirt_driver() -> None:
    loaded = load_driver(config(DEFAULT__compute_driver="libvirt.LibvirtDriver"))
    assert isinstance(loaded, LibvirtDriver) and loaded.nodes() == ["fake-host"]


def test_an_unknown_virt_type_in_a_file_is_one_line_with_the_choices(tmp_path: Path) -> None:
    path = tmp_path / "moorage.conf"
    path.write_text("[libvirt]\nvirt_type = xen\n")
    with pytest.raises(InvalidConfiguration) as caught:
        LibvirtDriver(load_config([str(path)]))
    assert str(caught.value) == (
        f"[libvirt] virt_type in {path}: Valid values are [kvm, qemu, lxc, parallels], "
        "but found 'xen'")


def test_a_malformed_machine_type_is_refused() -> None:
    with pytest.raises(InvalidConfiguration, match="'q35' is not ARCH=MACHINE"):
        LibvirtDriver(config(libvirt__hw_machine_type=["q35"]))


def test_without_libvirt_python_the_hypervisor_is_unavailable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "libvirt", None)  # import libvirt -> ImportError
    monkeypatch.setattr(host, "_connections", {})
    d = LibvirtDriver(config(libvirt__connection_uri="qemu:///system"))
    with pytest.raises(HypervisorUnavailable, match=r"^libvirt-python is not installed"):
        d.init_host()
    with pytest.raises(HypervisorUnavailable):
        d.trait_reports("fake-host")
