"""QEMU's capabilities as libvirt probed them, kept across throwaway embedded roots.

The first time a libvirt root needs QEMU's capabilities, libvirt probes QEMU: it
starts the binary and asks it everything (4.5 s here). It keeps the answer in the
root, ``cache/qemu/capabilities/<hash>.xml``, and a daemon keeps its root, so it
probes once. The embedded roots Moorage makes for ``moorage run`` and for the tests
live as long as their process, so each would probe again: ``seed`` copies the kept
answers into a new root before libvirt opens it, and ``keep`` copies them out
before the root is removed.

libvirt decides whether a file still holds: each records QEMU's binary and module
directory times, libvirt's own version, the kernel, the CPU microcode and whether
KVM was usable, and libvirt probes again when one of them changed (it then writes a
new file, which ``keep`` keeps). A root opened with the file took 0.09 s to answer.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

LOG = logging.getLogger(__name__)

# Where libvirt's QEMU driver keeps the probes under its root.
IN_ROOT = Path("cache") / "qemu" / "capabilities"


def directory() -> Path:
    """Where the probes are kept: ``$XDG_CACHE_HOME/moorage/qemu-capabilities``
    (``~/.cache`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "moorage" / "qemu-capabilities"


def seed(root: Path, kept: Path | None = None) -> int:
    """Copy the kept probes into the embedded root ``root`` (before libvirt opens it);
    how many. A root that has a probe of its own keeps it."""
    source = kept or directory()
    target = root / IN_ROOT
    copied = 0
    for probe in sorted(source.glob("*.xml")) if source.is_dir() else ():
        if (target / probe.name).exists():
            continue
        target.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(probe, target / probe.name)
        except OSError as exc:  # a cache that cannot be read costs a probe, no more
            LOG.debug("could not seed %s with %s: %s", root, probe, exc)
            continue
        copied += 1
    return copied


def keep(root: Path, kept: Path | None = None) -> int:
    """Copy the probes of the embedded root ``root`` out to be kept; how many. Each
    file is replaced whole (written beside, then renamed), so a process seeding at
    the same time reads the old file or the new one."""
    source = root / IN_ROOT
    target = kept or directory()
    copied = 0
    for probe in sorted(source.glob("*.xml")) if source.is_dir() else ():
        kept_probe = target / probe.name
        partial: str | None = None
        try:
            if kept_probe.exists() and kept_probe.read_bytes() == probe.read_bytes():
                continue
            target.mkdir(parents=True, exist_ok=True)
            handle, partial = tempfile.mkstemp(dir=target, prefix=".", suffix=".partial")
            os.close(handle)
            shutil.copyfile(probe, partial)
            os.replace(partial, kept_probe)
        except OSError as exc:
            LOG.debug("could not keep %s in %s: %s", probe, target, exc)
            if partial is not None:
                Path(partial).unlink(missing_ok=True)
            continue
        copied += 1
    return copied
