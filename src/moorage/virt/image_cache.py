"""A compute host's image cache: each image's data downloaded once, checked, and kept.

As upstream's ``_base``: the directory ``[image_cache] subdirectory_name`` under
``[DEFAULT] instances_path`` holds one file per image, named by the SHA-1 of its id;
guests' root disks are overlays backed by it (``moorage.virt.libvirt.root_disk``).

Coherence: a file under its final name is whole and was checked. The data is
streamed to ``NAME.part`` while its size and hash are computed; it must be the
size and have the hash the image's record gives (``os_hash_value``, else the MD5
``checksum``); ``qemu_img`` must find it the format its ``disk_format`` says and
referring to no other file; with ``[DEFAULT] force_raw_images`` it is converted to
raw; only then is it renamed to ``NAME`` (atomic within the directory). A refusal
leaves nothing under either name.

One download per image per host: every spawn that needs an image holds its lock
file (``NAME.lock``, ``flock``: threads and processes alike) while it looks for the
file and, when it is not there, downloads it; a second spawn of the same image
waits, then finds the file.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from oslo_config import cfg

from moorage.model.glance import ImageData
from moorage.model.image import Image
from moorage.virt import qemu_img
from moorage.virt.image_service import ImageServiceUnavailable

LOG = logging.getLogger(__name__)

ACTIVE = "active"


class ImageUnacceptable(ValueError):
    """The image's data cannot be booted from, on any host (upstream's wording)."""

    def __init__(self, image_id: str, reason: str) -> None:
        super().__init__(f"Image {image_id} is unacceptable: {reason}")
        self.image_id = image_id
        self.reason = reason


class ImageNotActive(ValueError):
    """The image has no data to boot from yet, or no longer (upstream's wording)."""

    def __init__(self, image_id: str) -> None:
        super().__init__(f"Image {image_id} is not active.")
        self.image_id = image_id


class ImageDownloadFailed(RuntimeError):
    """What arrived is not the image's data (its size or hash differ): this transfer
    went wrong, and another try, or another host, may do better."""


@dataclass(frozen=True)
class CachedImage:
    """An image's data in the cache: the file, its format as qemu-img reads it (raw,
    or the image's own format), and the size of the disk it holds."""

    path: Path
    format: str
    virtual_size: int


class Downloader(Protocol):
    """What the cache reads of the image service (``ImageService``)."""

    def record(self, image_id: str) -> ImageData: ...

    def download(self, image_id: str, write: Callable[[bytes], object],
                 rewind: Callable[[], object]) -> None: ...


def directory(conf: cfg.ConfigOpts) -> Path:
    """The cache: ``[image_cache] subdirectory_name`` under ``[DEFAULT] instances_path``
    (an absolute name is used as is)."""
    return Path(str(conf.instances_path)) / str(conf.image_cache.subdirectory_name)


def file_name(image_id: str) -> str:
    """The cache's name for an image's file (upstream's: the SHA-1 of its id)."""
    return hashlib.sha1(image_id.encode(), usedforsecurity=False).hexdigest()


@dataclass
class Verifier:
    """The size and hash the data must have, and what has arrived so far."""

    size: int
    algorithm: str
    expected: str
    received: int = 0
    _hash: hashlib._Hash | None = field(default=None, repr=False)

    @classmethod
    def of(cls, record: ImageData) -> Verifier:
        """What ``record`` says to check: its multihash when this Python has the
        algorithm, else its MD5 checksum; ImageUnacceptable when it gives neither."""
        assert record.size is not None
        algorithm = (record.os_hash_algo or "").lower()
        if record.os_hash_value and algorithm in hashlib.algorithms_available:
            return cls(record.size, algorithm, record.os_hash_value.lower())
        if record.checksum:
            return cls(record.size, "md5", record.checksum.lower())
        raise ImageUnacceptable(record.id, "its record has neither os_hash_value (with an "
                                "algorithm this host has) nor checksum to check its data "
                                "against")

    def update(self, chunk: bytes) -> None:
        if self._hash is None:
            self._hash = hashlib.new(self.algorithm, usedforsecurity=False)
        self._hash.update(chunk)
        self.received += len(chunk)

    def reset(self) -> None:
        self._hash = None
        self.received = 0

    def problem(self) -> str | None:
        """Why what arrived is not the image's data; None when it is."""
        if self.received != self.size:
            return (f"{self.received} bytes arrived, the image's size is {self.size} "
                    "bytes")
        digest = (self._hash or hashlib.new(self.algorithm, usedforsecurity=False)).hexdigest()
        if digest != self.expected:
            return (f"the {self.algorithm} of the data is {digest}, the image's is "
                    f"{self.expected}")
        return None


def fetch(cache: Path, image: Image, service: Downloader | None, *,
          force_raw: bool) -> CachedImage:
    """The image's data in ``cache``: found there, or downloaded (once per host) and
    checked first. ImageNotFound, ImageNotActive, ImageUnacceptable,
    ImageDownloadFailed, ImageServiceUnavailable or QemuImgError say why not."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / file_name(image.id)
    with _locked(cache / f"{path.name}.lock"):
        if path.exists():
            return _cached(path, image)
        if service is None:
            raise ImageServiceUnavailable(
                f"image {image.id} has data and this host knows no image service to "
                "download it from: set [glance] api_servers or [compute_agent] api_url")
        return _download(path, image, service, force_raw)


def check(path: Path, image_id: str, disk_format: str) -> qemu_img.ImageInfo:
    """What the downloaded file at ``path`` is, when it is an acceptable image of
    ``disk_format``; ImageUnacceptable naming what is wrong. Its header is read
    before qemu-img opens it (``qemu_img``'s docstring says why)."""
    problem = qemu_img.header_problem(qemu_img.read_header(path), disk_format)
    if problem is not None:
        raise ImageUnacceptable(image_id, problem)
    try:
        info = qemu_img.info(path)
    except qemu_img.QemuImgError as exc:
        raise ImageUnacceptable(image_id, f"qemu-img cannot read it: {exc}") from None
    problem = qemu_img.problems(info, disk_format)
    if problem is not None:
        raise ImageUnacceptable(image_id, problem)
    return info


def _cached(path: Path, image: Image) -> CachedImage:
    """A file the cache holds: checked when it was stored, read again for its format
    and size (and refused should it refer to another file after all)."""
    info = qemu_img.info(path)
    if info.backing_file or info.data_file:
        raise ImageUnacceptable(image.id, f"the cached {path} refers to another file")
    return CachedImage(path, info.format, info.virtual_size)


def _download(path: Path, image: Image, service: Downloader,
              force_raw: bool) -> CachedImage:
    record = service.record(image.id)
    if record.status != ACTIVE:
        raise ImageNotActive(image.id)
    if record.size is None:
        raise ImageUnacceptable(image.id, "it has no data")
    disk_format = record.disk_format or image.disk_format
    if disk_format != image.disk_format:
        raise ImageUnacceptable(image.id, f"its disk_format is {disk_format} at the image "
                                f"service, {image.disk_format} in the build")
    verifier = Verifier.of(record)
    part = path.with_name(f"{path.name}.part")
    converted = path.with_name(f"{path.name}.converted")
    started = time.perf_counter()
    try:
        with part.open("wb") as out:
            def write(chunk: bytes) -> None:
                out.write(chunk)
                verifier.update(chunk)

            def rewind() -> None:
                out.seek(0)
                out.truncate()
                verifier.reset()

            service.download(image.id, write, rewind)
            out.flush()
            os.fsync(out.fileno())
        mismatch = verifier.problem()
        if mismatch is not None:
            raise ImageDownloadFailed(f"Corrupt image download of image {image.id}: "
                                      f"{mismatch}")
        info = check(part, image.id, disk_format)
        if force_raw and info.format != "raw":
            qemu_img.convert(part, info.format, converted, "raw")
            os.replace(converted, path)
            cached = CachedImage(path, "raw", info.virtual_size)
        else:
            os.replace(part, path)
            cached = CachedImage(path, info.format, info.virtual_size)
    finally:
        part.unlink(missing_ok=True)
        converted.unlink(missing_ok=True)
    LOG.info("image %s: %d bytes downloaded and checked (%s) in %.2f s, cached as %s (%s)",
             image.id, record.size, verifier.algorithm, time.perf_counter() - started,
             path, cached.format)
    return cached


@contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Hold the image's lock file (an exclusive ``flock``): other threads of this
    process, and other processes, wait for it."""
    with lock_path.open("a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
