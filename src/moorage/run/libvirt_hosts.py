"""The libvirt hosts of a run: on this machine's real QEMU, or simulated from recordings.

``moorage run`` starts every host of a cloud in one process. Real libvirt hosts
share one libvirt: libvirt's embedded QEMU driver (``qemu:///embed``, no daemon)
allows one root per process, and each new root costs a QEMU probe of seconds.
Each host is still its own: its machine type (so its own domain capabilities and
traits), its instances directory, its size (the group's capacity, through the
``[libvirt] inventory_*`` options) and its guests (a domain's metadata names its
node, and a host lists and destroys only its own).

Without libvirt and QEMU the hosts are ``libvirt-recorded`` drivers: the same
discovery and late checks over capabilities recorded from this project's QEMU,
guests built and checked but not started. The plan's description says which.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import threading
from pathlib import Path

from moorage.embedded import HostPlan
from moorage.run.description import HostGroup
from moorage.virt.driver import HypervisorUnavailable
from moorage.virt.libvirt import host as libvirt_host

REAL_DRIVER = "libvirt"
RECORDED_DRIVER = "libvirt-recorded"
# The only virt type this machine's guests can use when the CPU has no
# hardware virtualization (KVM guests then hang in their firmware).
TCG = "qemu"
# An embedded driver's qemu.conf: QEMU as root (no libvirt-qemu user to own the
# files), its output to files (there is no virtlogd without a daemon), and no
# remembered file owners (nothing to restore when QEMU runs as root; the XATTRs it
# keeps otherwise make libvirt's forked helper warn on the terminal at every start).
EMBED_QEMU_CONF = ('user = "root"\ngroup = "root"\nstdio_handler = "file"\n'
                   "remember_owner = 0\n")
# rbd and lvm volumes Moorage does not create: hosts on them boot from local raw
# files and exclude qcow2 images, as those backends do without force_raw_images.
RAW_ONLY_BACKENDS = ("rbd", "lvm")


def libvirt_available(uri: str | None = None) -> tuple[bool, str]:
    """Whether this process can run libvirt hosts on real QEMU, and why (not): the
    Python binding, QEMU, libvirt's schemas, and a libvirt (``uri``, default this
    process's embedded driver) that answers for the host's domain capabilities (its
    first probe takes seconds; the hosts then reuse it)."""
    return _availability(uri)


@functools.cache
def _availability(chosen: str | None) -> tuple[bool, str]:
    try:
        import libvirt
    except ImportError:
        return False, "libvirt-python is not installed (pip install 'moorage[libvirt]')"
    if shutil.which("qemu-system-x86_64") is None:
        return False, "QEMU (qemu-system-x86_64) is not installed"
    if not Path("/usr/share/libvirt/schemas/domain.rng").exists():
        return False, "libvirt's schemas (/usr/share/libvirt/schemas) are not installed"
    uri = chosen or shared_uri()
    try:
        libvirt_host.Host(uri).domain_capabilities("x86_64", None, TCG)
    except HypervisorUnavailable as exc:
        return False, str(exc)
    except libvirt.libvirtError as exc:
        return False, f"libvirt at {uri} cannot give QEMU's capabilities: {exc}"
    return True, f"QEMU through libvirt at {uri}"


def libvirt_plan(group: HostGroup, name: str, real: bool, *,
                 uri: str | None = None, workdir: Path | None = None,
                 stop_after_spawn: bool = True) -> HostPlan:
    """The host ``name`` of ``group``: the libvirt driver on real QEMU (``real``) or the
    ``libvirt-recorded`` simulation. ``uri`` is the libvirt to share (default: this
    process's embedded driver); ``workdir`` holds the guests' directories (default:
    beside the embedded driver's root). ``stop_after_spawn`` stops each real guest
    once QEMU started it (the start is what the run measures)."""
    machine = group.machine_type or "q35"
    virt_type, note = effective_virt_type(group.virt_type or "kvm")
    backend = group.image_backend or "qcow2"
    options: dict[tuple[str, str], object] = {
        ("libvirt", "virt_type"): virt_type,
        ("libvirt", "hw_machine_type"): [f"x86_64={machine}"],
        ("libvirt", "inventory_vcpus"): group.capacity.vcpus,
        ("libvirt", "inventory_memory_mb"): group.capacity.memory_mb,
        ("libvirt", "inventory_disk_gb"): group.capacity.disk_gb,
    }
    if backend in RAW_ONLY_BACKENDS:
        options[("libvirt", "images_type")] = "raw"
        options[("compute", "image_type_exclude_list")] = ["qcow2"]
        note += (f"; {backend} backend: qcow2 images excluded as {backend} does, guests' "
                 "disks are local raw files")
    else:
        options[("libvirt", "images_type")] = backend
    if real:
        options[("libvirt", "connection_uri")] = uri or shared_uri()
        options[("DEFAULT", "instances_path")] = str(
            (workdir or _site_dir()) / "instances" / name)
        options[("libvirt", "stop_after_spawn")] = stop_after_spawn
        where = "real QEMU through libvirt"
    else:
        where = "SIMULATED from recorded domain capabilities (no QEMU)"
    description = (f"libvirt {virt_type} {machine} on {backend}, {where}"
                   f"{note} (group {group.name})")
    return HostPlan(name, REAL_DRIVER if real else RECORDED_DRIVER, options, description)


def effective_virt_type(wanted: str) -> tuple[str, str]:
    """The virt type a host can really use here, and a note when it differs: kvm
    needs hardware virtualization (vmx or svm) and a usable /dev/kvm; without them
    the host runs TCG (qemu), whose guests and capabilities it then reports."""
    if wanted != "kvm" or kvm_usable():
        return wanted, ""
    return TCG, "; virt_type kvm runs as qemu (TCG): this machine has no usable KVM"


@functools.cache
def kvm_usable() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return (" vmx" in flags or " svm" in flags) and os.access("/dev/kvm", os.R_OK | os.W_OK)


# -- the process's embedded driver -------------------------------------------------

_site_lock = threading.Lock()
_site: Path | None = None


def shared_uri() -> str:
    """The libvirt this process's real hosts share: an embedded QEMU driver already
    open in this process (libvirt allows one root per process), else a new root."""
    for uri in libvirt_host.open_uris():
        if uri.startswith("qemu:///embed"):
            return uri
    return f"qemu:///embed?root={_site_dir() / 'libvirt'}"


def _site_dir() -> Path:
    """A directory of this process for the embedded driver's root and the guests,
    removed when the process ends."""
    global _site
    with _site_lock:
        if _site is None:
            _site = Path(tempfile.mkdtemp(prefix="moorage-libvirt-"))
            root = _site / "libvirt"
            (root / "etc").mkdir(parents=True)
            (root / "etc" / "qemu.conf").write_text(EMBED_QEMU_CONF)
            atexit.register(_remove_site, _site)
        return _site


def _remove_site(site: Path) -> None:
    # Close the connections first: the embedded driver's root must outlive them.
    libvirt_host._close_all()
    shutil.rmtree(site, ignore_errors=True)
