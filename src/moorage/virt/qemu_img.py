"""What an image file really is, and the disks made from it, through ``qemu-img``.

Why the checks: an image's data comes from users. A qcow2 file may name a backing
file or an external data file, that is any file of the host (``/etc/shadow``), which
QEMU would open for the guest (CVE-2024-32498); a VMDK descriptor names its extents
the same way; and data uploaded as ``raw`` but made like a qcow2 would be read as
one by anything that probes its format. So a downloaded file is accepted only when
its format is the one its image's ``disk_format`` says and it refers to no other
file. The header is read in Python first (``header_problem``), so that a qcow2
naming another file is refused before ``qemu-img`` opens it at all; then
``qemu-img info`` (which never opens a backing file) says the format, the virtual
size and any reference ``problems`` refuses.
"""

from __future__ import annotations

import json
import struct
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# disk_format (Glance's) -> the format qemu-img reports for such data.
QEMU_FORMATS: Mapping[str, str] = {
    "raw": "raw", "qcow2": "qcow2", "iso": "raw", "ami": "raw", "ari": "raw", "aki": "raw",
    "vmdk": "vmdk", "vdi": "vdi", "vhd": "vpc", "vhdx": "vhdx", "ploop": "parallels",
}
# The VMDK kinds that are one file (upstream's [compute] vmdk_allowed_types).
VMDK_ONE_FILE = frozenset({"streamOptimized", "monolithicSparse"})

QCOW2_MAGIC = b"QFI\xfb"
VMDK_DESCRIPTOR = b"# Disk DescriptorFile"
# qcow2 v3 incompatible feature bit 2: the guest's data lives in an external file.
QCOW2_EXTERNAL_DATA = 1 << 2
# Enough of a file's start for the headers read here.
HEADER_BYTES = 512


class QemuImgError(RuntimeError):
    """qemu-img failed; the message is its own, on one line."""


@dataclass(frozen=True)
class ImageInfo:
    """What ``qemu-img info`` says of a file."""

    format: str
    virtual_size: int
    backing_file: str | None = None
    data_file: str | None = None
    vmdk_create_type: str | None = None


def parse_info(text: str) -> ImageInfo:
    """The ImageInfo of ``qemu-img info --output=json``'s answer; ValueError when it
    is not one."""
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("format"), str) \
            or not isinstance(data.get("virtual-size"), int):
        raise ValueError(f"not qemu-img info's JSON: {text[:200]!r}")
    specific = data.get("format-specific") or {}
    details = (specific.get("data") or {}) if isinstance(specific, dict) else {}
    backing = data.get("backing-filename") or data.get("full-backing-filename")
    return ImageInfo(data["format"], data["virtual-size"],
                     str(backing) if backing else None,
                     str(details["data-file"]) if details.get("data-file") else None,
                     str(details["create-type"]) if details.get("create-type") else None)


def header_problem(head: bytes, disk_format: str) -> str | None:
    """Why the file starting with ``head`` cannot be an image of ``disk_format``, from
    its header alone; None when nothing there is wrong."""
    if head.startswith(QCOW2_MAGIC):
        if disk_format != "qcow2":
            return f"its data is a qcow2 image, not {disk_format}"
        version, = struct.unpack(">I", head[4:8])
        backing_offset, = struct.unpack(">Q", head[8:16])
        if backing_offset:
            return "a qcow2 image with a backing file is refused"
        if version >= 3 and len(head) >= 80:
            incompatible, = struct.unpack(">Q", head[72:80])
            if incompatible & QCOW2_EXTERNAL_DATA:
                return "a qcow2 image with an external data file is refused"
    elif disk_format == "qcow2":
        return "its data is not a qcow2 image"
    if head.startswith(VMDK_DESCRIPTOR):
        return "a VMDK descriptor file (naming its extents as other files) is refused"
    return None


def problems(info: ImageInfo, disk_format: str) -> str | None:
    """Why a file ``qemu-img info`` describes as ``info`` cannot be an image of
    ``disk_format``; None when it can."""
    expected = QEMU_FORMATS.get(disk_format)
    if expected is None:
        return f"disk_format {disk_format} cannot be booted from on this host"
    if info.format != expected:
        return f"its data is {info.format}, not {disk_format} ({expected})"
    if info.backing_file:
        return f"a {info.format} image with a backing file ({info.backing_file}) is refused"
    if info.data_file:
        return f"a {info.format} image with an external data file is refused"
    if info.format == "vmdk" and info.vmdk_create_type not in VMDK_ONE_FILE:
        return (f"a VMDK of type {info.vmdk_create_type} is refused; allowed: "
                + ", ".join(sorted(VMDK_ONE_FILE)))
    return None


def read_header(path: Path) -> bytes:
    with path.open("rb") as file:
        return file.read(HEADER_BYTES)


def info(path: Path, fmt: str | None = None) -> ImageInfo:
    """``qemu-img info`` of ``path`` (in format ``fmt``, else as qemu-img probes it).
    Never opens a backing file; ``--force-share`` reads a base guests have open."""
    return parse_info(_run("info", "--output=json", "--force-share",
                           *(["-f", fmt] if fmt else []), str(path)))


def convert(source: Path, source_format: str, target: Path, target_format: str) -> None:
    """A copy of ``source`` in ``target_format`` (sparse where the format allows)."""
    _run("convert", "-f", source_format, "-O", target_format, str(source), str(target))


def create_overlay(path: Path, base: Path, base_format: str, size: int) -> None:
    """A qcow2 file of ``size`` bytes backed by ``base`` (which it never writes)."""
    _run("create", "-q", "-f", "qcow2", "-b", str(base), "-F", base_format, str(path),
         str(size))


def create_empty(path: Path, fmt: str, size: str) -> None:
    _run("create", "-q", "-f", fmt, str(path), size)


def resize(path: Path, fmt: str, size: int) -> None:
    _run("resize", "-q", "-f", fmt, str(path), str(size))


def _run(*args: str) -> str:
    try:
        done = subprocess.run(["qemu-img", *args], check=True, capture_output=True,
                              text=True)
    except subprocess.CalledProcessError as exc:
        raise QemuImgError(f"qemu-img {args[0]}: "
                           + " ".join((exc.stderr or str(exc)).split())) from None
    except FileNotFoundError:
        raise QemuImgError("qemu-img is not installed (Debian: qemu-utils)") from None
    return done.stdout
