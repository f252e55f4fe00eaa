"""The compute API's policy rules reach operators' usual tool: oslopolicy-sample-generator
finds them under the ``moorage.compute`` namespace (an ``oslo.policy.policies`` entry
point), each with its default and the operations it guards; placement's stay under
``moorage``.

The entry points are those of the installed package: after a change to pyproject.toml,
``pip install -e .`` again."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import yaml

from moorage.api import policy as compute_policy
from moorage.placement import policy as placement_policy

GENERATOR = Path(sys.executable).with_name("oslopolicy-sample-generator")


def _namespaces() -> dict[str, str]:
    return {e.name: e.value for e in entry_points(group="oslo.policy.policies")}


def _sample(namespace: str, tmp_path: Path) -> str:
    output = tmp_path / f"{namespace}.yaml"
    result = subprocess.run([str(GENERATOR), "--namespace", namespace, "--output-file",
                             str(output)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return output.read_text()


def test_both_namespaces_are_registered() -> None:
    namespaces = _namespaces()
    assert namespaces.get("moorage.compute") == "moorage.api.policy:list_rules", (
        "the moorage.compute entry point is not installed: pip install -e . again")
    assert namespaces.get("moorage") == "moorage.placement.policy:list_rules"


@pytest.mark.parametrize(("rule", "default", "operation"), [
    ("os_compute_api:servers:create", "rule:project_member_or_admin", "POST /v2.1/servers"),
    ("os_compute_api:servers:index", "rule:project_reader_or_admin", "GET /v2.1/servers"),
    ("os_compute_api:os-services:list", "rule:context_is_admin", "GET /v2.1/os-services"),
    ("os_compute_api:os-flavor-manage:create", "rule:context_is_admin",
     "POST /v2.1/flavors"),
    ("moorage:scheduler:plan", "rule:project_member_or_admin", "POST /v2.1/scheduler/plan"),
    ("os_compute_api:os-keypairs:index", "(rule:context_is_admin) or user_id:%(user_id)s",
     "GET /v2.1/os-keypairs"),
    ("os_compute_api:os-availability-zone:detail", "rule:context_is_admin",
     "GET /v2.1/os-availability-zone/detail"),
    ("moorage:metrics", "rule:admin_api", "GET /metrics"),
])
def test_the_sample_documents_each_compute_rule(rule: str, default: str, operation: str,
                                                tmp_path: Path) -> None:
    sample = _sample("moorage.compute", tmp_path)
    # Each rule is a commented-out default, introduced by its description and the
    # operations it guards.
    block = sample[sample.index(f'#"{rule}": '):]
    line = block.splitlines()[0]
    assert line == f'#"{rule}": "{default}"'
    before = sample[:sample.index(f'#"{rule}": ')].rsplit("\n\n", 1)[-1]
    assert f"# {operation}" in " ".join(before.split()), before


def test_the_compute_sample_holds_every_rule_and_only_them(tmp_path: Path) -> None:
    sample = _sample("moorage.compute", tmp_path)
    # Uncommented, the sample is the policy file of the defaults.
    uncommented = "\n".join(line[1:] for line in sample.splitlines()
                            if line.startswith('#"'))
    rules = yaml.safe_load(uncommented)
    assert set(rules) == {r.name for r in compute_policy.list_rules()}
    assert not set(rules) & {r.name for r in placement_policy.list_rules()
                             if r.name.startswith("placement:")}
    placement_sample = _sample("moorage", tmp_path)
    assert '#"placement:allocation_candidates:list"' in placement_sample
    assert "os_compute_api" not in placement_sample
