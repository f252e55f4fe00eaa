"""The libvirt driver against real QEMU (embedded libvirt, TCG): it reports exactly what
the live domain capabilities list for the configured machine type, sizes the host as
libvirt and the file system do, and says why when it cannot reach the hypervisor.

The expected values are read from the live documents with XPath here, not through
the driver's parser. The first probe of a test session takes seconds (libvirt asks
every QEMU binary); every later one in the process takes milliseconds.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from pathlib import Path

import os_traits as ot
import pytest
from lxml import etree

from moorage.conf import load_config
from moorage.model import vocabulary
from moorage.virt.driver import HypervisorUnavailable
from moorage.virt.libvirt import host, tables
from moorage.virt.libvirt.driver import InvalidConfiguration, LibvirtDriver
from moorage.virt.report import Source, TraitReport

BUSES = sorted({bus for buses in tables.DEVICE_BUSES.values() for bus in buses})
VIDEO = ("cirrus", "qxl", "vga", "vmvga", "xen", "virtio", "gop", "none", "bochs")

MakeDriver = Callable[..., LibvirtDriver]


@pytest.fixture(scope="module")
def make_driver(libvirt_embed_uri: str) -> MakeDriver:
    def make(*machine_types: str, **options: object) -> LibvirtDriver:
        overrides: list[tuple[str, str, object]] = [
            ("libvirt", "virt_type", "qemu"),
            ("libvirt", "connection_uri", libvirt_embed_uri),
            ("libvirt", "hw_machine_type", list(machine_types)),
            ("DEFAULT", "host", "compute-1"),
        ]
        overrides += [(*key.split("__"), value) for key, value in options.items()]
        return LibvirtDriver(load_config(overrides=overrides))

    return make


def live(uri: str, machine: str | None) -> etree._Element:
    """The live domain capabilities of x86_64 guests, straight from libvirt."""
    xml = host.connect(uri).getDomainCapabilities(None, "x86_64", machine, "qemu", 0)
    return etree.fromstring(xml.encode())


def values(document: etree._Element, xpath: str) -> set[str]:
    return {str(v) for v in document.xpath(xpath)}


def reported(driver: LibvirtDriver) -> dict[str, TraitReport]:
    return {r.trait: r for r in driver.trait_reports("compute-1")}


@pytest.mark.parametrize("machine", ["pc", "q35"])
def test_exactly_the_buses_and_video_models_qemu_lists(
        make_driver: MakeDriver, libvirt_embed_uri: str, machine: str) -> None:
    document = live(libvirt_embed_uri, machine)
    buses = values(document, "devices/disk/enum[@name='bus']/value/text()")
    models = values(document, "devices/video/enum[@name='modelType']/value/text()")
    reports = reported(make_driver(f"x86_64={machine}"))
    for bus in BUSES:
        report = reports[vocabulary.device_trait(vocabulary.STORAGE_BUS, bus)]
        assert report.supported is (bus in buses), bus
        assert report.source is Source.DOMAIN_CAPABILITIES
        assert report.detail == f"x86_64 {machine} domain capabilities"
    for model in VIDEO:
        assert reports[vocabulary.device_trait(vocabulary.GRAPHICS_MODEL, model)].supported is (
            model in models), model
    # what QEMU 7.2 lists here: q35 has no IDE controller, pc has
    assert reports[ot.COMPUTE_STORAGE_BUS_IDE].supported is (machine == "pc")
    assert reports[ot.COMPUTE_STORAGE_BUS_SATA].supported


def test_without_a_configured_machine_type_libvirt_default_counts(
        make_driver: MakeDriver, libvirt_embed_uri: str) -> None:
    default = live(libvirt_embed_uri, None)
    canonical = default.findtext("machine")
    ide = reported(make_driver())[ot.COMPUTE_STORAGE_BUS_IDE]
    assert ide.supported is ("ide" in values(default, "devices/disk/enum[@name='bus']/value/"
                                                      "text()"))
    assert ide.detail == f"x86_64 {canonical} (default machine type) domain capabilities"


def test_architectures_firmware_and_tpm_follow_the_live_host(
        make_driver: MakeDriver, libvirt_embed_uri: str) -> None:
    document = live(libvirt_embed_uri, "q35")
    reports = reported(make_driver("x86_64=q35"))
    assert reports[f"HW_ARCH_{platform.machine().upper()}"].supported
    assert reports[ot.COMPUTE_ARCH_X86_64].supported
    firmware = values(document, "os/enum[@name='firmware']/value/text()")
    assert reports[ot.COMPUTE_FIRMWARE_UEFI].supported is ("efi" in firmware)
    assert reports[ot.COMPUTE_FIRMWARE_BIOS].supported  # SeaBIOS, always on x86
    secure = values(document, "os/loader/enum[@name='secure']/value/text()")
    assert reports[ot.COMPUTE_SECURITY_UEFI_SECURE_BOOT].supported is ("yes" in secure)
    emulator = "emulator" in values(document, "devices/tpm/enum[@name='backendModel']/value/"
                                              "text()")
    assert reports[ot.COMPUTE_SECURITY_TPM_TIS].supported is emulator
    # versions from the live connection: this libvirt (9.0) has no igb
    libvirt_version = host.connect(libvirt_embed_uri).getLibVersion()
    assert reports[ot.COMPUTE_NET_VIF_MODEL_IGB].supported is (libvirt_version >= 9_003_000)
    assert reports[ot.COMPUTE_STORAGE_VIRTIO_FS].source is Source.HYPERVISOR


def test_probed_once_then_cached(make_driver: MakeDriver,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    driver = make_driver("x86_64=q35")
    first = driver.trait_reports("compute-1")

    def no_more(*args: object) -> None:
        raise AssertionError("probed twice")

    monkeypatch.setattr(host.Host, "domain_capabilities", no_more)
    monkeypatch.setattr(host.Host, "capabilities", no_more)
    assert driver.trait_reports("compute-1") == first
    assert driver.facts is driver.facts


def test_provider_tree_sizes_the_host(make_driver: MakeDriver, tmp_path: Path) -> None:
    driver = make_driver(DEFAULT__instances_path=str(tmp_path / "not-yet" / "instances"),
                         DEFAULT__reserved_host_cpus=1, DEFAULT__reserved_host_memory_mb=256,
                         DEFAULT__reserved_host_disk_mb=1025,
                         DEFAULT__cpu_allocation_ratio=16.0)
    [node] = driver.provider_tree("compute-1")
    assert (node.name, node.parent) == ("compute-1", None)
    vcpu, memory, disk = (node.inventories[rc] for rc in ("VCPU", "MEMORY_MB", "DISK_GB"))
    assert (vcpu.total, vcpu.reserved, vcpu.allocation_ratio) == (os.cpu_count(), 1, 16.0)
    # libvirt's node info, as upstream: the NUMA nodes' memory, which on this VM is
    # less than /proc/meminfo's MemTotal (hot-added memory belongs to no node)
    meminfo = Path("/proc/meminfo").read_text().split()
    mem_total_mb = int(meminfo[meminfo.index("MemTotal:") + 1]) // 1024
    assert memory.total == host.connect(driver.uri).getInfo()[1]
    assert 0 < memory.total <= mem_total_mb and memory.reserved == 256
    stat = os.statvfs(tmp_path)
    assert disk.total == stat.f_frsize * stat.f_blocks // 1024**3
    assert disk.reserved == 2  # 1025 MiB, rounded up to whole GiB
    assert memory.allocation_ratio == disk.allocation_ratio == 1.0


@pytest.mark.parametrize(("uri", "reason"), [
    ("qemu+unix:///system?socket=/nonexistent/libvirt-sock",
     "Failed to connect socket to '/nonexistent/libvirt-sock'"),
    ("qemu:///embed", "Missing URI parameter 'root'"),
])
def test_an_unreachable_hypervisor_is_unavailable_with_the_reason(
        uri: str, reason: str, libvirt_embed_uri: str) -> None:
    driver = LibvirtDriver(load_config(overrides=[("libvirt", "connection_uri", uri),
                                                  ("libvirt", "virt_type", "qemu")]))
    with pytest.raises(HypervisorUnavailable) as caught:
        driver.trait_reports(driver.nodes()[0])
    message = str(caught.value)
    assert message.startswith(f"cannot connect to libvirt at {uri}: ")
    assert reason in message and "\n" not in message


def test_a_machine_type_libvirt_lacks_is_refused(make_driver: MakeDriver) -> None:
    with pytest.raises(InvalidConfiguration,
                       match=r"^\[libvirt\] hw_machine_type x86_64=q99: libvirt has no such "
                             r"machine type for x86_64 \(known: "):
        make_driver("x86_64=q99").init_host()
