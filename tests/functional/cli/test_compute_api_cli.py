"""``moorage flavor|image|host|aggregate`` against the real compute API over HTTP
(the ``compute_api`` fixture, with a real placement behind it).

Each test drives the commands as a user would and checks what the API then holds,
through the API itself; hosts register through the agents' heartbeat route.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.api_fixtures import ComputeApi
from tests.cli_runner import run_moorage
from tests.functional.cli.test_compute_standin import Run

Moorage = Callable[..., Run]


@pytest.fixture
def moorage(capsys: pytest.CaptureFixture[str], compute_api: ComputeApi) -> Moorage:
    """Run ``moorage ARGS --os-compute-url API`` in-process, as admin by default."""

    def run(*argv: str) -> Run:
        return run_moorage(capsys, [*argv, "--os-compute-url", compute_api.url])

    return run


def ok(run: Run) -> Any:
    """What a successful command printed: decoded when it is ``-f json`` output."""
    assert run.code == 0, run.err
    return json.loads(run.out) if run.out.startswith(("{", "[")) else run.out


def failed(run: Run) -> str:
    """The one line a failed command printed."""
    assert (run.code, run.out) == (1, ""), run
    assert run.err.count("\n") == 1 and "Traceback" not in run.err, run.err
    return run.err.rstrip("\n")


def register(api: ComputeApi, host: str, driver: str, nodes: list[str] | None = None) -> None:
    """What a compute agent does at start: its heartbeat creates its service."""
    api.internal("PUT", f"/internal/services/{host}", expect=200, json={
        "binary": "nova-compute", "driver": driver, "nodes": nodes or [host],
        "agent_url": "http://127.0.0.1:9", "supported_instances": [["x86_64", "qemu", "hvm"]],
        "hypervisor_version": 7002000, "version": "test"})


# -- flavors -----------------------------------------------------------------------------
def test_flavor_lifecycle(moorage: Moorage, compute_api: ComputeApi) -> None:
    created = ok(moorage("flavor", "create", "small", "--ram", "512", "--vcpus", "2",
                         "--disk", "5", "--id", "f-small", "--property",
                         "trait:HW_CPU_X86_AVX2=required", "-f", "json"))
    assert created == {"id": "f-small", "name": "small", "ram": 512, "vcpus": 2, "disk": 5,
                       "ephemeral": 0, "swap": 0,
                       "properties": {"trait:HW_CPU_X86_AVX2": "required"}}
    ok(moorage("flavor", "set", "small", "--property", "resources:VCPU=0",
               "--property", "trait:COMPUTE_STATUS_DISABLED=forbidden"))
    ok(moorage("flavor", "unset", "f-small", "--property", "trait:HW_CPU_X86_AVX2"))
    shown = ok(moorage("flavor", "show", "small", "-f", "json"))
    assert shown["properties"] == {"resources:VCPU": "0",
                                   "trait:COMPUTE_STATUS_DISABLED": "forbidden"}
    listed = ok(moorage("flavor", "list", "--long", "-f", "json"))
    assert [(f["name"], f["properties"]) for f in listed] == [("small", shown["properties"])]
    ok(moorage("flavor", "delete", "small"))
    assert ok(moorage("flavor", "list", "-f", "json")) == []


def test_flavor_refused_leaves_nothing(moorage: Moorage, compute_api: ComputeApi) -> None:
    line = failed(moorage("flavor", "create", "bad", "--property", "trait:NOT_A_TRAIT=required"))
    assert line.startswith("POST /flavors: 400 Bad Request: ")
    assert "NOT_A_TRAIT" in line
    line = failed(moorage("flavor", "create", "bad", "--property", "trait:CUSTOM_X=sometimes"))
    assert "sometimes" in line and "required" in line and "forbidden" in line
    assert ok(moorage("flavor", "list", "-f", "json")) == []


def test_flavor_by_name_errors(moorage: Moorage) -> None:
    assert failed(moorage("flavor", "show", "huge")) == (
        "No flavor with a name or ID of 'huge' exists.")
    ok(moorage("flavor", "create", "small", "-f", "json"))
    line = failed(moorage("flavor", "create", "small"))
    assert line.startswith("POST /flavors: 409 Conflict: "), line


def test_flavor_create_needs_an_administrator(moorage: Moorage) -> None:
    line = failed(moorage("flavor", "create", "mine", "--os-token", "demo:demo-project"))
    assert line.startswith("POST /flavors: 403 Forbidden: "), line


# -- images ---------------------------------------------------------------------------------
def test_image_lifecycle(moorage: Moorage) -> None:
    created = ok(moorage("image", "create", "cirros", "--disk-format", "qcow2",
                         "--container-format", "bare", "--property", "hw_vif_model=e1000",
                         "--property", "trait:CUSTOM_GOLD=required", "-f", "json"))
    assert created["name"] == "cirros" and created["disk_format"] == "qcow2"
    assert created["properties"] == {"hw_vif_model": "e1000",
                                     "trait:CUSTOM_GOLD": "required"}
    ok(moorage("image", "set", "cirros", "--property", "hw_disk_bus=scsi", "--name", "cirros2",
               "--min-ram", "64"))
    ok(moorage("image", "unset", "cirros2", "--property", "hw_vif_model"))
    shown = ok(moorage("image", "show", created["id"], "-f", "json"))
    assert shown["name"] == "cirros2" and shown["min_ram"] == 64
    assert shown["properties"] == {"hw_disk_bus": "scsi", "trait:CUSTOM_GOLD": "required"}
    listed = ok(moorage("image", "list", "-f", "json"))
    assert listed == [{"id": created["id"], "name": "cirros2", "disk_format": "qcow2",
                       "container_format": "bare"}]
    ok(moorage("image", "delete", "cirros2"))
    assert ok(moorage("image", "list", "-f", "json")) == []


@pytest.mark.parametrize(("argv", "named"), [
    (["--property", "hw_vif_model=rtl9999"], "hw_vif_model"),
    (["--property", "hw_disk_bus=floppy"], "hw_disk_bus"),
    (["--disk-format", "exe"], "disk_format"),
    (["--property", "trait:NOT_A_TRAIT=required"], "NOT_A_TRAIT"),
])
def test_image_bad_properties(moorage: Moorage, argv: list[str], named: str) -> None:
    line = failed(moorage("image", "create", "bad", *argv))
    assert line.startswith("POST /image/v2/images: 400 Bad Request: ") and named in line, line
    assert ok(moorage("image", "list", "-f", "json")) == []


# -- hosts ------------------------------------------------------------------------------------
def test_host_list_and_set(moorage: Moorage, compute_api: ComputeApi) -> None:
    register(compute_api, "kvm-1", "libvirt")
    register(compute_api, "bm-1", "ironic", ["node-a", "node-b"])
    hosts = ok(moorage("host", "list", "-f", "json"))
    assert hosts == [
        {"host": "bm-1", "driver": "ironic", "status": "enabled", "state": "up",
         "servers": 0},
        {"host": "kvm-1", "driver": "libvirt", "status": "enabled", "state": "up",
         "servers": 0},
    ]
    ok(moorage("host", "set", "kvm-1", "--disable", "--reason", "maintenance"))
    ok(moorage("host", "set", "bm-1", "--force-down"))
    long = {h["host"]: h for h in ok(moorage("host", "list", "--long", "-f", "json"))}
    assert (long["kvm-1"]["status"], long["kvm-1"]["disabled_reason"]) == (
        "disabled", "maintenance")
    assert (long["bm-1"]["state"], long["bm-1"]["forced_down"]) == ("down", True)
    assert long["bm-1"]["nodes"] == ["node-a", "node-b"]
    ok(moorage("host", "set", "kvm-1", "--enable"))
    ok(moorage("host", "set", "bm-1", "--unforce-down"))
    table = ok(moorage("host", "list", "-f", "json", "-c", "host", "-c", "status",
                       "-c", "state"))
    assert table == [{"host": "bm-1", "status": "enabled", "state": "up"},
                     {"host": "kvm-1", "status": "enabled", "state": "up"}]
    assert failed(moorage("host", "set", "kvm-9", "--disable")) == (
        "No compute host 'kvm-9' (known hosts: bm-1, kvm-1).")


# -- aggregates ----------------------------------------------------------------------------
def test_aggregate_lifecycle(moorage: Moorage, compute_api: ComputeApi) -> None:
    register(compute_api, "kvm-1", "libvirt")
    register(compute_api, "kvm-2", "libvirt")
    created = ok(moorage("aggregate", "create", "fast", "--zone", "az1",
                         "--property", "ssd=true", "-f", "json"))
    assert (created["name"], created["availability_zone"]) == ("fast", "az1")
    assert created["properties"]["ssd"] == "true"
    added = ok(moorage("aggregate", "add", "host", "fast", "kvm-1", "-f", "json"))
    assert added["hosts"] == ["kvm-1"]
    ok(moorage("aggregate", "add", "host", str(created["id"]), "kvm-2"))
    ok(moorage("aggregate", "set", "fast", "--name", "faster", "--property",
               "filter_tenant_id=p1"))
    ok(moorage("aggregate", "unset", "faster", "--property", "ssd"))
    removed = ok(moorage("aggregate", "remove", "host", "faster", "kvm-1", "-f", "json"))
    assert removed["hosts"] == ["kvm-2"]
    shown = ok(moorage("aggregate", "show", "faster", "-f", "json"))
    assert shown["name"] == "faster" and shown["hosts"] == ["kvm-2"]
    assert "ssd" not in shown["properties"]
    assert shown["properties"]["filter_tenant_id"] == "p1"
    listed = ok(moorage("aggregate", "list", "-f", "json"))
    assert [a["name"] for a in listed] == ["faster"]
    assert failed(moorage("aggregate", "show", "slow")) == (
        "No aggregate with a name or ID of 'slow' exists.")
    ok(moorage("aggregate", "remove", "host", "faster", "kvm-2"))
    ok(moorage("aggregate", "delete", "faster"))
    assert ok(moorage("aggregate", "list", "-f", "json")) == []


# -- servers: what does not need a running build --------------------------------------------------
def test_server_create_with_unknown_flavor_or_image(moorage: Moorage) -> None:
    ok(moorage("flavor", "create", "small", "-f", "json"))
    ok(moorage("image", "create", "cirros", "-f", "json"))
    assert failed(moorage("server", "create", "web", "--flavor", "huge", "--image",
                          "cirros")) == "No flavor with a name or ID of 'huge' exists."
    assert failed(moorage("server", "create", "web", "--flavor", "small", "--image",
                          "nope")) == "No image with a name or ID of 'nope' exists."
    assert ok(moorage("server", "list", "-f", "json")) == []
    assert failed(moorage("server", "show", "web")) == (
        "No server with a name or ID of 'web' exists.")


# -- the endpoint as a catalog names it --------------------------------------------------
@pytest.mark.parametrize("suffix", ["/v2.1", "/v2.1/", "/v2/0123456789abcdef0123456789abcdef"])
def test_a_catalog_url_ending_in_its_version_is_understood(
        capsys: pytest.CaptureFixture[str], compute_api: ComputeApi, suffix: str) -> None:
    # Before, the client added /v2.1 to it again and the API answered a bare 404.
    flavors = ok(run_moorage(capsys, ["flavor", "list", "-f", "json", "--os-compute-url",
                                      compute_api.url + suffix]))
    assert isinstance(flavors, list)
