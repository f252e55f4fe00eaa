"""Scheduling decisions over real services: NoValidHost explained per constraint, the
decisions of a successful boot, and the dry run (POST /v2.1/scheduler/plan).

Four fake hosts, both prefilters on. Each trait a qcow2 + vmxnet3 image needs
exists somewhere, but no host has both:

    q1, q2   qcow2 (and raw)   virtio
    v1       raw only          vmxnet3, virtio
    big      qcow2 (and raw)   virtio          (most memory: the weighers' favourite)
"""

from __future__ import annotations

from typing import Any

import pytest

from moorage.scheduler.filter_records import Constraint, FilterRecord
from tests.functional.servers.conftest import fake_host

QCOW2 = "COMPUTE_IMAGE_TYPE_QCOW2"
VMXNET3 = "COMPUTE_NET_VIF_MODEL_VMXNET3"
VIRTIO = "COMPUTE_NET_VIF_MODEL_VIRTIO"
USER = "alice:project-a"
HOSTS = ("q1", "q2", "v1", "big")


@pytest.fixture
def cloud(make_cloud: Any) -> Any:
    return make_cloud([
        fake_host("q1", traits=[VIRTIO], unsupported=[VMXNET3], memory_mb=16384),
        fake_host("q2", traits=[VIRTIO], unsupported=[VMXNET3], memory_mb=16384),
        fake_host("v1", traits=[VIRTIO, VMXNET3], image_types=("raw",), memory_mb=16384),
        fake_host("big", traits=[VIRTIO], unsupported=[VMXNET3], memory_mb=65536),
    ], scheduler={"image_metadata_prefilter": True,
                  "query_placement_for_image_type_support": True})


def _exclusion(decisions: dict[str, Any], key: str) -> dict[str, Any]:
    return next(e for e in decisions["exclusions"] if e["key"] == key)


def _used(cloud: Any) -> int:
    """Everything every provider has allocated, summed."""
    providers = cloud.placement.request("GET", "/resource_providers")["resource_providers"]
    return sum(sum(cloud.placement.request(
        "GET", f"/resource_providers/{p['uuid']}/usages")["usages"].values())
        for p in providers)


def _walk(value: Any) -> list[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_walk(v))]
    if isinstance(value, list):
        return [s for v in value for s in _walk(v)]
    return [value] if isinstance(value, str) else []


def test_no_host_has_all_is_explained_per_constraint_with_hosts(cloud: Any) -> None:
    flavor = cloud.flavor("small")
    image = cloud.image("vmx", "qcow2", {"hw_vif_model": "vmxnet3"})
    server = cloud.boot_and_wait(flavor, image)
    assert server["status"] == "ERROR"
    message = server["fault"]["message"]
    assert message.startswith("No valid host was found. placement returned no allocation "
                              "candidates for: ")
    assert (f"required host trait {VMXNET3} (from image property hw_vif_model=vmxnet3): "
            "excludes 3 of 4 hosts") in message
    assert (f"required host trait {QCOW2} (from image disk_format=qcow2): excludes 1 of 4 "
            "hosts") in message
    assert f"no host has all of {QCOW2} + {VMXNET3} (3 and 1 hosts have each)" in message
    assert (f"smallest change: without required host trait {VMXNET3} (from image property "
            "hw_vif_model=vmxnet3), 3 hosts satisfy every other constraint") in message
    for host in HOSTS:
        assert host not in message
    # The admin sees which hosts, in the fault and in the scheduling record alike.
    decisions = server["fault"]["details"]["decisions"]
    assert decisions == server["moorage:scheduling"]["decisions"]
    assert sorted(_exclusion(decisions, VMXNET3)["hosts"]) == ["big", "q1", "q2"]
    assert _exclusion(decisions, QCOW2)["hosts"] == ["v1"]
    assert decisions["deciding"] == VMXNET3
    assert "chosen" not in decisions and decisions["hosts"] == 4  # empty fields left out


