"""``moorage compute traits`` for this host (real QEMU through embedded libvirt) and for
domain capabilities files, as a table and as JSON, and its one-line errors.

The live-host runs are in-process: the embedded driver's root belongs to one process,
this one, which the other libvirt tests share (and its probe with them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from moorage.conf import load_config
from moorage.virt.libvirt.driver import LibvirtDriver
from tests.functional.cli.test_placement_cli import Run, moorage, table

# moorage: the in-process runner fixture of the placement CLI tests, used here too
__all__ = ["moorage"]
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "domcaps"
Moorage = Callable[..., Run]


def write_config(tmp_path: Path, uri: str, machine: str) -> str:
    path = tmp_path / "moorage.conf"
    path.write_text(f"[DEFAULT]\nhost = compute-1\n[libvirt]\nvirt_type = qemu\n"
                    f"connection_uri = {uri}\nhw_machine_type = x86_64={machine}\n")
    return str(path)


@pytest.mark.parametrize(("machine", "ide"), [("pc", "yes"), ("q35", "no")])
def test_this_host_as_a_table(moorage: Moorage, libvirt_embed_uri: str, tmp_path: Path,
                              machine: str, ide: str) -> None:
    run = moorage("compute", "traits", "--config-file",
                  write_config(tmp_path, libvirt_embed_uri, machine))
    assert run.code == 0, run.err
    cells = table(run.out)
    assert cells[0] == ["trait", "supported", "source", "detail"]
    rows = {row[0]: row[1:] for row in cells[1:]}
    assert rows["COMPUTE_STORAGE_BUS_IDE"] == [
        ide, "domain capabilities", f"x86_64 {machine} domain capabilities"]
    assert rows["COMPUTE_NET_VIF_MODEL_E1000"][:2] == ["yes", "emulator device list"]
    assert rows["COMPUTE_NET_VIF_MODEL_E1000"][2].endswith(
        "e1000 (PCI) in qemu-system-x86_64 7.2.22")
    # this QEMU has no spapr-vlan: the device list says so
    assert rows["COMPUTE_NET_VIF_MODEL_SPAPR_VLAN"][:2] == ["no", "emulator device list"]
    assert rows["HW_ARCH_X86_64"][:2] == ["yes", "host capabilities"]


def test_this_host_as_json_is_what_the_driver_reports(
        moorage: Moorage, libvirt_embed_uri: str, tmp_path: Path) -> None:
    config = write_config(tmp_path, libvirt_embed_uri, "q35")
    run = moorage("compute", "traits", "--config-file", config, "-f", "json")
    assert run.code == 0, run.err
    driver = LibvirtDriver(load_config([config]))
    assert json.loads(run.out) == [
        {"trait": r.trait, "supported": r.supported, "source": str(r.source),
         "detail": r.detail} for r in driver.trait_reports("compute-1")]


def test_a_file_as_a_table(moorage: Moorage) -> None:
    run = moorage("compute", "traits", "--domcaps", str(FIXTURES / "qemu-x86_64-q35.xml"),
                  "--virt-type", "qemu", "--machine", "q35")
    assert run.code == 0, run.err
    rows = {row[0]: row[1:] for row in table(run.out)[1:]}
    assert rows["COMPUTE_STORAGE_BUS_IDE"] == ["no", "domain capabilities",
                                               "x86_64 q35 domain capabilities"]
    assert rows["COMPUTE_STORAGE_BUS_SATA"][0] == "yes"
    assert rows["COMPUTE_SECURITY_UEFI_SECURE_BOOT"][0] == "yes"
    # no hypervisor, no versions: what they gate is not guessed
    assert "COMPUTE_NET_VIF_MODEL_IGB" not in rows


def test_nic_models_come_from_a_device_list(moorage: Moorage) -> None:
    q35 = str(FIXTURES / "qemu-x86_64-q35.xml")
    run = moorage("compute", "traits", "--domcaps", q35, "--virt-type", "qemu",
                  "--devices", f"x86_64={FIXTURES / 'qemu-x86_64-devices.txt'}")
    assert run.code == 0, run.err
    rows = {row[0]: row[1:] for row in table(run.out)[1:]}
    assert rows["COMPUTE_NET_VIF_MODEL_E1000"][:2] == ["yes", "emulator device list"]
    assert rows["COMPUTE_NET_VIF_MODEL_SPAPR_VLAN"][:2] == ["no", "emulator device list"]
    assert rows["COMPUTE_VIOMMU_MODEL_INTEL"][0] == "yes"
    assert "HW_CPU_X86_SSE2" not in rows
    run = moorage("compute", "traits", "--domcaps", q35, "--virt-type", "qemu",
                  "--cpu", f"x86_64={FIXTURES / 'qemu-x86_64-cpu-expanded.xml'}")
    rows = {row[0]: row[1:] for row in table(run.out)[1:]}
    assert (rows["HW_CPU_X86_SSE2"][0], rows["HW_CPU_X86_AVX512F"][0]) == ("yes", "no")
    # without one, the families it decides are left out, and a note says why
    run = moorage("compute", "traits", "--domcaps", q35, "--virt-type", "qemu")
    assert run.code == 0, run.err
    rows = {row[0]: row[1:] for row in table(run.out)[1:]}
    assert "COMPUTE_NET_VIF_MODEL_E1000" not in rows
    assert ("note: x86_64: NIC, sound and vIOMMU models not reported: no device list given "
            "for x86_64 (the output of qemu-system-x86_64 -device help)") in run.err


def test_a_file_as_json_in_a_subprocess(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "moorage", "compute", "traits", "--domcaps",
         str(FIXTURES / "qemu-x86_64-pc.xml"), "--virt-type", "lxc", "-f", "json"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    rows = {row["trait"]: row for row in json.loads(result.stdout)}
    # lxc: buses from the table, whatever the file lists
    assert rows["COMPUTE_STORAGE_BUS_LXC"]["supported"] is True
    assert rows["COMPUTE_STORAGE_BUS_IDE"] == {
        "trait": "COMPUTE_STORAGE_BUS_IDE", "supported": False, "source": "driver table",
        "detail": "disk buses of virt_type lxc"}
    assert not any(r.startswith("COMPUTE_NET_VIF_MODEL_") and rows[r]["supported"]
                   for r in rows)


def broken_file(tmp_path: Path) -> str:
    path = tmp_path / "x86_64-q35.xml"
    path.write_text((FIXTURES / "qemu-x86_64-q35.xml").read_text().replace(
        "<domain>qemu</domain>", ""))
    return str(path)


def _file(tmp: Path, text: str) -> Path:
    path = tmp / "bad.conf"
    path.write_text(text)
    return path


ERRORS: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "unreachable hypervisor": (
        lambda tmp: ["--config-file", write_config(
            tmp, "qemu+unix:///system?socket=/nonexistent/sock", "q35")],
        "cannot connect to libvirt at qemu+unix:///system?socket=/nonexistent/sock: "
        "Failed to connect socket to '/nonexistent/sock': No such file or directory"),
    "malformed file": (
        lambda tmp: ["--domcaps", broken_file(tmp), "--virt-type", "qemu"],
        "x86_64-q35.xml: <domainCapabilities/domain>: missing"),
    "not XML": (
        lambda tmp: ["--domcaps", str(FIXTURES / "README.md"), "--virt-type", "qemu"],
        "README.md: <domainCapabilities>: not well-formed XML: Start tag expected"),
    "unknown virt type": (
        lambda tmp: ["--domcaps", str(FIXTURES / "qemu-x86_64-q35.xml"), "--virt-type",
                     "xen"],
        "[libvirt] virt_type = 'xen': Valid values are [kvm, qemu, lxc, parallels], but "
        "found 'xen'"),
    "unknown virt type in a file": (
        lambda tmp: ["--config-file", str(_file(tmp, "[libvirt]\nvirt_type = bhyve\n"))],
        "virt_type in {tmp}/bad.conf: Valid values are [kvm, qemu, lxc, parallels], but "
        "found 'bhyve'"),
    "a device list without ARCH=": (
        lambda tmp: ["--domcaps", str(FIXTURES / "qemu-x86_64-q35.xml"), "--virt-type",
                     "qemu", "--devices", "devices.txt"],
        "--devices 'devices.txt': give ARCH=FILE (x86_64=FILE)"),
    "a device list for no file's architecture": (
        lambda tmp: ["--domcaps", str(FIXTURES / "qemu-x86_64-q35.xml"), "--virt-type",
                     "qemu", "--devices", f"aarch64={FIXTURES / 'qemu-aarch64-devices.txt'}"],
        "a device list for aarch64, which no domain capabilities file is for"),
    "a missing device list": (
        lambda tmp: ["--domcaps", str(FIXTURES / "qemu-x86_64-q35.xml"), "--virt-type",
                     "qemu", "--devices", "x86_64=/nonexistent/devices.txt"],
        "/nonexistent/devices.txt: cannot read the device list: No such file or directory"),
    "a file without its virt type": (
        lambda tmp: ["--domcaps", str(FIXTURES / "qemu-x86_64-q35.xml")],
        "--domcaps needs --virt-type (kvm, qemu, lxc or parallels)"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_are_one_line(moorage: Moorage, tmp_path: Path, case: str) -> None:
    args, message = ERRORS[case]
    run = moorage("compute", "traits", *args(tmp_path))
    assert run.code == 1
    assert run.out == ""
    assert run.err.strip().splitlines() == [run.err.strip()]
    assert message.format(tmp=tmp_path) in run.err
    assert "Traceback" not in run.err


def test_an_error_in_a_subprocess_is_one_line_without_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "moorage", "compute", "traits", "--domcaps",
         broken_file(tmp_path), "--virt-type", "kvm"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"{tmp_path}/x86_64-q35.xml: <domainCapabilities/domain>: missing")
