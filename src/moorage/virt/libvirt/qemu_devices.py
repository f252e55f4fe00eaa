"""The devices a QEMU emulator has, from its own list (``qemu-system-ARCH -device help``).

libvirt 9's domain capabilities name disk buses, video and TPM models, but no NIC,
sound or vIOMMU device: for those the emulator is asked directly, once per binary
(its path, size and modification time are the cache key, so an upgraded QEMU is
asked again), and its version is kept with the answer for the reports' details.
``parse`` is pure so that a list recorded from a real QEMU (``recordings/``,
``tests/fixtures/domcaps``) is read by the same code as a live one.

A probe that cannot run (no such emulator, an emulator on another machine, a
QEMU that fails) is ``DeviceProbeError`` with the reason: discovery then reports
nothing for the families that need the list, and says why, rather than guess.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

PROBE_TIMEOUT_S = 30
_LINE = re.compile(r'^name "(?P<name>[^"]+)"(?P<rest>.*)$')
_FIELD = re.compile(r'(?P<key>bus|alias|desc) (?:"(?P<quoted>[^"]*)"|(?P<bare>[^,]+))')
_VERSION = re.compile(r"QEMU emulator version (?P<version>\d+\.\d+(?:\.\d+)?)")


class DeviceProbeError(RuntimeError):
    """The emulator's device list cannot be had: which emulator, and why."""


@dataclass(frozen=True)
class QemuDevice:
    name: str
    # The bus it plugs into as QEMU names it: PCI, ISA, usb-bus, virtio-bus, System...
    bus: str | None
    category: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeviceList:
    """What one emulator binary offers, and where the list came from."""

    emulator: str
    version: str | None
    # where the list came from: "qemu-system-x86_64 -device help" or a file
    source: str
    devices: Mapping[str, QemuDevice] = field(default_factory=dict)

    def get(self, name: str) -> QemuDevice | None:
        """The device by its name or one of its aliases."""
        return self.devices.get(name)

    def describe(self) -> str:
        """``qemu-system-x86_64 7.2.22`` (the emulator's name and version)."""
        name = Path(self.emulator).name
        return f"{name} {self.version}" if self.version else name


def parse(text: str, emulator: str, version: str | None, source: str) -> DeviceList:
    """The device list in ``text`` (the output of ``-device help``). Lines that are not
    a category or a device (QEMU's module warnings) are ignored; a device line without
    a name, or no device at all, is an error naming ``source``."""
    devices: dict[str, QemuDevice] = {}
    category = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.endswith(":") and not line.startswith("name "):
            category = line[:-1]
            continue
        match = _LINE.match(line)
        if match is None:
            if line.startswith("name "):
                raise DeviceProbeError(f"{source}: a device line without a quoted name: "
                                       f"{line!r}")
            continue
        fields: dict[str, list[str]] = {}
        for found in _FIELD.finditer(match["rest"]):
            value = found["quoted"] if found["quoted"] is not None else found["bare"].strip()
            fields.setdefault(found["key"], []).append(value)
        device = QemuDevice(
            name=match["name"],
            bus=fields.get("bus", [None])[0],
            category=category,
            aliases=tuple(fields.get("alias", ())),
        )
        devices[device.name] = device
        for alias in device.aliases:
            devices.setdefault(alias, device)
    if not devices:
        # Empty, or not a device list at all: every model would read as missing.
        raise DeviceProbeError(f"{source}: no device in it; expected the output of "
                               f"{Path(emulator).name} -device help (lines such as "
                               '\'name "virtio-net-pci", bus PCI\')')
    return DeviceList(emulator, version, source, devices)


def version_of(text: str) -> str | None:
    """``7.2.22`` from ``qemu-system-x86_64 -version``'s first line."""
    match = _VERSION.search(text)
    return match["version"] if match else None


def read_file(path: str | Path, emulator: str, version: str | None = None) -> DeviceList:
    """A recorded list (``qemu-system-ARCH -device help > FILE``)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise DeviceProbeError(f"{path}: cannot read the device list: {exc.strerror}") from None
    return parse(text, emulator, version, str(path))


_cache: dict[tuple[str, int, int], DeviceList] = {}
_lock = threading.Lock()


def probe(emulator: str) -> DeviceList:
    """The device list of the local binary ``emulator``, asked once per binary version."""
    try:
        stat = os.stat(emulator)
    except OSError as exc:
        raise DeviceProbeError(f"cannot probe {emulator}: {exc.strerror}") from None
    key = (os.path.realpath(emulator), stat.st_size, stat.st_mtime_ns)
    with _lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    version = version_of(_run(emulator, "-version"))
    found = parse(_run(emulator, "-device", "help"), emulator, version,
                  f"{Path(emulator).name} -device help")
    with _lock:
        _cache[key] = found
    return found


def _run(emulator: str, *args: str) -> str:
    command = [emulator, *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              timeout=PROBE_TIMEOUT_S, env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DeviceProbeError(f"cannot run {' '.join(command)}: {exc}") from None
    if done.returncode != 0:
        reason = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
        raise DeviceProbeError(f"{' '.join(command)} failed: {reason}")
    return done.stdout
