"""Options a file sets that nothing reads are named at start (``conf.unknown``): per
file and section, only in the sections the service reads, deprecated names known."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from moorage.conf import load_config, unknown

ROOT = Path(__file__).resolve().parents[3]


def _write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_each_file_and_section_names_what_nothing_reads(tmp_path: Path) -> None:
    nova = _write(tmp_path / "nova.conf", (
        "[DEFAULT]\nmy_ip = 192.0.2.1\ndebug = true\nlog-file = /tmp/x.log\n"
        "[placement]\nauth_type = password\nusername = nova\ntenant_name = service\n"
        "region = RegionOne\n"
        "[scheduler]\nfilter_hosts_by_image_type_support = true\n"
        "[api_database]\nconnection = sqlite:////tmp/api.sqlite\n"
        "[neutron]\nurl = http://neutron\n"))
    typo = _write(tmp_path / "conf.d" / "10-prefilter.conf",
                  "[scheduler]\nimage_metadata_prefiltr = true\n")
    conf = load_config([nova], config_dirs=[str(tmp_path / "conf.d")])
    found = unknown.unknown_options(conf)
    assert [(f.file, f.section, f.names) for f in found] == [
        (nova, "DEFAULT", ("my_ip",)),
        (nova, "placement", ("region",)),  # keystoneauth's is region_name
        (typo, "scheduler", ("image_metadata_prefiltr",)),
    ]
    assert found[2].message() == (f"{typo} [scheduler]: image_metadata_prefiltr: no such "
                                  "option here; ignored (misspelt, or another service's?)")


def test_the_sample_sets_nothing_unknown() -> None:
    conf = load_config([str(ROOT / "etc" / "moorage.conf.sample")])
    assert unknown.unknown_options(conf) == []


def test_a_service_warns_once_per_section(tmp_path: Path,
                                          caplog: pytest.LogCaptureFixture) -> None:
    conf = load_config([_write(tmp_path / "m.conf", "[DEFAULT]\na = 1\nb = 2\n")])
    with caplog.at_level(logging.WARNING):
        unknown.warn(conf, logging.getLogger("test"))
    assert caplog.messages == [f"{tmp_path / 'm.conf'} [DEFAULT]: a, b: no such options "
                               "here; ignored (misspelt, or another service's?)"]