def test_a_user_sees_counts_never_hosts(cloud: Any) -> None:
    flavor = cloud.flavor("small")
    image = cloud.image("vmx", "qcow2", {"hw_vif_model": "vmxnet3"})
    response = cloud.call("POST", "/servers", {"server": {"networks": "none",
        "name": "mine", "flavorRef": flavor, "imageRef": image}}, token=USER)
    assert response.status_code == 202, response.text
    uuid = response.json()["server"]["id"]
    cloud.wait(uuid)
    server = cloud.call("GET", f"/servers/{uuid}", token=USER).json()["server"]
    assert server["status"] == "ERROR"
    decisions = server["fault"]["details"]["decisions"]
    # vmxnet3 leaves one host of four: below the floor (2), neither count is told.
    vmxnet3 = _exclusion(decisions, VMXNET3)
    assert (vmxnet3["excluded"], vmxnet3["of"], vmxnet3["remaining"]) == (None, 4, None)
    assert "leaves fewer than 2 of the 4 hosts" in server["fault"]["message"]
    assert decisions["together"]["satisfied"] == [3, None]
    strings = _walk(server)
    for host in HOSTS:
        assert host not in strings, host
        assert not any(host in s.split() for s in strings), host


def test_a_boot_records_its_decisions(cloud: Any) -> None:
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("plain", "qcow2"))
    assert server["status"] == "ACTIVE"
    decisions = server["moorage:scheduling"]["decisions"]
    assert decisions["chosen"] == server["OS-EXT-SRV-ATTR:host"] == "big"
    assert _exclusion(decisions, QCOW2)["hosts"] == ["v1"]
    assert decisions["passing"] == 3 and decisions["weighed"][0]["host"] == "big"
    added = {f["name"]: FilterRecord.from_json(f).added
             for f in server["moorage:scheduling"]["filters"]}
    assert [(a.constraint, a.names) for a in added["require_image_type_support"]] == [
        (Constraint.ROOT_REQUIRED, (QCOW2,))]


def test_the_dry_run_matches_the_boot_that_follows(cloud: Any) -> None:
    flavor = cloud.flavor("small")
    image = cloud.image("plain", "qcow2")
    body = {"server": {"name": "vm", "flavorRef": flavor, "imageRef": image}}
    before = cloud.ok("GET", "/servers")["servers"]
    plan = cloud.ok("POST", "/scheduler/plan", body)["plan"]
    assert plan["schedulable"] is True and plan["operation"] == "build"
    assert cloud.ok("GET", "/servers")["servers"] == before  # nothing written
    assert _used(cloud) == 0  # nothing claimed
    added = {f["name"]: FilterRecord.from_json(f).added for f in plan["filters"] if f["ran"]}
    assert [(a.constraint, a.names) for a in added["require_image_type_support"]] == [
        (Constraint.ROOT_REQUIRED, (QCOW2,))]
    server = cloud.boot_and_wait(flavor, image)
    assert server["OS-EXT-SRV-ATTR:host"] == plan["host"] == "big"
    assert plan["decisions"]["weighed"] == server["moorage:scheduling"]["decisions"][
        "weighed"]
    assert (plan["certain"], plan["may_differ"]) == (True, [])
    # The next plan sees the first server's usage, as the next boot will.
    again = cloud.ok("POST", "/scheduler/plan", body)["plan"]
    second = cloud.boot_and_wait(flavor, image)
    assert second["OS-EXT-SRV-ATTR:host"] == again["host"]


