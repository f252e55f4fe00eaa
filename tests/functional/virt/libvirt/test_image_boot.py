"""Real guests boot their image's data: QEMU/TCG through libvirt, the image downloaded
from an image service over HTTP into the host's image cache.

The image is a 1 MiB disk whose boot sector prints ``MOORAGE-IMAGE-BOOTED`` on the
serial port (``tests.image_standin``); a guest spawned through the driver from it
must print the marker to its console log, which only happens when its root disk
really holds the image's data and SeaBIOS booted it. The image service is
``ImageServiceStandIn``, a real HTTP server answering Glance's two calls; it stands
in for Moorage's own ``/image`` service until that lands (issue 24).

The refusals run through the same spawn: data whose hash is not the record's, a
qcow2 naming a backing file (CVE-2024-32498), a flavor smaller than the image; each
leaves nothing in the cache, no instance directory and no domain. Two spawns of one
image at once download it once.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from moorage.compute import wire
from moorage.conf import load_config
from moorage.model.image import Image
from moorage.virt import image_cache
from moorage.virt.driver import Guest
from moorage.virt.image_cache import ImageDownloadFailed, ImageUnacceptable
from moorage.virt.libvirt.driver import LibvirtDriver
from moorage.virt.libvirt.root_disk import FlavorDiskSmallerThanImage
from tests.image_standin import BOOT_MARKER, ImageServiceStandIn, StoredImage, boot_disk
from tests.unit.virt import builders

NODE = "image-host"
TOKEN = "image-service-token"
BOOT_SECONDS = 60.0


@dataclass
class ImageLab:
    driver: LibvirtDriver
    service: ImageServiceStandIn
    instances: Path
    work: Path
    # Guests the running test spawned (or tried to), destroyed when it ends.
    pending: list[str] = field(default_factory=list)

    def spawn(self, guest: Guest) -> None:
        self.pending.append(guest.uuid)
        self.driver.spawn(guest)

    @property
    def cache(self) -> Path:
        return image_cache.directory(self.driver.conf)

    def add(self, image_id: str, data: bytes, disk_format: str,
            claimed_hash: str | None = None) -> Image:
        self.service.images[image_id] = StoredImage(data, disk_format, claimed_hash)
        return Image.create(image_id, "boot", disk_format, size=len(data))

    def guest(self, image: Image, root_gb: int = 1) -> Guest:
        guest = builders.guest(NODE, image.disk_format)
        return replace(guest, image=image, flavor=replace(
            guest.flavor, vcpus=1, memory_mb=128, root_gb=root_gb))

    def qcow2(self, data: bytes) -> bytes:
        """``data`` as a qcow2 image."""
        raw, out = self.work / "in.raw", self.work / "out.qcow2"
        raw.write_bytes(data)
        subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw),
                        str(out)], check=True)
        return out.read_bytes()

    def created_qcow2(self, *options: str, size: str = "") -> bytes:
        """What ``qemu-img create -f qcow2 OPTIONS FILE SIZE`` makes."""
        out = self.work / "created.qcow2"
        out.unlink(missing_ok=True)
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", *options, str(out),
                        *([size] if size else [])], check=True)
        return out.read_bytes()

    def console(self, guest: Guest) -> bytes:
        path = self.instances / guest.uuid / "console.log"
        return path.read_bytes() if path.exists() else b""

    def wait_for_marker(self, guest: Guest) -> bytes:
        deadline = time.monotonic() + BOOT_SECONDS
        while time.monotonic() < deadline:
            if BOOT_MARKER in (text := self.console(guest)):
                return text
            time.sleep(0.2)
        raise AssertionError(f"{BOOT_MARKER!r} not on the console of {guest.uuid} after "
                             f"{BOOT_SECONDS:.0f} s: {self.console(guest)[-500:]!r}")

    def left_behind(self, guest: Guest) -> list[str]:
        """What a refused spawn must not leave: files in the cache (other than lock
        files), the instance's directory, a domain."""
        found = [p.name for p in self.cache.iterdir() if not p.name.endswith(".lock")] \
            if self.cache.exists() else []
        if (self.instances / guest.uuid).exists():
            found.append(f"instance directory {guest.uuid}")
        if guest.uuid in self.driver.guests():
            found.append(f"domain {guest.uuid}")
        return found


def disk_info(path: Path) -> dict[str, object]:
    done = subprocess.run(["qemu-img", "info", "--output=json", "--force-share", str(path)],
                          check=True, capture_output=True, text=True)
    info = json.loads(done.stdout)
    assert isinstance(info, dict)
    return info


