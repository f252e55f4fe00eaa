"""Real clients against a started Moorage placement server, unchanged.

The openstack CLI with osc-placement and openstacksdk's placement proxy, from the
compat venv of tools/compat.sh (without it these tests fail, saying so). Both
authenticate with keystoneauth's ``admin_token`` plugin, which sends a fixed
X-Auth-Token to a fixed endpoint: with noauth2 the token ``admin`` is an admin.
Every result is checked through our own HTTP client as well.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import uuid
from typing import Any

import pytest

from tests.compat import upstream
from tests.conftest import PlacementClient

CLIENT_TIMEOUT = 120


def client_environment(url: str) -> dict[str, str]:
    """Only our endpoint and token: no clouds.yaml or OS_* of the caller leaks in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(OS_AUTH_TYPE="admin_token", OS_TOKEN="admin", OS_ENDPOINT=url,
               OS_CLIENT_CONFIG_FILE=os.devnull)
    return env


def tool(name: str) -> str:
    try:
        return str(upstream.venv_tool(name))
    except upstream.CompatVenvMissing as error:
        missing = str(error)
    pytest.fail(missing, pytrace=False)


def openstack(url: str, *args: str, version: str | None = None) -> Any:
    """Run ``openstack ARGS -f json``; the decoded output (None when it prints nothing)."""
    argv = [tool("openstack")]
    if version is not None:
        argv += ["--os-placement-api-version", version]
    argv += [*args, "-f", "json"]
    done = subprocess.run(argv, env=client_environment(url), capture_output=True,
                          text=True, timeout=CLIENT_TIMEOUT)
    assert done.returncode == 0, f"openstack {' '.join(args)}: {done.stderr}"
    return json.loads(done.stdout) if done.stdout.strip() else None


def openstack_no_output(url: str, *args: str, version: str | None = None) -> None:
    argv = [tool("openstack")]
    if version is not None:
        argv += ["--os-placement-api-version", version]
    done = subprocess.run([*argv, *args], env=client_environment(url), capture_output=True,
                          text=True, timeout=CLIENT_TIMEOUT)
    assert done.returncode == 0, f"openstack {' '.join(args)}: {done.stderr}"


SDK_PRELUDE = """
import json, sys, openstack
conn = openstack.connect(
    auth_type="admin_token", auth={"endpoint": sys.argv[1], "token": "admin"},
    placement_endpoint_override=sys.argv[1], placement_api_version="1.39")
placement = conn.placement
"""


def sdk(url: str, code: str) -> Any:
    """Run ``code`` with openstacksdk's ``placement`` proxy; the JSON it assigns to result."""
    script = SDK_PRELUDE + textwrap.dedent(code) + "\nprint(json.dumps(result))\n"
    done = subprocess.run([tool("python"), "-c", script, url], capture_output=True,
                          text=True, timeout=CLIENT_TIMEOUT, env=client_environment(url))
    assert done.returncode == 0, f"openstacksdk:\n{code}\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# -- the openstack CLI with osc-placement -----------------------------------

def test_cli_resource_provider_create_list_show_delete(
        shared_placement: PlacementClient) -> None:
    url, name = shared_placement.url, unique("cli-rp")
    created = openstack(url, "resource", "provider", "create", name)
    rp = created["uuid"]
    assert created["name"] == name and created["generation"] == 0
    listed = openstack(url, "resource", "provider", "list", "--name", name, version="1.14")
    assert [(p["uuid"], p["root_provider_uuid"]) for p in listed] == [(rp, rp)]
    shown = openstack(url, "resource", "provider", "show", rp)
    assert (shown["uuid"], shown["name"]) == (rp, name)
    openstack_no_output(url, "resource", "provider", "delete", rp)
    shared_placement.get(f"/resource_providers/{rp}", expect=404)


def test_cli_inventory_set_and_list(shared_placement: PlacementClient) -> None:
    url, rp = shared_placement.url, shared_placement.create_provider(unique("cli-inv"))
    openstack(url, "resource", "provider", "inventory", "set", rp, "--resource", "VCPU=8",
              "--resource", "VCPU:allocation_ratio=4.0", "--resource", "MEMORY_MB=4096")
    stored = shared_placement.get(f"/resource_providers/{rp}/inventories",
                                  expect=200).json()["inventories"]
    assert (stored["VCPU"]["total"], stored["VCPU"]["allocation_ratio"]) == (8, 4.0)
    assert stored["MEMORY_MB"]["total"] == 4096
    listed = openstack(url, "resource", "provider", "inventory", "list", rp)
    assert {i["resource_class"]: i["total"] for i in listed} == {"VCPU": 8, "MEMORY_MB": 4096}


def test_cli_trait_list_create_and_set(shared_placement: PlacementClient) -> None:
    url, rp = shared_placement.url, shared_placement.create_provider(unique("cli-trait"))
    custom = f"CUSTOM_CLI_{uuid.uuid4().hex[:8].upper()}"
    standard = {t["name"] for t in openstack(url, "trait", "list", version="1.6")}
    assert "HW_CPU_X86_AVX2" in standard
    openstack_no_output(url, "trait", "create", custom, version="1.6")
    openstack(url, "resource", "provider", "trait", "set", rp, "--trait", "HW_CPU_X86_AVX2",
              "--trait", custom, version="1.6")
    stored = shared_placement.get(f"/resource_providers/{rp}/traits", expect=200).json()
    assert sorted(stored["traits"]) == sorted(["HW_CPU_X86_AVX2", custom])
    listed = openstack(url, "resource", "provider", "trait", "list", rp, version="1.6")
    assert sorted(t["name"] for t in listed) == sorted(["HW_CPU_X86_AVX2", custom])


