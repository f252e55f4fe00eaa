"""Format inspection of uploaded image data: is it the disk format the image declares,
and is it safe to hand to qemu?

Why: qemu follows what a disk image's header says. A qcow2 whose header names a
backing file or an external data file (CVE-2024-32498), or a VMDK whose descriptor
names other extent files, makes the host read a file of the uploader's choosing when
the image is booted. Glance's format_inspector refuses them at upload; so does this.

The rules, glance's:
- the data's detected format must be the declared ``disk_format``; ``raw`` is what
  no other format's signature matches; ``ami``, ``ari`` and ``aki`` are raw data;
  formats without an inspector here (``ploop``) are not checked;
- qcow2: version 2 or 3, no backing file, no external data file (incompatible
  feature bit 2), no incompatible feature this inspector does not know;
- vmdk: a sparse extent (``KDMV``) whose descriptor's createType is monolithicSparse
  or streamOptimized, with exactly one extent.

Everything here reads bytes through ``read(offset, length)`` and returns values; the
caller (``moorage.image.filestore``) opens the file.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass

# read(offset, length) -> at most length bytes from offset (fewer at the end).
Reader = Callable[[int, int], bytes]

QCOW2_MAGIC = b"QFI\xfb"
VMDK_MAGIC = b"KDMV"
VHDX_MAGIC = b"vhdxfile"
VHD_COOKIE = b"conectix"
VDI_MAGIC = 0xBEDA107F
VDI_MAGIC_OFFSET = 0x40
LUKS_MAGIC = b"LUKS\xba\xbe"
ISO_MAGIC = b"CD001"
# The primary volume descriptor: sector 16 of 2048 bytes, its identifier at byte 1.
ISO_MAGIC_OFFSET = 16 * 2048 + 1
SECTOR = 512

# qcow2 incompatible feature bits (qemu's docs/interop/qcow2.txt).
QCOW2_DIRTY = 1 << 0
QCOW2_CORRUPT = 1 << 1
QCOW2_EXTERNAL_DATA_FILE = 1 << 2
QCOW2_COMPRESSION_TYPE = 1 << 3
QCOW2_EXTENDED_L2 = 1 << 4
QCOW2_KNOWN_INCOMPATIBLE = (QCOW2_DIRTY | QCOW2_CORRUPT | QCOW2_EXTERNAL_DATA_FILE
                            | QCOW2_COMPRESSION_TYPE | QCOW2_EXTENDED_L2)

VMDK_CREATE_TYPES = ("monolithicSparse", "streamOptimized")
# A descriptor larger than this is not a descriptor.
VMDK_DESCRIPTOR_LIMIT = 1 << 20

# Declared formats whose data is raw bytes to the inspector.
RAW_LIKE = frozenset({"raw", "ami", "ari", "aki"})
# Declared formats this module knows the signature of.
INSPECTED = frozenset({"qcow2", "vmdk", "vhd", "vhdx", "vdi", "iso"}) | RAW_LIKE


@dataclass(frozen=True)
class Inspection:
    """What the data is: its detected format, the virtual size the header gives (None
    when this inspector does not read it), and the reason it is unsafe (None: safe)."""

    format: str
    virtual_size: int | None = None
    unsafe: str | None = None


class FormatRefused(ValueError):
    """Data that is not the declared format, or not safe to boot: the message says
    which, for a 400."""


def _u32be(data: bytes, offset: int) -> int:
    return int(struct.unpack_from(">I", data, offset)[0])


def _u64be(data: bytes, offset: int) -> int:
    return int(struct.unpack_from(">Q", data, offset)[0])


def _u32le(data: bytes, offset: int) -> int:
    return int(struct.unpack_from("<I", data, offset)[0])


def _u64le(data: bytes, offset: int) -> int:
    return int(struct.unpack_from("<Q", data, offset)[0])


def inspect_qcow2(header: bytes) -> Inspection:
    """A qcow2 header (its first 104 bytes at least): version, virtual size, and why it
    is unsafe (a backing file, an external data file, an unknown feature)."""
    if len(header) < 72:
        return Inspection("qcow2", unsafe="the qcow2 header is truncated")
    version = _u32be(header, 4)
    virtual_size = _u64be(header, 24)
    if version not in (2, 3):
        return Inspection("qcow2", virtual_size, f"qcow2 version {version} is not 2 or 3")
    if _u64be(header, 8) != 0:
        return Inspection("qcow2", virtual_size, "the qcow2 image has a backing file")
    if version == 3:
        if len(header) < 80:
            return Inspection("qcow2", virtual_size, "the qcow2 header is truncated")
        incompatible = _u64be(header, 72)
        if incompatible & QCOW2_EXTERNAL_DATA_FILE:
            return Inspection("qcow2", virtual_size,
                              "the qcow2 image has an external data file")
        unknown = incompatible & ~QCOW2_KNOWN_INCOMPATIBLE
        if unknown:
            return Inspection("qcow2", virtual_size,
                              f"the qcow2 image has unknown incompatible features {unknown:#x}")
    return Inspection("qcow2", virtual_size)


_CREATE_TYPE = re.compile(r'^\s*createType\s*=\s*"([^"]*)"', re.MULTILINE)
# RW 2048 SPARSE "disk.vmdk" (access, sectors, type, file; type ZERO has no file).
_EXTENT = re.compile(r'^\s*(RW|RDONLY|NOACCESS)\s+\d+\s+\w+', re.MULTILINE)


def inspect_vmdk_descriptor(descriptor: str) -> str | None:
    """Why a VMDK descriptor is unsafe (None: safe): a create type other than a
    single-file one, or other than one extent."""
    found = _CREATE_TYPE.search(descriptor)
    if found is None:
        return "the vmdk descriptor has no createType"
    if found[1] not in VMDK_CREATE_TYPES:
        return (f"the vmdk createType {found[1]!r} is not allowed; allowed: "
                f"{', '.join(VMDK_CREATE_TYPES)}")
    extents = len(_EXTENT.findall(descriptor))
    if extents != 1:
        return f"the vmdk descriptor names {extents} extents; one is allowed"
    return None


def inspect_vmdk(read: Reader) -> Inspection:
    """A sparse VMDK extent: its capacity and its embedded descriptor."""
    header = read(0, SECTOR)
    if len(header) < 44:
        return Inspection("vmdk", unsafe="the vmdk header is truncated")
    capacity = _u64le(header, 12) * SECTOR
    offset, size = _u64le(header, 28) * SECTOR, _u64le(header, 36) * SECTOR
    if offset == 0 or size == 0 or size > VMDK_DESCRIPTOR_LIMIT:
        return Inspection("vmdk", capacity, "the vmdk image has no embedded descriptor")
    descriptor = read(offset, size).split(b"\x00", 1)[0].decode("ascii", "replace")
    return Inspection("vmdk", capacity, inspect_vmdk_descriptor(descriptor))


def detect(read: Reader, size: int) -> Inspection:
    """The format of ``size`` bytes read by ``read``, with its virtual size and safety."""
    head = read(0, 512)
    if head.startswith(QCOW2_MAGIC):
        return inspect_qcow2(read(0, 112))
    if head.startswith(VMDK_MAGIC):
        return inspect_vmdk(read)
    if head.startswith(VHDX_MAGIC):
        return Inspection("vhdx")
    if head.startswith(LUKS_MAGIC):
        return Inspection("luks")
    if len(head) >= VDI_MAGIC_OFFSET + 4 and _u32le(head, VDI_MAGIC_OFFSET) == VDI_MAGIC:
        return Inspection("vdi")
    # A dynamic VHD starts with a copy of its footer; a fixed one has it at the end only.
    tail = read(size - SECTOR, SECTOR) if size >= SECTOR else b""
    for footer in (head, tail):
        if footer.startswith(VHD_COOKIE) and len(footer) >= 56:
            return Inspection("vhd", _u64be(footer, 48))
    if read(ISO_MAGIC_OFFSET, len(ISO_MAGIC)) == ISO_MAGIC:
        return Inspection("iso", size)
    return Inspection("raw", size)


def check(declared: str, read: Reader, size: int) -> Inspection:
    """The inspection of data uploaded for an image of ``declared`` disk format;
    FormatRefused when it is another format or unsafe."""
    if declared not in INSPECTED:
        return Inspection(declared)
    found = detect(read, size)
    expected = "raw" if declared in RAW_LIKE else declared
    if found.format != expected:
        raise FormatRefused(f"Image data is {found.format}, not the disk_format {declared} "
                            "the image declares.")
    if found.unsafe is not None:
        raise FormatRefused(f"Image data refused: {found.unsafe}.")
    return found
