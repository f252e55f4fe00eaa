"""Real guests under QEMU/TCG through libvirt (the embedded driver, no daemon).

Each guest is defined and started through the driver, then read back twice: the
live domain XML (what libvirt runs) and QEMU's own command line from its log
(what QEMU was given), and both must show the chosen NIC model, video model, disk
bus, TPM, timer or firmware. No OS image is needed: an empty root disk boots to
"no bootable device", and the guest is running.

Guests are destroyed and undefined in the background (QEMU takes ~1.5 s to exit
under TCG) and the module waits for every one of them at the end, failing if a
destroy failed or a guest is left. Timings are printed at the end of the run.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import os_traits as ot
import pytest
from lxml import etree

from moorage.conf import load_config
from moorage.virt.driver import Guest, UnsupportedHardware
from moorage.virt.libvirt import host, spawn
from moorage.virt.libvirt.driver import LibvirtDriver
from tests.unit.virt import builders

NODE = "compute-1"
# QEMU's device for each model libvirt was asked for.
NIC_DEVICES = {"e1000": "e1000", "e1000e": "e1000e", "rtl8139": "rtl8139",
               "virtio": "virtio-net-pci", "pcnet": "pcnet", "ne2k_pci": "ne2k_pci",
               "vmxnet3": "vmxnet3"}
VIDEO_DEVICES = {"vga": "VGA", "cirrus": "cirrus-vga", "qxl": "qxl-vga", "virtio": "virtio-vga",
                 "bochs": "bochs-display", "vmvga": "vmware-svga", "none": None}
DISK_DEVICES = {"virtio": "virtio-blk-pci", "ide": "ide-hd", "sata": "ide-hd",
                "scsi": "scsi-hd", "usb": "usb-storage"}
DEVICE_ARG = re.compile(r"^-device '?(\{.*\})'?", re.MULTILINE)


@dataclass
class Lab:
    """The driver, the guests it started, and how long starting and destroying took."""

    driver: LibvirtDriver
    root: Path
    reaper: ThreadPoolExecutor
    destroys: list[Future[float]] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    # Guests the running test started, destroyed when it ends.
    pending: list[str] = field(default_factory=list)

    def boot(self, properties: Mapping[str, object] | None = None, *,
             extra_specs: Mapping[str, str] | None = None,
             disk_format: str = "qcow2") -> Booted:
        guest = _small(builders.guest(NODE, disk_format, properties, extra_specs))
        # whatever happens, the guest goes when the test ends (destroying nothing is fine)
        self.pending.append(guest.uuid)
        started = time.perf_counter()
        self.driver.spawn(guest)
        self.starts.append(time.perf_counter() - started)
        return Booted(guest, spawn.live_xml(self.driver, guest.uuid),
                      self.qemu_devices(guest.uuid))

    def reap(self) -> None:
        """Destroy the running test's guests in the background."""
        self.destroys += [self.reaper.submit(self._destroy, uuid) for uuid in self.pending]
        self.pending.clear()

    def _destroy(self, uuid: str) -> float:
        started = time.perf_counter()
        self.driver.destroy(uuid)
        return time.perf_counter() - started

    def qemu_devices(self, uuid: str) -> list[dict[str, object]]:
        """The -device arguments QEMU was started with (from its log, newest start)."""
        import json

        log = (self.root / "log" / "qemu" / f"instance-{uuid}.log").read_text()
        return [json.loads(arg) for arg in DEVICE_ARG.findall(log)]

    def defined(self, uuid: str) -> bool:
        """Whether libvirt has a domain for ``uuid`` (asked for that one only: listing
        every domain would wait for the ones being destroyed in the background)."""
        try:
            spawn.live_xml(self.driver, uuid)
        except LookupError:
            return False
        return True


@dataclass
class Booted:
    guest: Guest
    live: etree._Element
    devices: list[dict[str, object]]

    def one(self, xpath: str) -> str:
        found = self.live.xpath(xpath)
        assert isinstance(found, list) and len(found) == 1, f"{xpath}: {found}"
        return str(found[0])

    def drivers(self) -> list[str]:
        return [str(d["driver"]) for d in self.devices]