def test_a_plan_says_when_the_boot_may_choose_another_host(make_cloud: Any) -> None:
    """host_subset_size 2 and randomized candidates: the plan is not certain, names each
    source and the hosts the boot may choose from, and the boot lands among them. A
    member reads the sources without the hosts."""
    cloud = make_cloud([fake_host(name, memory_mb=16384) for name in ("e1", "e2", "e3")],
                       filter_scheduler={"host_subset_size": 2},
                       placement={"randomize_allocation_candidates": True})
    flavor = cloud.flavor("small")
    image = cloud.image("plain", "raw")
    body = {"server": {"name": "vm", "flavorRef": flavor, "imageRef": image}}
    plan = cloud.ok("POST", "/scheduler/plan", body)["plan"]
    assert (plan["schedulable"], plan["certain"]) == (True, False)
    sources = {d["source"]: d for d in plan["may_differ"]}
    assert set(sources) == {"[placement] randomize_allocation_candidates",
                            "[filter_scheduler] host_subset_size"}
    # three equal hosts, all tied for the best weight: any of them, in placement's order
    tied = sources["[placement] randomize_allocation_candidates"]
    assert sorted(tied["hosts"]) == ["e1", "e2", "e3"]
    assert "tied for the best weight" in tied["detail"]
    subset = sources["[filter_scheduler] host_subset_size"]
    assert len(subset["hosts"]) == 2 and plan["host"] in subset["hosts"] + tied["hosts"]
    server = cloud.boot_and_wait(flavor, image)
    assert server["OS-EXT-SRV-ATTR:host"] in tied["hosts"]
    mine = cloud.call("POST", "/scheduler/plan", body, token=USER).json()["plan"]
    assert mine["certain"] is False
    assert [set(d) for d in mine["may_differ"]] == [{"source", "detail"}] * 2
    assert not {"e1", "e2", "e3"} & set(_walk(mine))


def test_a_plan_with_no_host_says_why_and_a_user_sees_no_host(cloud: Any) -> None:
    flavor = cloud.flavor("small")
    image = cloud.image("vmx", "qcow2", {"hw_vif_model": "vmxnet3"})
    body = {"server": {"name": "vm", "flavorRef": flavor, "imageRef": image}}
    plan = cloud.ok("POST", "/scheduler/plan", body)["plan"]
    assert plan["schedulable"] is False and plan["host"] is None
    assert f"no host has all of {QCOW2} + {VMXNET3}" in plan["message"]
    assert sorted(_exclusion(plan["decisions"], VMXNET3)["hosts"]) == ["big", "q1", "q2"]
    mine = cloud.call("POST", "/scheduler/plan", body, token=USER)
    assert mine.status_code == 200, mine.text
    for host in HOSTS:
        assert host not in _walk(mine.json())
    ok = cloud.call("POST", "/scheduler/plan", {"server": {
        "name": "vm", "flavorRef": flavor, "imageRef": cloud.image("p", "raw")}}, token=USER)
    assert ok.json()["plan"]["schedulable"] is True and ok.json()["plan"]["host"] is None


def test_plan_a_resize_and_a_migration(cloud: Any) -> None:
    small = cloud.flavor("small")
    server = cloud.boot_and_wait(small, cloud.image("raw", "raw"))
    source = server["OS-EXT-SRV-ATTR:host"]
    bigger = cloud.flavor("bigger", ram=1024)
    resize = cloud.ok("POST", "/scheduler/plan", {"resize": {
        "server_id": server["id"], "flavorRef": bigger}})["plan"]
    assert resize["operation"] == "resize" and resize["schedulable"]
    assert resize["host"] != source
    ignored = _exclusion(resize["decisions"], "ignore_hosts")
    assert ignored["hosts"] == [source]
    migrate = cloud.ok("POST", "/scheduler/plan", {"migrate": {
        "server_id": server["id"], "host": "v1"}})["plan"]
    assert migrate["host"] == "v1"
    # Nothing moved.
    assert cloud.show(server["id"])["status"] == "ACTIVE"
    assert [cloud.host_of_provider(rp) for rp in cloud.allocations(server["id"])] == [source]


@pytest.mark.parametrize(("body", "named"), [
    ({"server": {"name": "vm", "flavorRef": "nope", "imageRef": "x"}}, "Flavor nope"),
    ({"resize": {"flavorRef": "1"}}, "server_id"),
    ({"migrate": {"server_id": "0b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a41"}},
     "0b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a41"),
    ({"boot": {}}, "exactly one of"),
    ({"server": "vm"}, "must be an object"),
])
def test_bad_plans_name_what_is_wrong(cloud: Any, body: dict[str, Any], named: str) -> None:
    response = cloud.call("POST", "/scheduler/plan", body)
    assert 400 <= response.status_code < 500, response.text
    assert named in response.text
    assert cloud.ok("GET", "/servers")["servers"] == []


