"""Running guests through libvirt: prepare, define and start; destroy and undefine; list.

``prepare`` does everything that can refuse a guest without touching it: the
image and traits against the driver's own reports, the guest's platform, what
the hypervisor offers that platform (domain capabilities, CPU features; asked
once and cached), the choices (``guest.resolve``), the late checks
(``checks.check``) and libvirt's schema (``validation``). Only then does
``spawn`` get the image's data into the host's image cache (``image_cache``: a
download, once per host, when the image has data), size the root disk against it,
create the instance's directory and root disk (``root_disk``) and define and start
the domain; a failure there undoes what it did.

Every domain Moorage defines carries its ``<metadata>`` element, so that
``guests`` lists Moorage's guests only, not every domain of a shared libvirt.
"""

from __future__ import annotations

import importlib
import logging
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from lxml import etree
from oslo_config import cfg

from moorage.virt import image_cache, qemu_img
from moorage.virt.driver import Guest, UnsupportedHardware, check_reported_support
from moorage.virt.image_cache import CachedImage
from moorage.virt.libvirt import checks, discovery, models, root_disk, switches, validation
from moorage.virt.libvirt import guest as guest_config
from moorage.virt.libvirt.checks import Target
from moorage.virt.libvirt.guest import GuestConfig, Platform, Settings

if TYPE_CHECKING:
    from moorage.virt.image_service import ImageService
    from moorage.virt.libvirt.bindings import Domain
    from moorage.virt.libvirt.discovery import HostFacts
    from moorage.virt.libvirt.host import Host
    from moorage.virt.report import TraitReport

LOG = logging.getLogger(__name__)

# [libvirt] images_type -> the root disk's format; the others (lvm, rbd, ploop)
# are storage Moorage does not create.
DISK_FORMATS = {"default": "qcow2", "qcow2": "qcow2", "raw": "raw", "flat": "raw"}


class SpawnFailed(RuntimeError):
    """libvirt or QEMU refused a guest that passed every check (its message says why)."""


class Driver(Protocol):
    """What running guests reads of the driver it works for
    (``moorage.virt.libvirt.driver.LibvirtDriver``, which calls this module)."""

    @property
    def conf(self) -> cfg.ConfigOpts: ...

    @property
    def virt_type(self) -> str: ...

    @property
    def machine_types(self) -> Mapping[str, str]: ...

    @property
    def host(self) -> Host: ...

    @property
    def facts(self) -> HostFacts: ...

    @property
    def image_service(self) -> ImageService | None: ...

    def trait_reports(self, node: str) -> list[TraitReport]: ...


def settings(driver: Driver) -> Settings:
    conf = driver.conf
    images_type = str(conf.libvirt.images_type)
    if images_type not in DISK_FORMATS:
        raise UnsupportedHardware(
            f"[libvirt] images_type={images_type}",
            "Moorage creates guests' disks as local files (default, qcow2, raw, flat)")
    return Settings(virt_type=driver.virt_type, machine_types=driver.machine_types,
                    instances_path=str(conf.instances_path),
                    disk_format=DISK_FORMATS[images_type])


def prepare(driver: Driver, guest: Guest) -> tuple[GuestConfig, etree._Element]:
    """The guest's configuration and domain document, or UnsupportedHardware (or
    FlavorImageConflict) saying why this host cannot run it. Defines nothing."""
    # The driver's own reports first: an image type, or a required trait this host
    # reports unsupported, needs no further look. Traits that depend on the machine
    # type are left to the checks, which look at the guest's own machine type (the
    # reports describe the host's default one).
    reports = driver.trait_reports(guest.node)
    check_reported_support(guest, [r for r in reports if not checks.per_platform(r.trait)])
    chosen = settings(driver)
    facts = driver.facts
    where = guest_config.platform(guest.image, chosen, facts.host_arch)
    wants_cpu = bool(switches.cpu_features(guest.requested_traits))
    target = _target(driver, where, wants_cpu)
    return configure(guest, chosen, where, target)