@pytest.fixture(scope="module")
def image_lab(libvirt_embed_uri: str,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[ImageLab]:
    service = ImageServiceStandIn(TOKEN).start()
    instances = tmp_path_factory.mktemp("instances")
    conf = load_config(overrides=[
        ("libvirt", "virt_type", "qemu"),
        ("libvirt", "connection_uri", libvirt_embed_uri),
        ("DEFAULT", "host", NODE),
        ("DEFAULT", "instances_path", str(instances)),
        ("DEFAULT", "service_token", TOKEN),
        ("glance", "api_servers", [service.url]),
    ])
    driver = LibvirtDriver(conf)
    driver.init_host()
    before = set(driver.guests())
    try:
        yield ImageLab(driver, service, instances, tmp_path_factory.mktemp("work"))
    finally:
        service.stop()
    assert set(driver.guests()) == before, "guests left behind"


@pytest.fixture
def lab(image_lab: ImageLab) -> Iterator[ImageLab]:
    try:
        yield image_lab
    finally:
        for uuid in image_lab.pending:
            image_lab.driver.destroy(uuid)
        image_lab.pending.clear()
        image_lab.service.delay = 0.0


def test_a_guest_boots_the_data_of_its_raw_image(lab: ImageLab) -> None:
    image = lab.add("5e1f0000-0000-4000-8000-000000000001", boot_disk(), "raw")
    guest = lab.guest(image, root_gb=1)
    lab.spawn(guest)
    lab.wait_for_marker(guest)
    # the root disk: a qcow2 overlay of the flavor's size over the cached image
    base = lab.cache / image_cache.file_name(image.id)
    root = disk_info(lab.instances / guest.uuid / "disk")
    assert (root["format"], root["virtual-size"]) == ("qcow2", 1 << 30)
    assert root["backing-filename"] == str(base)
    assert root["backing-filename-format"] == "raw"
    assert base.read_bytes() == boot_disk()
    assert lab.service.downloads[image.id] == 1


def test_a_qcow2_image_is_cached_raw_and_a_root_gb_of_0_takes_its_size(
        lab: ImageLab) -> None:
    image = lab.add("5e1f0000-0000-4000-8000-000000000002", lab.qcow2(boot_disk()),
                    "qcow2")
    guest = lab.guest(image, root_gb=0)
    lab.spawn(guest)
    lab.wait_for_marker(guest)
    base = lab.cache / image_cache.file_name(image.id)
    assert disk_info(base)["format"] == "raw"  # [DEFAULT] force_raw_images
    root = disk_info(lab.instances / guest.uuid / "disk")
    assert root["virtual-size"] == len(boot_disk())


def test_two_spawns_of_one_image_at_once_download_it_once(lab: ImageLab) -> None:
    image = lab.add("5e1f0000-0000-4000-8000-000000000003", boot_disk(), "raw")
    guests = [lab.guest(image), lab.guest(image)]
    lab.service.delay = 1.0  # both spawns ask while the first download runs
    errors: list[BaseException] = []

    def spawn(guest: Guest) -> None:
        try:
            lab.driver.spawn(guest)
        except BaseException as exc:
            errors.append(exc)

    lab.pending += [g.uuid for g in guests]
    threads = [threading.Thread(target=spawn, args=(g,)) for g in guests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert lab.service.downloads[image.id] == 1
    for guest in guests:
        lab.wait_for_marker(guest)


def test_data_whose_hash_is_not_the_records_is_refused_and_not_kept(lab: ImageLab) -> None:
    data = boot_disk()
    claimed = hashlib.sha512(data + b"tampered").hexdigest()
    image = lab.add("5e1f0000-0000-4000-8000-000000000004", data, "raw", claimed)
    guest = lab.guest(image)
    before = set(lab.cache.iterdir()) if lab.cache.exists() else set()
    with pytest.raises(ImageDownloadFailed, match=f"sha512 of the data is "
                       f"{hashlib.sha512(data).hexdigest()}, the image's is {claimed}"):
        lab.spawn(guest)
    assert set(lab.cache.iterdir()) - before <= {
        lab.cache / f"{image_cache.file_name(image.id)}.lock"}
    assert (lab.instances / guest.uuid).exists() is False
    assert guest.uuid not in lab.driver.guests()
    # a corrupt transfer is this host's trouble: the build goes to another host
    failure = wire.spawn_failure(NODE, _raised(lab, guest))
    assert (failure.kind, failure.reschedule) == ("ImageDownloadFailed", True)


def test_a_qcow2_with_a_backing_file_is_refused(lab: ImageLab) -> None:
    secret = lab.work / "host-secret"
    secret.write_bytes(b"not for guests" * 100)
    data = lab.created_qcow2("-b", str(secret), "-F", "raw")
    image = lab.add("5e1f0000-0000-4000-8000-000000000005", data, "qcow2")
    guest = lab.guest(image)
    with pytest.raises(ImageUnacceptable, match="a qcow2 image with a backing file is "
                       "refused"):
        lab.spawn(guest)
    assert not (lab.cache / image_cache.file_name(image.id)).exists()
    assert not (lab.cache / f"{image_cache.file_name(image.id)}.part").exists()
    assert (lab.instances / guest.uuid).exists() is False
    failure = wire.spawn_failure(NODE, _raised(lab, guest))
    assert (failure.kind, failure.reschedule) == ("ImageUnacceptable", False)


def test_data_that_is_not_its_disk_format_is_refused(lab: ImageLab) -> None:
    image = lab.add("5e1f0000-0000-4000-8000-000000000006", lab.qcow2(boot_disk()), "raw")
    with pytest.raises(ImageUnacceptable, match="its data is a qcow2 image, not raw"):
        lab.spawn(lab.guest(image))
    assert not (lab.cache / image_cache.file_name(image.id)).exists()


def test_a_flavor_smaller_than_the_image_is_refused(lab: ImageLab) -> None:
    image = lab.add("5e1f0000-0000-4000-8000-000000000007",
                    lab.created_qcow2(size=str(2 << 30)), "qcow2")
    guest = lab.guest(image, root_gb=1)
    with pytest.raises(FlavorDiskSmallerThanImage,
                       match=f"Flavor disk is {1 << 30} bytes, image is {2 << 30} bytes"):
        lab.spawn(guest)
    assert (lab.instances / guest.uuid).exists() is False
    failure = wire.spawn_failure(NODE, _raised(lab, guest))
    assert (failure.kind, failure.reschedule) == ("FlavorDiskSmallerThanImage", False)


def _raised(lab: ImageLab, guest: Guest) -> Exception:
    """The exception spawning ``guest`` raises (again)."""
    try:
        lab.spawn(guest)
    except Exception as exc:
        return exc
    raise AssertionError(f"{guest.uuid} spawned")