def test_cli_aggregate_set_and_list(shared_placement: PlacementClient) -> None:
    url, rp = shared_placement.url, shared_placement.create_provider(unique("cli-agg"))
    aggregates = sorted(str(uuid.uuid4()) for _ in range(2))
    openstack(url, "resource", "provider", "aggregate", "set", rp, "--generation",
              str(shared_placement.generation(rp)), *(f"--aggregate={a}" for a in aggregates),
              version="1.19")
    stored = shared_placement.get(f"/resource_providers/{rp}/aggregates", expect=200).json()
    assert sorted(stored["aggregates"]) == aggregates
    listed = openstack(url, "resource", "provider", "aggregate", "list", rp, version="1.19")
    assert sorted(a["uuid"] for a in listed) == aggregates


def _provider_with_vcpus(client: PlacementClient, name: str, used: int) -> str:
    rp = client.create_provider(name)
    client.put(f"/resource_providers/{rp}/inventories", expect=200, json={
        "resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}})
    if used:
        client.put(f"/allocations/{uuid.uuid4()}", expect=204, json={
            "allocations": {rp: {"resources": {"VCPU": used}}}, "consumer_generation": None,
            "project_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4())}, version="1.28")
    return rp


def test_cli_usage_show(shared_placement: PlacementClient) -> None:
    rp = _provider_with_vcpus(shared_placement, unique("cli-usage"), used=3)
    shown = openstack(shared_placement.url, "resource", "provider", "usage", "show", rp)
    assert shown == [{"resource_class": "VCPU", "usage": 3}]


def test_cli_allocation_candidate_list(placement: PlacementClient) -> None:
    roomy = _provider_with_vcpus(placement, "roomy", used=2)
    _provider_with_vcpus(placement, "full", used=7)
    candidates = openstack(placement.url, "allocation", "candidate", "list",
                           "--resource", "VCPU=2", version="1.10")
    assert [(c["resource provider"], c["allocation"]) for c in candidates] == [
        (roomy, "VCPU=2")]


# -- openstacksdk's placement proxy ------------------------------------------

def test_sdk_resource_providers(shared_placement: PlacementClient) -> None:
    name = unique("sdk-rp")
    seen = sdk(shared_placement.url, f"""
        rp = placement.create_resource_provider(name={name!r})
        renamed = placement.update_resource_provider(rp, name={name!r} + "-renamed")
        got = placement.get_resource_provider(rp.id)
        listed = [p.id for p in placement.resource_providers(name=got.name)]
        result = {{"id": rp.id, "name": got.name, "generation": got.generation,
                   "root": got.root_provider_id, "listed": listed}}
    """)
    rp = seen["id"]
    assert seen == {"id": rp, "name": f"{name}-renamed", "generation": 0, "root": rp,
                    "listed": [rp]}
    assert shared_placement.get(f"/resource_providers/{rp}").json()["name"] == f"{name}-renamed"
    sdk(shared_placement.url, f"placement.delete_resource_provider({rp!r}); result = None")
    shared_placement.get(f"/resource_providers/{rp}", expect=404)


def test_sdk_inventories(shared_placement: PlacementClient) -> None:
    rp = shared_placement.create_provider(unique("sdk-inv"))
    seen = sdk(shared_placement.url, f"""
        placement.create_resource_provider_inventory({rp!r}, resource_class="VCPU", total=16)
        placement.create_resource_provider_inventory({rp!r}, resource_class="DISK_GB",
                                                     total=100, reserved=10)
        vcpu = [i for i in placement.resource_provider_inventories({rp!r})
                if i.resource_class == "VCPU"][0]
        # A listed inventory carries no generation: the caller passes the provider's.
        placement.update_resource_provider_inventory(vcpu, {rp!r}, total=32,
                                                     resource_provider_generation=2)
        placement.delete_resource_provider_inventory("DISK_GB", {rp!r})
        result = {{i.resource_class: i.total
                   for i in placement.resource_provider_inventories({rp!r})}}
    """)
    assert seen == {"VCPU": 32}
    stored = shared_placement.get(f"/resource_providers/{rp}/inventories").json()
    assert {rc: inv["total"] for rc, inv in stored["inventories"].items()} == {"VCPU": 32}
    assert stored["resource_provider_generation"] == 4


def test_sdk_traits_and_resource_classes(shared_placement: PlacementClient) -> None:
    trait = f"CUSTOM_SDK_{uuid.uuid4().hex[:8].upper()}"
    resource_class = f"CUSTOM_SDK_{uuid.uuid4().hex[:8].upper()}"
    seen = sdk(shared_placement.url, f"""
        placement.create_trait({trait!r})
        placement.create_resource_class(name={resource_class!r})
        result = {{"traits": [t.name for t in placement.traits()],
                   "classes": [c.name for c in placement.resource_classes()]}}
    """)
    assert {trait, "HW_CPU_X86_AVX2"} <= set(seen["traits"])
    assert {resource_class, "VCPU"} <= set(seen["classes"])
    shared_placement.get(f"/traits/{trait}", expect=204)
    shared_placement.get(f"/resource_classes/{resource_class}", expect=200)
