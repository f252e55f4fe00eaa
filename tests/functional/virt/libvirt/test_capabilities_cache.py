"""libvirt reads a kept QEMU probe instead of probing again, and probes again when
the kept one no longer holds (``capabilities_cache``).

Another embedded root needs another process (libvirt allows one per process): each
root here is opened by a child Python that asks for the domain capabilities.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from moorage.virt.libvirt import capabilities_cache
from moorage.virt.libvirt import host as libvirt_host
from moorage.virt.libvirt.capabilities_cache import IN_ROOT

ASK = ("import sys; from moorage.virt.libvirt.host import Host; "
       "Host(f'qemu:///embed?root={sys.argv[1]}').domain_capabilities('x86_64', None, 'qemu')")
QEMU_CONF = 'user = "root"\ngroup = "root"\nstdio_handler = "file"\n'


def _root(path: Path) -> Path:
    (path / "etc").mkdir(parents=True)
    (path / "etc" / "qemu.conf").write_text(QEMU_CONF)
    return path


def _ask(root: Path) -> None:
    done = subprocess.run([sys.executable, "-c", ASK, str(root)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def _probes(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (root / IN_ROOT).glob("*.xml")}


def test_a_kept_probe_is_read_and_a_stale_one_replaced(libvirt_embed_uri: str,
                                                       tmp_path: Path) -> None:
    # This process's root has probed QEMU once asked.
    libvirt_host.Host(libvirt_embed_uri).domain_capabilities("x86_64", None, "qemu")
    session_root = Path(parse_qs(urlsplit(libvirt_embed_uri).query)["root"][0])
    kept = tmp_path / "kept"
    assert capabilities_cache.keep(session_root, kept) >= 1
    probed = _probes(session_root)

    # A new root seeded with it: libvirt answers from the file and leaves it as it was.
    seeded = _root(tmp_path / "seeded")
    capabilities_cache.seed(seeded, kept)
    before = {p.name: p.stat().st_mtime_ns for p in (seeded / IN_ROOT).glob("*.xml")}
    _ask(seeded)
    assert _probes(seeded) == probed
    assert {p.name: p.stat().st_mtime_ns for p in (seeded / IN_ROOT).glob("*.xml")} == before

    # A probe made by another libvirt version does not hold: libvirt probes again and
    # writes its own, which is then the one kept.
    stale = tmp_path / "stale"
    for name, text in probed.items():
        (stale / name).parent.mkdir(parents=True, exist_ok=True)
        (stale / name).write_bytes(text.replace(b"<selfvers>", b"<selfvers>1"))
    old = _root(tmp_path / "old")
    capabilities_cache.seed(old, stale)
    _ask(old)
    assert _probes(old).keys() == probed.keys()
    assert all(b"<selfvers>1" not in text for text in _probes(old).values())
    assert capabilities_cache.keep(old, stale) == len(probed)
