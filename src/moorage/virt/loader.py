"""Choosing the driver named by ``[DEFAULT] compute_driver``."""

from __future__ import annotations

import importlib

from oslo_config import cfg

from moorage.virt.driver import ComputeDriver

# name -> "module:class"; imported on demand so that, say, libvirt-python is only
# needed on libvirt hosts.
DRIVERS = {
    "libvirt": "moorage.virt.libvirt.driver:LibvirtDriver",
    "fake": "moorage.virt.fake:FakeDriver",
    "vmware": "moorage.virt.vmware.driver:VMwareDriver",
    "ironic": "moorage.virt.ironic.driver:IronicDriver",
    # A SIMULATED libvirt host: recorded capabilities, no QEMU (moorage run without libvirt).
    "libvirt-recorded": "moorage.virt.libvirt.recorded:RecordedLibvirtDriver",
}
# Upstream Nova's spellings of the same drivers.
ALIASES = {
    "libvirt.libvirtdriver": "libvirt",
    "fake.fakedriver": "fake",
    "vmwareapi.vmwarevcdriver": "vmware",
    "ironic.ironicdriver": "ironic",
}


class UnknownDriver(ValueError):
    pass


def driver_name(configured: str) -> str:
    """The canonical name of a configured driver; UnknownDriver naming the choices."""
    name = configured.strip().lower()
    name = ALIASES.get(name, name)
    if name not in DRIVERS:
        raise UnknownDriver(
            f"[DEFAULT] compute_driver = {configured!r} is not a driver Moorage has; "
            f"choose one of: {', '.join(DRIVERS)}"
        )
    return name


def load_driver(conf: cfg.ConfigOpts) -> ComputeDriver:
    """An instance of the configured driver (not yet connected: call init_host)."""
    module_name, class_name = DRIVERS[driver_name(conf.compute_driver)].split(":")
    driver_class: type[ComputeDriver] = getattr(importlib.import_module(module_name), class_name)
    return driver_class(conf)