def _small(guest: Guest) -> Guest:
    """The same guest with a flavor TCG starts fast: 1 vCPU, 128 MiB."""
    from dataclasses import replace

    return replace(guest, flavor=replace(guest.flavor, vcpus=1, memory_mb=128))


@pytest.fixture(scope="module")
def guest_lab(libvirt_embed_uri: str, tmp_path_factory: pytest.TempPathFactory,
        request: pytest.FixtureRequest) -> Iterator[Lab]:
    instances = tmp_path_factory.mktemp("instances")
    conf = load_config(overrides=[
        ("libvirt", "virt_type", "qemu"),
        ("libvirt", "connection_uri", libvirt_embed_uri),
        ("DEFAULT", "host", NODE),
        ("DEFAULT", "instances_path", str(instances)),
    ])
    driver = LibvirtDriver(conf)
    driver.init_host()
    root = Path(parse_qs(urlparse(libvirt_embed_uri).query)["root"][0])
    before = set(driver.guests())
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="destroy") as reaper:
        lab = Lab(driver, root, reaper)
        yield lab
        lab.reap()
        destroy_times = [future.result() for future in lab.destroys]  # re-raises failures
    assert set(driver.guests()) == before, "guests left behind"
    assert list(instances.iterdir()) == [], "instance directories left behind"
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin(
        "capturemanager")
    if reporter is not None and capture is not None and lab.starts:
        with capture.global_and_fixture_disabled():
            reporter.write_line(
                f"\nlibvirt TCG guests: {len(lab.starts)} spawns (checks + define + start), "
                f"median {statistics.median(lab.starts):.2f} s, max {max(lab.starts):.2f} s; "
                f"{len(destroy_times)} destroys, median "
                f"{statistics.median(destroy_times or [0]):.2f} s (in the background)")


@pytest.fixture
def lab(guest_lab: Lab) -> Iterator[Lab]:
    yield guest_lab
    guest_lab.reap()


# -- device models: what runs is what was chosen ------------------------------------------

@pytest.mark.parametrize("model", sorted(NIC_DEVICES))
def test_nic_models_run(lab: Lab, model: str) -> None:
    booted = lab.boot({"hw_vif_model": model})
    assert booted.one("/domain/devices/interface/model/@type") == model
    assert booted.one("/domain/devices/interface/@type") == "user"
    assert NIC_DEVICES[model] in booted.drivers()


@pytest.mark.parametrize("model", sorted(VIDEO_DEVICES))
def test_video_models_run(lab: Lab, model: str) -> None:
    booted = lab.boot({"hw_video_model": model})
    assert booted.one("/domain/devices/video/model/@type") == model
    qemu_video = [d for d in booted.devices if d.get("id") == "video0"]
    expected = VIDEO_DEVICES[model]
    assert [d["driver"] for d in qemu_video] == ([expected] if expected else [])


@pytest.mark.parametrize(("bus", "machine"), [
    ("virtio", "pc"), ("ide", "pc"), ("sata", "pc"), ("scsi", "pc"), ("usb", "pc"),
    ("sata", "q35"),
])
def test_disk_buses_run(lab: Lab, bus: str, machine: str) -> None:
    booted = lab.boot({"hw_disk_bus": bus, "hw_machine_type": machine})
    assert booted.one("/domain/devices/disk[@device='disk']/target/@bus") == bus
    assert booted.one("/domain/os/type/@machine").startswith(
        "pc-q35-" if machine == "q35" else "pc-i440fx-")
    disk = [d for d in booted.devices if d.get("drive") == "libvirt-1-format"]
    assert [d["driver"] for d in disk] == [DISK_DEVICES[bus]]


