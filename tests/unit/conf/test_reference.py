"""The committed configuration reference and sample are what the code generates."""

from __future__ import annotations

from pathlib import Path

from moorage.conf import load_config, reference

ROOT = Path(__file__).resolve().parents[3]


def test_docs_configuration_is_generated_from_the_options() -> None:
    committed = (ROOT / "docs" / "configuration.md").read_text()
    assert committed == reference.render_markdown(), (
        "docs/configuration.md is stale: run `moorage config reference > docs/configuration.md`")


def test_sample_is_generated_and_loads(tmp_path: Path) -> None:
    committed = (ROOT / "etc" / "moorage.conf.sample").read_text()
    assert committed == reference.render_sample(), (
        "etc/moorage.conf.sample is stale: run `moorage config sample > etc/moorage.conf.sample`")
    conf = load_config([str(ROOT / "etc" / "moorage.conf.sample")])
    assert conf.placement_server.host == "127.0.0.1"
    assert conf.api.auth_strategy == "keystone"


def test_every_option_is_documented() -> None:
    text = reference.render_markdown()
    for group, opts in reference.groups():
        assert f"## [{group}]" in text
        for opt in opts:
            assert opt.help, f"[{group}] {opt.dest} has no help text"
            assert f"### `{opt.dest}`" in text
