"""What a downloaded image file may be: its header read in Python, then qemu-img's word.

Table-driven: each case is a header (or qemu-img's JSON) and the refusal it must
get, or None. The headers are the real layouts (qcow2's big-endian fields at their
offsets), built here so that no file is needed.
"""

from __future__ import annotations

import json
import struct

import pytest

from moorage.virt import qemu_img
from moorage.virt.qemu_img import ImageInfo


def qcow2_header(version: int = 3, backing_offset: int = 0, incompatible: int = 0) -> bytes:
    head = qemu_img.QCOW2_MAGIC + struct.pack(">IQ", version, backing_offset)
    return head.ljust(72, b"\0") + struct.pack(">Q", incompatible) + b"\0" * 40


BOOT_SECTOR = b"\xfa\x31\xc0".ljust(510, b"\0") + b"\x55\xaa"


@pytest.mark.parametrize(("head", "disk_format", "problem"), [
    (qcow2_header(), "qcow2", None),
    (qcow2_header(version=2), "qcow2", None),
    (BOOT_SECTOR, "raw", None),
    (BOOT_SECTOR, "iso", None),
    (qcow2_header(backing_offset=512), "qcow2", "a qcow2 image with a backing file is refused"),
    (qcow2_header(incompatible=qemu_img.QCOW2_EXTERNAL_DATA), "qcow2",
     "a qcow2 image with an external data file is refused"),
    # bit 0 (dirty) is not the data-file bit
    (qcow2_header(incompatible=1), "qcow2", None),
    (qcow2_header(), "raw", "its data is a qcow2 image, not raw"),
    (BOOT_SECTOR, "qcow2", "its data is not a qcow2 image"),
    (b"# Disk DescriptorFile\nversion=1\nRW 2048 FLAT \"/etc/shadow\" 0\n", "vmdk",
     "a VMDK descriptor file (naming its extents as other files) is refused"),
])
def test_the_header_alone(head: bytes, disk_format: str, problem: str | None) -> None:
    assert qemu_img.header_problem(head, disk_format) == problem


def info_json(fmt: str, **extra: object) -> str:
    return json.dumps({"filename": "x", "format": fmt, "virtual-size": 1 << 20,
                       "actual-size": 4096, "dirty-flag": False, **extra})


def test_qemu_img_infos_fields() -> None:
    text = info_json("qcow2", **{"backing-filename": "/etc/shadow",
                                 "format-specific": {"type": "qcow2",
                                                     "data": {"data-file": "/dev/sda"}}})
    assert qemu_img.parse_info(text) == ImageInfo("qcow2", 1 << 20, "/etc/shadow", "/dev/sda")
    vmdk = info_json("vmdk", **{"format-specific": {"type": "vmdk", "data": {
        "create-type": "monolithicFlat"}}})
    assert qemu_img.parse_info(vmdk).vmdk_create_type == "monolithicFlat"
    with pytest.raises(ValueError, match="not qemu-img info's JSON"):
        qemu_img.parse_info('{"format": "raw"}')


@pytest.mark.parametrize(("info", "disk_format", "problem"), [
    (ImageInfo("raw", 1), "raw", None),
    (ImageInfo("raw", 1), "iso", None),
    (ImageInfo("qcow2", 1), "qcow2", None),
    (ImageInfo("vpc", 1), "vhd", None),
    (ImageInfo("vmdk", 1, vmdk_create_type="streamOptimized"), "vmdk", None),
    (ImageInfo("qcow2", 1), "raw", "its data is qcow2, not raw (raw)"),
    (ImageInfo("raw", 1), "vmdk", "its data is raw, not vmdk (vmdk)"),
    (ImageInfo("qcow2", 1, backing_file="/etc/shadow"), "qcow2",
     "a qcow2 image with a backing file (/etc/shadow) is refused"),
    (ImageInfo("qcow2", 1, data_file="/dev/sda"), "qcow2",
     "a qcow2 image with an external data file is refused"),
    (ImageInfo("vmdk", 1, vmdk_create_type="monolithicFlat"), "vmdk",
     "a VMDK of type monolithicFlat is refused; allowed: monolithicSparse, "
     "streamOptimized"),
])
def test_what_qemu_img_says(info: ImageInfo, disk_format: str, problem: str | None) -> None:
    assert qemu_img.problems(info, disk_format) == problem


def test_every_glance_disk_format_has_a_qemu_format() -> None:
    from moorage.model.image import DISK_FORMATS

    assert set(qemu_img.QEMU_FORMATS) == set(DISK_FORMATS)
