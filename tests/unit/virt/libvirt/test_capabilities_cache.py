"""Keeping libvirt's QEMU probes across throwaway embedded roots (files only; the
functional test has libvirt read them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from moorage.virt.libvirt import capabilities_cache
from moorage.virt.libvirt.capabilities_cache import IN_ROOT


def _probe(root: Path, name: str, text: str) -> Path:
    (root / IN_ROOT).mkdir(parents=True, exist_ok=True)
    path = root / IN_ROOT / name
    path.write_text(text)
    return path


def test_a_probe_kept_from_one_root_seeds_the_next(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    _probe(tmp_path / "first", "abc.xml", "<qemuCaps>1</qemuCaps>")
    assert capabilities_cache.keep(tmp_path / "first", kept) == 1
    assert capabilities_cache.seed(tmp_path / "second", kept) == 1
    assert (tmp_path / "second" / IN_ROOT / "abc.xml").read_text() == "<qemuCaps>1</qemuCaps>"
    # Kept again unchanged: nothing to copy.
    assert capabilities_cache.keep(tmp_path / "first", kept) == 0


def test_a_root_keeps_its_own_probe(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    _probe(kept.parent / "old", "abc.xml", "old")
    capabilities_cache.keep(kept.parent / "old", kept)
    own = _probe(tmp_path / "root", "abc.xml", "own")
    assert capabilities_cache.seed(tmp_path / "root", kept) == 0
    assert own.read_text() == "own"


def test_a_new_probe_replaces_the_kept_one_whole(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    _probe(tmp_path / "a", "abc.xml", "probed by an older QEMU")
    capabilities_cache.keep(tmp_path / "a", kept)
    _probe(tmp_path / "b", "abc.xml", "probed again")
    assert capabilities_cache.keep(tmp_path / "b", kept) == 1
    assert (kept / "abc.xml").read_text() == "probed again"
    assert sorted(p.name for p in kept.iterdir()) == ["abc.xml"]  # no partial left


def test_nothing_kept_and_nothing_to_keep(tmp_path: Path) -> None:
    assert capabilities_cache.seed(tmp_path / "root", tmp_path / "absent") == 0
    assert not (tmp_path / "root").exists()
    assert capabilities_cache.keep(tmp_path / "root", tmp_path / "kept") == 0
    assert not (tmp_path / "kept").exists()


def test_kept_under_the_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert capabilities_cache.directory() == tmp_path / "moorage" / "qemu-capabilities"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert capabilities_cache.directory() == (tmp_path / "home" / ".cache" / "moorage"
                                              / "qemu-capabilities")