def configure(guest: Guest, chosen: Settings, where: Platform, target: Target, *,
              validate: bool = True) -> tuple[GuestConfig, etree._Element]:
    """The pure part of ``prepare``: choices, late checks, document, and libvirt's
    schema unless ``validate`` is False (a recorded host on a machine without it)."""
    emulator = target.arch.emulator_for(where.domain_type) if target.arch else None
    config = guest_config.resolve(guest, chosen, where, target.capabilities, emulator,
                                  str(Path(chosen.instances_path) / guest.uuid),
                                  models.auto_viommu(target.platform(where.arch.value)))
    checks.check(config, target)
    document = guest_config.domain_xml(config)
    if validate:
        validation.validate(document)
    return config, document


def spawn(driver: Driver, guest: Guest) -> GuestConfig:
    """Check, then define and start ``guest``; its configuration as started."""
    config, document = prepare(driver, guest)
    guest_config.log_warnings(config)
    libvirt = _libvirt()
    conn = driver.host.connection()
    started = time.perf_counter()
    try:
        base = cached_image(driver, guest)
    except (OSError, qemu_img.QemuImgError) as exc:
        raise SpawnFailed(f"instance {guest.uuid}: image {guest.image.id}: "
                          f"{_one_line(exc)}") from exc
    if base is not None and config.root.device != "cdrom":
        root_disk.size(guest.flavor.root_gb, base.virtual_size)  # refused before any work
    instance_dir = Path(config.console_log).parent
    instance_dir.mkdir(parents=True, exist_ok=True)
    domain = None
    try:
        root_disk.create(config.root, guest.flavor.root_gb, base)
        domain = conn.defineXML(guest_config.to_string(document))
        domain.create()
    except (libvirt.libvirtError, OSError, qemu_img.QemuImgError) as exc:
        _undo(libvirt, domain, instance_dir)
        raise SpawnFailed(f"instance {guest.uuid}: {_one_line(exc)}") from exc
    LOG.info("instance %s started in %.2f s: %s", guest.uuid,
             time.perf_counter() - started, describe(config))
    return config


def cached_image(driver: Driver, guest: Guest) -> CachedImage | None:
    """The guest's image's data in the host's image cache (downloaded first when it is
    not there yet); None when the root disk is not made from it: a guest booting from
    a volume, or an image without data (no ``size``: metadata only)."""
    if guest.volume_backed or guest.image.size is None:
        return None
    conf = driver.conf
    return image_cache.fetch(image_cache.directory(conf), guest.image, driver.image_service,
                             force_raw=bool(conf.force_raw_images))


def destroy(driver: Driver, instance_uuid: str) -> None:
    """Stop the guest, undefine it (with its UEFI variables and TPM state) and remove
    its directory. Nothing when there is no such guest."""
    libvirt = _libvirt()
    domain = _lookup(driver.host, instance_uuid)
    if domain is not None:
        try:
            _stop_and_undefine(libvirt, domain)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() != libvirt.VIR_ERR_NO_DOMAIN:
                raise
    shutil.rmtree(Path(str(driver.conf.instances_path)) / instance_uuid, ignore_errors=True)


def guests(driver: Driver) -> list[str]:
    """Uuids of the domains Moorage defined on this host (running or not)."""
    libvirt = _libvirt()
    found = []
    for domain in driver.host.connection().listAllDomains(0):
        try:
            domain.metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, guest_config.METADATA_NS, 0)
        except libvirt.libvirtError:
            continue  # not ours: no Moorage metadata
        found.append(domain.UUIDString())
    return sorted(found)


def live_xml(driver: Driver, instance_uuid: str) -> etree._Element:
    """The running guest's domain document, as libvirt completed it."""
    domain = _lookup(driver.host, instance_uuid)
    if domain is None:
        raise LookupError(f"no domain for instance {instance_uuid}")
    return etree.fromstring(domain.XMLDesc(0).encode())