def test_the_default_guest_runs_upstreams_defaults(lab: Lab) -> None:
    booted = lab.boot()
    assert booted.one("/domain/@type") == "qemu"
    assert booted.one("/domain/devices/disk/target/@bus") == "virtio"
    assert booted.one("/domain/devices/interface/model/@type") == "virtio"
    assert booted.one("/domain/devices/video/model/@type") == "virtio"
    assert booted.one("/domain/os/type/@machine").startswith("pc-i440fx-")
    # a running domain has an id, and its devices QEMU aliases
    assert int(booted.one("/domain/@id")) > 0
    assert booted.one("/domain/devices/interface/alias/@name") == "net0"


@pytest.mark.parametrize(("machine", "bus"), [("pc", "ide"), ("q35", "sata")])
def test_an_iso_boots_from_the_machine_types_cdrom_bus(lab: Lab, machine: str,
                                                       bus: str) -> None:
    booted = lab.boot({"hw_machine_type": machine}, disk_format="iso")
    assert booted.one("/domain/devices/disk[@device='cdrom']/target/@bus") == bus
    assert "ide-cd" in booted.drivers()


def test_q35_with_ide_is_refused_before_libvirt(lab: Lab) -> None:
    guest = _small(builders.guest(NODE, "qcow2", {"hw_machine_type": "q35",
                                                  "hw_disk_bus": "ide"}))
    with pytest.raises(UnsupportedHardware) as refused:
        lab.driver.spawn(guest)
    assert refused.value.feature == ot.COMPUTE_STORAGE_BUS_IDE
    assert "pc-q35-" in refused.value.reason
    assert not lab.defined(guest.uuid)
    assert not (Path(lab.driver.conf.instances_path) / guest.uuid).exists()
    assert not (lab.root / "log" / "qemu" / f"instance-{guest.uuid}.log").exists()


# -- traits and properties that switch features on --------------------------------------------

def test_a_tpm_from_the_image(lab: Lab) -> None:
    booted = lab.boot({"hw_machine_type": "q35", "hw_tpm_model": "tpm-crb"})
    assert booted.one("/domain/devices/tpm/@model") == "tpm-crb"
    assert booted.one("/domain/devices/tpm/backend/@type") == "emulator"
    assert booted.one("/domain/devices/tpm/backend/@version") == "2.0"
    assert "tpm-crb" in booted.drivers()


def test_a_tpm_from_a_flavor_trait(lab: Lab) -> None:
    booted = lab.boot(extra_specs={f"trait:{ot.COMPUTE_SECURITY_TPM_1_2}": "required"})
    assert booted.one("/domain/devices/tpm/@model") == "tpm-tis"
    assert booted.one("/domain/devices/tpm/backend/@version") == "1.2"
    assert "tpm-tis" in booted.drivers()


def test_packed_virtqueues_from_a_flavor_trait(lab: Lab) -> None:
    booted = lab.boot(extra_specs={f"trait:{ot.COMPUTE_NET_VIRTIO_PACKED}": "required"})
    assert booted.one("/domain/devices/interface/driver/@packed") == "on"
    nic = [d for d in booted.devices if d.get("driver") == "virtio-net-pci"]
    assert len(nic) == 1 and nic[0].get("packed") is True


@pytest.mark.parametrize(("prop", "value", "qemu_device"), [
    ("hw_sound_model", "ich9", "ich9-intel-hda"),
    ("hw_sound_model", "usb", "usb-audio"),
    ("hw_viommu_model", "virtio", "virtio-iommu"),  # libvirt uses the PCI alias
])
def test_sound_and_viommu_models_reach_qemu_on_q35(lab: Lab, prop: str, value: str,
                                                   qemu_device: str) -> None:
    booted = lab.boot({prop: value, "hw_machine_type": "q35"})
    element = "sound" if prop == "hw_sound_model" else "iommu"
    assert booted.one(f"/domain/devices/{element}/@model") == value
    assert qemu_device in booted.drivers()


def test_a_viommu_trait_switches_the_device_on(lab: Lab) -> None:
    booted = lab.boot({"hw_machine_type": "q35"},
                      extra_specs={f"trait:{ot.COMPUTE_VIOMMU_MODEL_INTEL}": "required"})
    assert booted.one("/domain/devices/iommu/@model") == "intel"


