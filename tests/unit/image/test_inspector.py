"""The format inspector against images qemu-img builds: each format is detected as
itself, a qcow2 with a backing file or an external data file is refused, a VMDK that
spans files is refused, and data is refused under any disk_format it is not."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from moorage.image import inspector
from moorage.image.inspector import FormatRefused, Inspection

MIB = 1 << 20
QEMU_IMG = shutil.which("qemu-img")


def _qemu_img(*args: str) -> None:
    assert QEMU_IMG is not None, "qemu-img is needed to build the test images"
    subprocess.run([QEMU_IMG, *args], check=True, capture_output=True)


def _reader(path: Path) -> inspector.Reader:
    data = path.read_bytes()
    return lambda offset, length: data[offset:offset + length] if offset >= 0 else b""


def _inspect(path: Path) -> Inspection:
    return inspector.detect(_reader(path), path.stat().st_size)


def _check(declared: str, path: Path) -> Inspection:
    return inspector.check(declared, _reader(path), path.stat().st_size)


def _iso(path: Path) -> None:
    """A minimal ISO 9660 image: a primary volume descriptor at sector 16."""
    data = bytearray(20 * 2048)
    data[16 * 2048:16 * 2048 + 6] = b"\x01CD001"
    path.write_bytes(bytes(data))


# name -> (how to build it in a directory, the format detected)
BUILDS: dict[str, tuple[Callable[[Path], None], str]] = {
    "raw": (lambda p: _qemu_img("create", "-f", "raw", str(p), "1M"), "raw"),
    "qcow2": (lambda p: _qemu_img("create", "-f", "qcow2", str(p), "1M"), "qcow2"),
    "qcow2-v2": (lambda p: _qemu_img("create", "-f", "qcow2", "-o", "compat=0.10", str(p),
                                     "1M"), "qcow2"),
    "vmdk": (lambda p: _qemu_img("create", "-f", "vmdk", str(p), "1M"), "vmdk"),
    "vmdk-stream": (lambda p: _qemu_img("create", "-f", "vmdk", "-o",
                                        "subformat=streamOptimized", str(p), "1M"), "vmdk"),
    "vhd": (lambda p: _qemu_img("create", "-f", "vpc", str(p), "1M"), "vhd"),
    "vhd-fixed": (lambda p: _qemu_img("create", "-f", "vpc", "-o", "subformat=fixed", str(p),
                                      "1M"), "vhd"),
    "vhdx": (lambda p: _qemu_img("create", "-f", "vhdx", str(p), "1M"), "vhdx"),
    "vdi": (lambda p: _qemu_img("create", "-f", "vdi", str(p), "1M"), "vdi"),
    "iso": (_iso, "iso"),
}


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_each_format_is_detected_as_itself_and_safe(tmp_path: Path, name: str) -> None:
    build, expected = BUILDS[name]
    path = tmp_path / name
    build(path)
    found = _inspect(path)
    assert (found.format, found.unsafe) == (expected, None)


@pytest.mark.parametrize("name", ["qcow2", "qcow2-v2", "vmdk", "vhd"])
def test_the_virtual_size_is_the_one_qemu_reads(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    BUILDS[name][0](path)
    assert QEMU_IMG is not None
    info = json.loads(subprocess.run([QEMU_IMG, "info", "--output=json", str(path)],
                                     check=True, capture_output=True).stdout)
    assert _inspect(path).virtual_size == info["virtual-size"] >= MIB


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_data_is_refused_under_every_other_disk_format(tmp_path: Path, name: str) -> None:
    build, detected = BUILDS[name]
    path = tmp_path / name
    build(path)
    for declared in ("raw", "qcow2", "vmdk", "vhd", "vhdx", "vdi", "iso", "ami"):
        matches = declared == detected or (declared == "ami" and detected == "raw")
        if matches:
            assert _check(declared, path).format == detected
        else:
            with pytest.raises(FormatRefused, match=f"is {detected}, not the disk_format "
                                                    f"{declared}"):
                _check(declared, path)


def test_a_fixed_vhd_is_its_data_before_the_footer(tmp_path: Path) -> None:
    """The footer's current size (qemu 7 counts the footer in too)."""
    path = tmp_path / "fixed.vhd"
    BUILDS["vhd-fixed"][0](path)
    assert _inspect(path).virtual_size == path.stat().st_size - 512