def describe(config: GuestConfig) -> str:
    """One line of what the guest got and why."""
    parts = [
        f"{config.platform.domain_type} {config.arch} {config.platform.machine or 'default'}",
        f"{config.root.device} on {config.root.bus}",
        f"video {config.video or 'none'}",
        f"NIC {config.vif or 'none'}" + (" (packed virtqueues)" if config.packed_ring
                                         else ""),
        *([f"sound {config.sound}"] if config.sound else []),
        *([f"vIOMMU {config.viommu}"] if config.viommu else []),
        f"firmware {config.firmware.type}",
    ]
    if config.firmware.secure_boot:
        parts.append(f"secure boot {config.firmware.secure_boot}")
    if config.tpm:
        parts.append(f"TPM {config.tpm.model} {config.tpm.version}")
    if config.cpu_features:
        parts.append("CPU features " + ", ".join(f.name for f in config.cpu_features))
    if config.hpet:
        parts.append(f"HPET {config.hpet}")
    return "; ".join(parts)


# -- what the host offers one platform --------------------------------------------------



def _target(driver: Driver, where: Platform, wants_cpu_features: bool) -> Target:
    """The host's offer for the guest's platform: the host capabilities' entry for its
    architecture, the domain capabilities of its machine type, its emulator's device
    list, and (only when traits ask for CPU features) the features its CPU can have."""
    host = driver.host
    arch_name = where.arch.value
    arch = next((g for g in host.capabilities().guests if g.arch == arch_name
                 and where.domain_type in g.domains), None)
    facts = driver.facts
    target = Target(driver.virt_type, arch, None, libvirt_version=facts.libvirt_version,
                    qemu_version=facts.qemu_version)
    machine = where.machine.value if where.machine else None
    if arch is None or (machine is not None and arch.canonical(machine) is None):
        return target  # the checks refuse the architecture or the machine type
    emulator = arch.emulator_for(where.domain_type)
    libvirt = _libvirt()
    try:
        caps = host.domain_capabilities(arch_name, machine, where.domain_type, emulator)
    except libvirt.libvirtError as exc:
        raise UnsupportedHardware(
            f"hw_machine_type={machine}" if machine else f"virt_type={driver.virt_type}",
            f"libvirt has no domain capabilities for {arch_name} {machine or ''}: "
            f"{_one_line(exc)}") from None
    features = (host.cpu_features(arch_name, machine, where.domain_type, emulator)
                if wants_cpu_features else None) or frozenset()
    devices, problem = discovery.device_list(caps.emulator or emulator, host.uri)
    return Target(driver.virt_type, arch, caps, features, devices, problem,
                  facts.libvirt_version, facts.qemu_version)


# -- helpers -------------------------------------------------------------------------

def _libvirt() -> ModuleType:
    return importlib.import_module("libvirt")


def _lookup(host: Host, instance_uuid: str) -> Domain | None:
    libvirt = _libvirt()
    try:
        return host.connection().lookupByUUIDString(instance_uuid)
    except libvirt.libvirtError as exc:
        if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
            return None
        raise


def _undefine_flags(libvirt: ModuleType) -> int:
    # TPM state goes too (libvirt >= 8.9); the flag is absent from older bindings.
    return int(libvirt.VIR_DOMAIN_UNDEFINE_NVRAM | getattr(libvirt, "VIR_DOMAIN_UNDEFINE_TPM", 0))


def _stop_and_undefine(libvirt: ModuleType, domain: Domain) -> None:
    """Stop a domain if it runs, then undefine it with its UEFI variables and TPM state."""
    if domain.isActive():
        domain.destroy()
    domain.undefineFlags(_undefine_flags(libvirt))


def _undo(libvirt: ModuleType, domain: Domain | None, instance_dir: Path) -> None:
    """Undefine a domain that failed to start and remove what spawn created."""
    if domain is not None:
        try:
            _stop_and_undefine(libvirt, domain)
        except libvirt.libvirtError as exc:
            LOG.warning("could not undefine a domain that failed to start: %s",
                        _one_line(exc))
    shutil.rmtree(instance_dir, ignore_errors=True)


def _one_line(exc: BaseException) -> str:
    stderr = getattr(exc, "stderr", None)
    return " ".join((stderr or str(exc)).split()) or type(exc).__name__
