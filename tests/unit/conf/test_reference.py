"""The committed configuration reference and sample are what the code generates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from moorage.conf import list_opts, load_config, reference

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


def _generated(tool: str, config: str, output: Path) -> str:
    """Run an oslo generator (``oslo_config.generator:main``...) with one of etc/'s
    files, as an operator would, writing ``output``."""
    module, _, function = tool.partition(":")
    done = subprocess.run(
        [sys.executable, "-c", f"import sys; from {module} import {function}; "
         f"sys.argv[0] = {tool!r}; sys.exit({function}())",
         "--config-file", str(ROOT / "etc" / config), "--output-file", str(output)],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return output.read_text()


def test_the_config_generator_file_names_every_namespace_the_services_read(
        tmp_path: Path) -> None:
    sample = _generated("oslo_config.generator:main", "moorage-config-generator.conf",
                        tmp_path / "moorage.conf")
    sections = {line.strip("[]") for line in sample.splitlines() if line.startswith("[")}
    ours = {group for group, _opts in list_opts()}
    # Moorage's groups, and the libraries' a service registers when it starts.
    assert sections == ours | {"keystone_authtoken", "oslo_policy"}
    assert "enable_proxy_headers_parsing" in sample and "www_authenticate_uri" in sample


def test_the_policy_generator_file_names_every_service(tmp_path: Path) -> None:
    sample = _generated("oslo_policy.generator:generate_sample",
                        "moorage-policy-generator.conf", tmp_path / "policy.yaml")
    for rule in ("placement:resource_providers:list", "os_compute_api:servers:create",
                 "get_images"):
        assert f'#"{rule}":' in sample
