"""A libvirt guest's power and console: shut down, started, rebooted, its serial log read.

Shut down as nova's libvirt driver does it: the guest is asked to power itself off
(ACPI) and given ``[DEFAULT] shutdown_timeout`` seconds; a guest that does not obey
(no OS listening, as Moorage's empty disks have) is destroyed. Its domain stays
defined either way, so it can be started again. A soft reboot is such a shutdown
and a start, so that the guest boots again from its definition; a guest that does
not go down within ``[libvirt] wait_soft_reboot_seconds`` is power-cycled (the
hard reboot: destroy and start). Each start is a new QEMU, with a new domain id.

The console is the file the domain's serial port writes (``guest.py``: the
instance directory's console.log); its last ``MAX_CONSOLE_BYTES`` are read, as
nova reads at most 100 KiB of it.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from lxml import etree

from moorage.virt.driver import GuestNotFound

if TYPE_CHECKING:
    from moorage.virt.libvirt.bindings import Domain
    from moorage.virt.libvirt.host import Host

LOG = logging.getLogger(__name__)

MAX_CONSOLE_BYTES = 100 * 1024
# How often a shutdown's end is looked for.
POLL_SECONDS = 0.2


def _libvirt() -> ModuleType:
    return importlib.import_module("libvirt")


def domain(host: Host, instance_uuid: str) -> Domain:
    """The guest's domain; GuestNotFound when libvirt has none."""
    libvirt = _libvirt()
    try:
        return host.connection().lookupByUUIDString(instance_uuid)
    except libvirt.libvirtError as exc:
        if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
            raise GuestNotFound(instance_uuid, host.uri) from None
        raise


def _wait(until: Callable[[], bool], seconds: float) -> bool:
    """Poll ``until`` for up to ``seconds``; whether it came true."""
    deadline = time.monotonic() + seconds
    while True:
        if until():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)


def shut_down(found: Domain, timeout: float) -> bool:
    """Ask the guest to power off (ACPI) and wait up to ``timeout`` seconds; whether it
    did. A guest that is off already has."""
    libvirt = _libvirt()
    if not found.isActive():
        return True
    try:
        found.shutdown()
    except libvirt.libvirtError as exc:
        # QEMU may refuse while the guest firmware has not set ACPI up yet.
        LOG.info("guest %s refused a clean shutdown: %s", found.UUIDString(), exc)
        return False
    return _wait(lambda: not found.isActive(), timeout)


def power_off(host: Host, instance_uuid: str, timeout: float) -> None:
    """Cleanly within ``timeout`` seconds, else by force; the domain stays defined."""
    found = domain(host, instance_uuid)
    if shut_down(found, timeout):
        LOG.info("guest %s shut down", instance_uuid)
        return
    LOG.info("guest %s did not shut down within %gs: destroying it", instance_uuid, timeout)
    _destroy(found)


def power_on(host: Host, instance_uuid: str) -> None:
    """Start the domain; nothing if it runs."""
    found = domain(host, instance_uuid)
    if not found.isActive():
        found.create()


def reboot(host: Host, instance_uuid: str, *, hard: bool, soft_timeout: float) -> None:
    """Soft: shut down (``soft_timeout``) and start; power-cycled when it does not go
    down in time. Hard: destroyed and started at once."""
    found = domain(host, instance_uuid)
    if not hard and found.isActive():
        if shut_down(found, soft_timeout):
            found.create()
            LOG.info("guest %s rebooted (soft)", instance_uuid)
            return
        LOG.info("guest %s did not shut down within %gs: power-cycling it", instance_uuid,
                 soft_timeout)
    _destroy(found)
    found.create()
    LOG.info("guest %s rebooted (hard)", instance_uuid)


def _destroy(found: Domain) -> None:
    """Stop the domain's QEMU at once (an off domain is left alone)."""
    libvirt = _libvirt()
    try:
        if found.isActive():
            found.destroy()
    except libvirt.libvirtError as exc:
        if exc.get_error_code() != libvirt.VIR_ERR_OPERATION_INVALID:  # off meanwhile
            raise


def console_log(found: Domain) -> Path | None:
    """The file the domain's serial port writes, from its definition."""
    document = etree.fromstring(found.XMLDesc(0).encode())
    for source in document.iterfind("devices/serial[@type='file']/source"):
        path = source.get("path")
        if path:
            return Path(path)
    return None


def console_output(host: Host, instance_uuid: str) -> str:
    """The last ``MAX_CONSOLE_BYTES`` of the guest's serial log ("" before it wrote)."""
    found = domain(host, instance_uuid)
    path = console_log(found)
    if path is None:
        raise NotImplementedError(f"guest {instance_uuid} has no serial log file")
    try:
        with path.open("rb") as log:
            size = log.seek(0, 2)
            log.seek(max(0, size - MAX_CONSOLE_BYTES))
            data = log.read()
    except FileNotFoundError:
        return ""
    return data.decode("utf-8", errors="replace")