def test_hpet_runs_on_x86(lab: Lab) -> None:
    booted = lab.boot({"hw_time_hpet": "true"})
    assert booted.one("/domain/clock/timer[@name='hpet']/@present") == "yes"
    log = (lab.root / "log" / "qemu" / f"instance-{booted.guest.uuid}.log").read_text()
    assert "-no-hpet" not in log and "hpet=off" not in log


def test_a_cpu_trait_becomes_a_cpu_feature_of_the_running_guest(lab: Lab) -> None:
    booted = lab.boot(extra_specs={f"trait:{ot.HW_CPU_X86_AVX2}": "required"})
    assert booted.one("/domain/cpu/feature[@name='avx2']/@policy") == "require"


def test_a_cpu_feature_tcg_lacks_is_refused_before_libvirt(lab: Lab) -> None:
    guest = _small(builders.guest(NODE, "qcow2", {f"trait:{ot.HW_CPU_X86_AVX512F}": "required"}))
    with pytest.raises(UnsupportedHardware) as refused:
        lab.driver.spawn(guest)
    assert refused.value.feature == ot.HW_CPU_X86_AVX512F
    assert not lab.defined(guest.uuid)
    assert not (lab.root / "log" / "qemu" / f"instance-{guest.uuid}.log").exists()


def test_secure_boot_from_a_trait(lab: Lab) -> None:
    booted = lab.boot({"hw_machine_type": "q35"},
                      extra_specs={f"trait:{ot.COMPUTE_SECURITY_UEFI_SECURE_BOOT}": "required"})
    assert booted.one("/domain/os/loader/@secure") == "yes"
    assert booted.one("/domain/os/loader/@type") == "pflash"
    assert booted.one("/domain/os/firmware/feature[@name='secure-boot']/@enabled") == "yes"
    # QEMU got secure flash and SMM, what secure boot rests on
    log = (lab.root / "log" / "qemu" / f"instance-{booted.guest.uuid}.log").read_text()
    assert "-global driver=cfi.pflash01,property=secure,value=on" in log
    assert ",smm=on," in log


def test_secure_boot_on_pc_is_refused(lab: Lab) -> None:
    guest = _small(builders.guest(NODE, "qcow2", {"os_secure_boot": "required"}))
    with pytest.raises(UnsupportedHardware) as refused:
        lab.driver.spawn(guest)
    assert refused.value.feature == ot.COMPUTE_SECURITY_UEFI_SECURE_BOOT


# -- lifecycle --------------------------------------------------------------------------------

def test_guests_lists_moorages_domains_only(lab: Lab) -> None:
    booted = lab.boot()
    assert booted.guest.uuid in lab.driver.guests()
    conn = host.connect(lab.driver.uri)
    other = conn.defineXML(
        "<domain type='qemu'><name>not-moorage</name><memory unit='MiB'>64</memory>"
        "<os><type arch='x86_64'>hvm</type></os></domain>")
    try:
        assert other.UUIDString() not in lab.driver.guests()
    finally:
        other.undefine()


def test_destroy_removes_the_guest_and_is_idempotent(lab: Lab) -> None:
    guest = _small(builders.guest(NODE, "qcow2"))
    lab.driver.spawn(guest)
    directory = Path(lab.driver.conf.instances_path) / guest.uuid
    assert (directory / "disk").exists()
    lab.driver.destroy(guest.uuid)
    assert not lab.defined(guest.uuid)
    assert guest.uuid not in lab.driver.guests()
    assert not directory.exists()
    lab.driver.destroy(guest.uuid)  # nothing left: nothing to do


def test_a_guest_qemu_refuses_is_undone(lab: Lab) -> None:
    # buslogic is a valid libvirt SCSI model that this QEMU does not have
    guest = _small(builders.guest(NODE, "qcow2", {"hw_disk_bus": "scsi",
                                                  "hw_scsi_model": "buslogic"}))
    with pytest.raises(spawn.SpawnFailed, match="buslogic"):
        lab.driver.spawn(guest)
    assert not lab.defined(guest.uuid)
    assert not (Path(lab.driver.conf.instances_path) / guest.uuid).exists()
