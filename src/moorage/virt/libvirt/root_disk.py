"""A guest's root disk: over its image's data in the host's image cache, or empty.

With data (``image_cache.CachedImage``), a qcow2 root disk is an overlay backed by
the cached file, which no guest writes (upstream's default, ``[libvirt]
images_type = default`` or ``qcow2``); a raw one (``raw``, ``flat``) is a copy of it;
an ISO's CD-ROM is a copy. The disk is the flavor's ``root_gb``, or the image's
virtual size when that is 0, and never smaller than the image: such a flavor is
refused (``FlavorDiskSmallerThanImage``, upstream's wording).

An image without data (metadata only: its record has no ``size``) gets an empty
disk of the flavor's size (sparse, so it costs nothing until written), as every
guest did before images had data; it boots to "no bootable device".
"""

from __future__ import annotations

from pathlib import Path

from moorage.virt import qemu_img
from moorage.virt.image_cache import CachedImage
from moorage.virt.libvirt.guest import Disk

GIB = 1 << 30
# The empty root disk of a flavor without one (root_gb 0).
DEFAULT_ROOT_GB = 1
CDROM_SIZE = "1M"


class FlavorDiskSmallerThanImage(ValueError):
    """The flavor's root disk cannot hold the image: the same on every host."""

    def __init__(self, flavor_size: int, image_size: int) -> None:
        super().__init__(f"Flavor's disk is too small for requested image. Flavor disk is "
                         f"{flavor_size} bytes, image is {image_size} bytes.")
        self.flavor_size = flavor_size
        self.image_size = image_size


def size(root_gb: int, virtual_size: int) -> int:
    """Bytes of a root disk over an image of ``virtual_size`` bytes: the flavor's
    ``root_gb``, or the image's size when that is 0; FlavorDiskSmallerThanImage when
    the flavor's is smaller."""
    if root_gb == 0:
        return virtual_size
    wanted = root_gb * GIB
    if wanted < virtual_size:
        raise FlavorDiskSmallerThanImage(wanted, virtual_size)
    return wanted


def create(root: Disk, root_gb: int, base: CachedImage | None) -> None:
    """The root disk at ``root.path``, over ``base`` or (None) empty."""
    path = Path(root.path)
    if base is None:
        qemu_img.create_empty(path, root.format, CDROM_SIZE if root.device == "cdrom"
                              else f"{root_gb or DEFAULT_ROOT_GB}G")
        return
    if root.device == "cdrom":
        qemu_img.convert(base.path, base.format, path, root.format)
        return
    wanted = size(root_gb, base.virtual_size)
    if root.format == "qcow2":
        qemu_img.create_overlay(path, base.path, base.format, wanted)
        return
    qemu_img.convert(base.path, base.format, path, root.format)
    if wanted > base.virtual_size:
        qemu_img.resize(path, root.format, wanted)