def test_a_users_active_server_names_no_host(cloud: Any) -> None:
    """A rescheduled build's owner sees its attempts' results and its decisions' counts,
    never a host: not in attempts, alternates, decisions, or the host fields."""
    flavor = cloud.flavor("small")
    image = cloud.image("vmx-raw", "raw", {"hw_vif_model": "vmxnet3"})
    response = cloud.call("POST", "/servers", {"server": {"networks": "none",
        "name": "mine", "flavorRef": flavor, "imageRef": image}}, token=USER)
    uuid = response.json()["server"]["id"]
    assert cloud.wait(uuid)["OS-EXT-SRV-ATTR:host"] == "v1"  # the admin's view
    for path in (f"/servers/{uuid}", "/servers/detail"):
        shown = cloud.call("GET", path, token=USER).json()
        strings = _walk(shown)
        for host in HOSTS:
            assert host not in strings, (path, host)
    server = cloud.call("GET", f"/servers/{uuid}", token=USER).json()["server"]
    assert server["status"] == "ACTIVE"
    assert all("host" not in a for a in server["moorage:scheduling"]["attempts"])
    assert "OS-EXT-SRV-ATTR:host" not in server


def test_a_users_failed_build_names_no_host(make_cloud: Any) -> None:
    """Every host refuses the spawn (prefilters off, so they are tried): the owner reads
    MaxRetriesExceeded with each refusal's reason, and no host name anywhere, the
    fault's message included; the admin still reads the hosts tried."""
    cloud = make_cloud([fake_host("refuser-a", unsupported=[VMXNET3]),
                        fake_host("refuser-b", unsupported=[VMXNET3])],
                       scheduler={"max_attempts": 2})
    flavor = cloud.flavor("small")
    image = cloud.image("vmx", "raw", {"hw_vif_model": "vmxnet3"})
    response = cloud.call("POST", "/servers", {"server": {"networks": "none",
        "name": "mine", "flavorRef": flavor, "imageRef": image}}, token=USER)
    uuid = response.json()["server"]["id"]
    admin = cloud.wait(uuid)
    assert admin["status"] == "ERROR"
    assert "refuser-a" in admin["fault"]["message"]
    for path in (f"/servers/{uuid}", "/servers/detail"):
        text = cloud.call("GET", path, token=USER).text
        assert "refuser" not in text, (path, text)
    fault = cloud.call("GET", f"/servers/{uuid}", token=USER).json()["server"]["fault"]
    assert fault["message"].startswith("Exceeded maximum number of retries.")
    assert fault["message"].count("UnsupportedHardware") == 2
    assert fault["details"]["kind"] == "MaxRetriesExceeded"


def test_with_the_prefilters_off_a_plan_names_the_host_that_will_refuse(
        make_cloud: Any) -> None:
    """The weighers favour ``q35`` (most memory), whose driver reports e1000 unsupported:
    the plan says so (the compute API keeps the host's own "no"), is not certain, and
    the boot that follows is refused there and rescheduled to ``pc``."""
    e1000 = "COMPUTE_NET_VIF_MODEL_E1000"
    cloud = make_cloud([fake_host("pc", traits=[e1000], memory_mb=16384),
                        fake_host("q35", unsupported=[e1000], memory_mb=65536)])
    flavor = cloud.flavor("small")
    image = cloud.image("legacy", "raw", {"hw_vif_model": "e1000"})
    body = {"server": {"name": "vm", "flavorRef": flavor, "imageRef": image}}
    plan = cloud.ok("POST", "/scheduler/plan", body)["plan"]
    assert (plan["host"], plan["alternates"], plan["certain"]) == ("q35", ["pc"], False)
    assert [(r["position"], r["host"], r["traits"]) for r in plan["refusals"]] == [
        (0, "q35", [f"{e1000} (hw_vif_model=e1000)"])]
    server = cloud.boot_and_wait(flavor, image)
    assert server["OS-EXT-SRV-ATTR:host"] == "pc"
    assert [a["host"] for a in server["moorage:scheduling"]["attempts"]] == ["q35", "pc"]
    mine = cloud.call("POST", "/scheduler/plan", body, token=USER).json()["plan"]
    assert [set(r) for r in mine["refusals"]] == [{"position", "traits", "detail"}]
    assert not {"pc", "q35"} & set(_walk(mine))