def test_a_qcow2_with_a_backing_file_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "base.raw"
    _qemu_img("create", "-f", "raw", str(base), "1M")
    child = tmp_path / "child.qcow2"
    _qemu_img("create", "-f", "qcow2", "-b", str(base), "-F", "raw", str(child))
    assert _inspect(child).unsafe == "the qcow2 image has a backing file"
    with pytest.raises(FormatRefused, match="backing file"):
        _check("qcow2", child)


def test_a_qcow2_with_an_external_data_file_is_refused(tmp_path: Path) -> None:
    """CVE-2024-32498: the data file names a host file the guest would read."""
    path = tmp_path / "external.qcow2"
    _qemu_img("create", "-f", "qcow2", "-o", f"data_file={tmp_path / 'data.raw'}",
              str(path), "1M")
    assert _inspect(path).unsafe == "the qcow2 image has an external data file"
    with pytest.raises(FormatRefused, match="external data file"):
        _check("qcow2", path)


def _patched(source: Path, target: Path, offset: int, value: bytes) -> Path:
    data = bytearray(source.read_bytes())
    data[offset:offset + len(value)] = value
    target.write_bytes(bytes(data))
    return target


@pytest.mark.parametrize(("offset", "value", "reason"), [
    (72, struct.pack(">Q", 1 << 2), "the qcow2 image has an external data file"),
    (72, struct.pack(">Q", 1 << 9), "the qcow2 image has unknown incompatible features 0x200"),
    (4, struct.pack(">I", 4), "qcow2 version 4 is not 2 or 3"),
    (8, struct.pack(">Q", 4096), "the qcow2 image has a backing file"),
])
def test_qcow2_header_fields_decide(tmp_path: Path, offset: int, value: bytes,
                                    reason: str) -> None:
    path = tmp_path / "plain.qcow2"
    _qemu_img("create", "-f", "qcow2", str(path), "1M")
    assert _inspect(_patched(path, tmp_path / "edited", offset, value)).unsafe == reason


def test_a_truncated_qcow2_is_unsafe() -> None:
    header = inspector.QCOW2_MAGIC + struct.pack(">I", 3)
    found = inspector.detect(lambda o, n: header[o:o + n], len(header))
    assert found.unsafe == "the qcow2 header is truncated"


def test_a_vmdk_that_spans_files_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "split.vmdk"
    _qemu_img("create", "-f", "vmdk", "-o", "subformat=twoGbMaxExtentSparse", str(path), "1M")
    # The descriptor is a text file naming the extents: not a VMDK sparse extent.
    with pytest.raises(FormatRefused, match="is raw, not the disk_format vmdk"):
        _check("vmdk", path)
    extent = tmp_path / "split-s001.vmdk"
    assert _inspect(extent).format == "vmdk"


@pytest.mark.parametrize(("descriptor", "reason"), [
    ('createType="monolithicSparse"\nRW 2048 SPARSE "a.vmdk"\n', None),
    ('createType="streamOptimized"\nRW 2048 SPARSE "a.vmdk"\n', None),
    ('createType="monolithicFlat"\nRW 2048 FLAT "a-flat.vmdk" 0\n',
     "the vmdk createType 'monolithicFlat' is not allowed; allowed: monolithicSparse, "
     "streamOptimized"),
    ('createType="monolithicSparse"\nRW 2048 SPARSE "a.vmdk"\nRW 2048 SPARSE "/etc/x"\n',
     "the vmdk descriptor names 2 extents; one is allowed"),
    ('RW 2048 SPARSE "a.vmdk"\n', "the vmdk descriptor has no createType"),
])
def test_vmdk_descriptors(descriptor: str, reason: str | None) -> None:
    assert inspector.inspect_vmdk_descriptor(descriptor) == reason


def test_formats_without_an_inspector_are_not_checked(tmp_path: Path) -> None:
    path = tmp_path / "anything"
    path.write_bytes(b"whatever")
    assert _check("ploop", path).format == "ploop"
