"""The release notes are reno's, as OpenStack projects keep them: every note is a
YAML file of reno's sections, written (no template text left), and ``reno lint``
passes on the tree."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NOTES = ROOT / "releasenotes" / "notes"
# reno's sections (reno.config's default "sections"), and the prelude.
SECTIONS = {"prelude", "features", "issues", "upgrade", "deprecations", "critical",
            "security", "fixes", "other"}
NAME = re.compile(r"^[a-z0-9][a-z0-9-]*-[0-9a-f]{16}\.yaml$")
# What `reno new` writes for a section and that a note must replace.
TEMPLATE = ("Replace this text", "or remove this section")


def notes() -> list[Path]:
    return sorted(NOTES.glob("*.yaml"))


def test_there_are_notes() -> None:
    assert len(notes()) >= 10
    assert all(NAME.match(p.name) for p in notes()), [p.name for p in notes()]


@pytest.mark.parametrize("path", notes(), ids=lambda p: p.name)
def test_each_note_is_reno_sections_of_written_text(path: Path) -> None:
    note = yaml.safe_load(path.read_text())
    assert isinstance(note, dict) and note, path.name
    assert set(note) <= SECTIONS, set(note) - SECTIONS
    for section, value in note.items():
        entries = [value] if section == "prelude" else value
        assert isinstance(entries, list) and entries, section
        for entry in entries:
            assert isinstance(entry, str) and len(entry.split()) >= 8, (section, entry)
            assert not any(t in entry for t in TEMPLATE), (section, entry)


def test_one_note_says_what_exists_today() -> None:
    preludes = [p for p in notes() if "prelude" in yaml.safe_load(p.read_text())]
    assert [p.name.rsplit("-", 1)[0] for p in preludes] == ["moorage-today"]


def test_reno_lint_passes() -> None:
    reno = Path(sys.executable).with_name("reno")
    assert reno.exists(), f"reno is not installed beside {sys.executable} (the test extra)"
    assert (ROOT / ".git").exists(), f"reno reads the notes through git; {ROOT} is no clone"
    result = subprocess.run([str(reno), "lint"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
