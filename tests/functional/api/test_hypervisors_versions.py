"""os-hypervisors in every microversion's shape, over HTTP, with the values Moorage
knows: one case per gate, each asking on both sides of its version; then the values
(placement's inventories and usages, the servers on each node) and the refusals."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from moorage.api import microversion
from moorage.api.handlers.paging import MAX_LIMIT
from moorage.api.microversion import Gate, Version
from moorage.lifecycle.states import ServerStatus, TaskState
from moorage.placement.provider_names import provider_uuid
from tests.api_fixtures import SERVICE_TOKEN, ComputeApi
from tests.lifecycle_paths import bring

BEAT = {"binary": "nova-compute", "driver": "fake", "agent_url": "http://192.0.2.7:9",
        "supported_instances": [["x86_64", "qemu", "hvm"]], "hypervisor_version": 7002000}
BRIEF = {"id", "hypervisor_hostname", "state", "status"}
DETAIL = BRIEF | {"hypervisor_type", "hypervisor_version", "host_ip", "service"}
STATISTICS = {"vcpus", "memory_mb", "local_gb", "vcpus_used", "memory_mb_used",
              "local_gb_used", "free_ram_mb", "free_disk_gb", "current_workload",
              "running_vms", "disk_available_least", "cpu_info"}


def _beat(api: ComputeApi, host: str, nodes: list[str] | None = None) -> None:
    api.request("PUT", f"/internal/services/{host}", json={**BEAT, "nodes": nodes or [host]},
                token=None, headers={"X-Service-Token": SERVICE_TOKEN}, expect=200)


def _before(gate: Gate) -> Version:
    return Version(gate.version.major, gate.version.minor - 1)


def _ask(api: ComputeApi, version: Version, path: str) -> requests.Response:
    return api.admin("GET", "/v2.1" + path,
                     headers={"OpenStack-API-Version": f"compute {version}"})


def _ok(api: ComputeApi, version: Version, path: str) -> Any:
    answer = _ask(api, version, path)
    assert answer.status_code == 200, (version, path, answer.text)
    return answer.json()


@pytest.fixture
def api(compute_api: ComputeApi, placement: Any) -> ComputeApi:
    """h1 (a provider with inventories, 2 VCPU and 1 GB of disk allocated, two servers,
    one of them being rebuilt) and h2 (no provider yet, no server)."""
    _beat(compute_api, "h1")
    _beat(compute_api, "h2")
    rp = placement.create_provider("h1", rp_uuid=provider_uuid("h1"))
    placement.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": 0, "inventories": {
            "VCPU": {"total": 8, "reserved": 1, "allocation_ratio": 4.0},
            "MEMORY_MB": {"total": 4096, "reserved": 512},
            "DISK_GB": {"total": 100}}}, expect=200)
    placement.put(f"/allocations/{uuid.uuid4()}", json={
        "allocations": {rp: {"resources": {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 1}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None,
        "consumer_type": "INSTANCE"}, expect=204)
    database = compute_api.state.database
    bring(database, "00000000-0000-4000-8000-000000000001", (ServerStatus.ACTIVE, None),
          host="h1")
    bring(database, "00000000-0000-4000-8000-000000000002",
          (ServerStatus.REBUILD, TaskState.REBUILDING), host="h1")
    return compute_api


def _ids(api: ComputeApi, version: Version) -> dict[str, Any]:
    return {h["hypervisor_hostname"]: h["id"]
            for h in _ok(api, version, "/os-hypervisors")["hypervisors"]}


# -- one case per gate ----------------------------------------------------------------

@dataclass(frozen=True)
class GateCase:
    gate: Gate
    ask: Callable[[ComputeApi, Version], Any]
    before: Any
    at: Any


def _cpu_info(api: ComputeApi, version: Version) -> Any:
    return _ok(api, version, "/os-hypervisors/detail")["hypervisors"][0]["cpu_info"]


def _limit_one(api: ComputeApi, version: Version) -> Any:
    body = _ok(api, version, "/os-hypervisors?limit=1")
    return len(body["hypervisors"]), "hypervisors_links" in body


def _id_kinds(api: ComputeApi, version: Version) -> Any:
    shown = _ok(api, version, "/os-hypervisors/detail")["hypervisors"][0]
    return type(shown["id"]), type(shown["service"]["id"])


def _search_route(api: ComputeApi, version: Version) -> Any:
    return _ask(api, version, "/os-hypervisors/h/search").status_code


def _servers_route(api: ComputeApi, version: Version) -> Any:
    return _ask(api, version, "/os-hypervisors/h1/servers").status_code


def _pattern_parameter(api: ComputeApi, version: Version) -> Any:
    body = _ok(api, version, "/os-hypervisors?hypervisor_hostname_pattern=h2")
    return [h["hypervisor_hostname"] for h in body["hypervisors"]]


def _with_servers_on_h1(api: ComputeApi, version: Version) -> Any:
    body = _ok(api, version, "/os-hypervisors?with_servers=true")
    return [len(h.get("servers", ())) for h in body["hypervisors"]]


def _unknown_parameter(api: ComputeApi, version: Version) -> Any:
    return _ask(api, version, "/os-hypervisors?colour=red").status_code


def _servers_of_empty_node(api: ComputeApi, version: Version) -> Any:
    body = _ok(api, version, "/os-hypervisors/detail?with_servers=true")
    return [h.get("servers") for h in body["hypervisors"]]


def _statistics_route(api: ComputeApi, version: Version) -> Any:
    return _ask(api, version, "/os-hypervisors/statistics").status_code


def _uptime_route(api: ComputeApi, version: Version) -> Any:
    h1 = _ids(api, version)["h1"]
    return _ask(api, version, f"/os-hypervisors/{h1}/uptime").status_code


def _detail_keys(api: ComputeApi, version: Version) -> Any:
    return set(_ok(api, version, "/os-hypervisors/detail")["hypervisors"][0])


CASES = [
    GateCase(microversion.HYPERVISOR_CPU_INFO_OBJECT, _cpu_info, "{}", {}),
    GateCase(microversion.HYPERVISOR_PAGING, _limit_one, (2, False), (1, True)),
    GateCase(microversion.SERVICE_UUIDS, _id_kinds, (int, int), (str, str)),
    GateCase(microversion.SERVICE_UUIDS, _search_route, 200, 404),
    GateCase(microversion.SERVICE_UUIDS, _servers_route, 200, 404),
    GateCase(microversion.SERVICE_UUIDS, _pattern_parameter, ["h1", "h2"], ["h2"]),
    GateCase(microversion.SERVICE_UUIDS, _with_servers_on_h1, [0, 0], [2, 0]),
    GateCase(microversion.SERVICE_UUIDS, _unknown_parameter, 200, 400),
    GateCase(microversion.HYPERVISOR_SERVERS_ALWAYS, _servers_of_empty_node,
             [[{"name": "00000000-0000-4000-8000-000000000001",
                "uuid": "00000000-0000-4000-8000-000000000001"},
               {"name": "00000000-0000-4000-8000-000000000002",
                "uuid": "00000000-0000-4000-8000-000000000002"}], None],
             [[{"name": "00000000-0000-4000-8000-000000000001",
                "uuid": "00000000-0000-4000-8000-000000000001"},
               {"name": "00000000-0000-4000-8000-000000000002",
                "uuid": "00000000-0000-4000-8000-000000000002"}], []]),
    GateCase(microversion.HYPERVISOR_NO_STATISTICS, _statistics_route, 200, 404),
    GateCase(microversion.HYPERVISOR_NO_STATISTICS, _uptime_route, 501, 404),
    GateCase(microversion.HYPERVISOR_NO_STATISTICS, _detail_keys, DETAIL | STATISTICS,
             DETAIL | {"uptime"}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.gate.version}-{c.ask.__name__}")
def test_each_gate_changes_the_answer_at_its_version(api: ComputeApi, case: GateCase
                                                     ) -> None:
    assert case.ask(api, _before(case.gate)) == case.before
    assert case.ask(api, case.gate.version) == case.at


# -- the values -------------------------------------------------------------------------

def test_detail_values_come_from_placement_and_the_servers(api: ComputeApi) -> None:
    version = Version(2, 87)
    h1, h2 = _ok(api, version, "/os-hypervisors/detail")["hypervisors"]
    assert set(h1) == DETAIL | STATISTICS
    # Totals are placement's; used counts what is allocated and what the host keeps.
    assert {k: h1[k] for k in ("vcpus", "vcpus_used", "memory_mb", "memory_mb_used",
                               "free_ram_mb", "local_gb", "local_gb_used",
                               "free_disk_gb")} == {
        "vcpus": 8, "vcpus_used": 3, "memory_mb": 4096, "memory_mb_used": 1536,
        "free_ram_mb": 2560, "local_gb": 100, "local_gb_used": 1, "free_disk_gb": 99}
    assert (h1["running_vms"], h1["current_workload"]) == (2, 1)
    assert (h1["disk_available_least"], h1["hypervisor_type"], h1["hypervisor_version"],
            h1["host_ip"]) == (None, "fake", 7002000, "192.0.2.7")
    [service] = _ok(api, Version(2, 53), "/os-services?host=h1")["services"]
    assert _ok(api, Version(2, 53), "/os-hypervisors/detail")["hypervisors"][0][
        "service"] == {"host": "h1", "id": service["id"], "disabled_reason": None}
    # A node whose agent has not made its provider yet: nothing known, zeros.
    assert (h2["vcpus"], h2["memory_mb"], h2["running_vms"]) == (0, 0, 0)
    # The uuid of a hypervisor is its provider's.
    assert _ids(api, Version(2, 53)) == {"h1": provider_uuid("h1"),
                                         "h2": provider_uuid("h2")}
    newest = _ok(api, microversion.MAX_VERSION, "/os-hypervisors/detail")["hypervisors"][0]
    assert newest["uptime"] is None


def test_show_in_both_eras(api: ComputeApi) -> None:
    old, new = Version(2, 52), Version(2, 53)
    h1_id, h1_uuid = _ids(api, old)["h1"], _ids(api, new)["h1"]
    shown = _ok(api, old, f"/os-hypervisors/{h1_id}")["hypervisor"]
    assert (shown["id"], shown["hypervisor_hostname"], shown["running_vms"]) == (h1_id, "h1", 2)
    assert json.loads(_ok(api, Version(2, 27), f"/os-hypervisors/{h1_id}")[
        "hypervisor"]["cpu_info"]) == {}
    with_servers = _ok(api, new, f"/os-hypervisors/{h1_uuid}?with_servers=1")["hypervisor"]
    assert len(with_servers["servers"]) == 2
    for version, ident, status, words in [
            (old, "h1", 404, "Hypervisor with ID 'h1' could not be found."),
            (old, "999", 404, "Hypervisor with ID '999' could not be found."),
            (new, str(h1_id), 400, f"Invalid uuid {h1_id}"),
            (new, str(uuid.uuid4()), 404, "could not be found"),
            (new, f"{h1_uuid}?colour=red", 400, "'colour'"),
            (new, f"{h1_uuid}?with_servers=maybe", 400, "'with_servers'")]:
        answer = _ask(api, version, f"/os-hypervisors/{ident}")
        assert answer.status_code == status, (version, ident, answer.text)
        assert words in answer.text, (version, ident, answer.text)


def test_statistics_sum_the_enabled(api: ComputeApi) -> None:
    version = Version(2, 87)
    stats = _ok(api, version, "/os-hypervisors/statistics")["hypervisor_statistics"]
    assert stats == {"count": 2, "vcpus": 8, "vcpus_used": 3, "memory_mb": 4096,
                     "memory_mb_used": 1536, "free_ram_mb": 2560, "local_gb": 100,
                     "local_gb_used": 1, "free_disk_gb": 99, "current_workload": 1,
                     "running_vms": 2, "disk_available_least": 0}
    [h1] = _ok(api, Version(2, 53), "/os-services?host=h1")["services"]
    api.admin("PUT", f"/v2.1/os-services/{h1['id']}", json={"status": "disabled"},
              expect=200)
    stats = _ok(api, version, "/os-hypervisors/statistics")["hypervisor_statistics"]
    assert (stats["count"], stats["vcpus"], stats["running_vms"]) == (1, 0, 0)


def test_search_servers_and_uptime_before_their_retirement(api: ComputeApi) -> None:
    old = Version(2, 52)
    search = _ok(api, old, "/os-hypervisors/H_/search")["hypervisors"]
    assert [(h["hypervisor_hostname"], set(h)) for h in search] == [("h1", BRIEF),
                                                                    ("h2", BRIEF)]
    servers = _ok(api, old, "/os-hypervisors/h/servers")["hypervisors"]
    assert [len(h.get("servers", ())) for h in servers] == [2, 0]
    assert "servers" not in servers[1]  # none listed: no key, before 2.75
    for path in ("/os-hypervisors/h9/search", "/os-hypervisors/h9/servers"):
        answer = _ask(api, old, path)
        assert answer.status_code == 404, answer.text
        assert "No hypervisor matching 'h9' could be found." in answer.text
    # Uptime: no agent this API can reach tells it (501, nova's for a driver that
    # cannot tell); a down host is a 400, as in nova.
    h1 = _ids(api, old)["h1"]
    answer = _ask(api, old, f"/os-hypervisors/{h1}/uptime")
    assert answer.json()["notImplemented"]["code"] == 501
    [service] = _ok(api, Version(2, 53), "/os-services?host=h1")["services"]
    api.admin("PUT", f"/v2.1/os-services/{service['id']}", json={"forced_down": True},
              expect=200)
    answer = _ask(api, old, f"/os-hypervisors/{h1}/uptime")
    assert answer.status_code == 400, answer.text
    assert "Compute service of h1 is unavailable at this time." in answer.text


def test_paging_follows_the_links(api: ComputeApi) -> None:
    _beat(api, "h3", ["h3-a", "h3-b"])
    for version in (Version(2, 33), Version(2, 53)):
        seen: list[str] = []
        url = api.url + "/v2.1/os-hypervisors/detail?limit=2"
        while url:
            body = api.session.get(url, headers={
                "x-auth-token": "admin",
                "OpenStack-API-Version": f"compute {version}"}).json()
            seen += [h["hypervisor_hostname"] for h in body["hypervisors"]]
            links = body.get("hypervisors_links", [])
            url = links[0]["href"] if links else ""
            if url:
                assert links[0]["rel"] == "next" and "/os-hypervisors/detail?" in url
        assert seen == ["h1", "h2", "h3-a", "h3-b"], version
    assert _ok(api, Version(2, 33), "/os-hypervisors?limit=0")["hypervisors"] == []


def test_an_unbounded_list_is_cut_at_max_limit_from_2_33(api: ComputeApi) -> None:
    """nova cuts a list asked for without ``limit`` at [api] max_limit from 2.33 and
    links the rest; before 2.33 the list is whole."""
    _beat(api, "big", [f"big-{n:04d}" for n in range(MAX_LIMIT)])  # with h1, h2: +2
    whole = _ok(api, Version(2, 32), "/os-hypervisors")
    assert len(whole["hypervisors"]) == MAX_LIMIT + 2 and "hypervisors_links" not in whole
    first = _ok(api, Version(2, 33), "/os-hypervisors")
    assert len(first["hypervisors"]) == MAX_LIMIT
    [link] = first["hypervisors_links"]
    rest = api.session.get(link["href"], headers={
        "x-auth-token": "admin", "OpenStack-API-Version": "compute 2.33"}).json()
    assert len(rest["hypervisors"]) == 2 and "hypervisors_links" not in rest


def test_a_node_keeps_its_id_while_reported(api: ComputeApi) -> None:
    _beat(api, "h3", ["h3-a", "h3-b"])
    before = _ids(api, Version(2, 1))
    _beat(api, "h3", ["h3-b", "h3-c"])
    after = _ids(api, Version(2, 1))
    assert after["h3-b"] == before["h3-b"] and "h3-a" not in after
    assert after["h3-c"] > max(before.values())


@pytest.mark.parametrize(("version", "query", "words"), [
    ("2.33", "limit=-1", "parameters limit"),
    ("2.33", "limit=x", "parameters limit"),
    ("2.33", "marker=nope", "marker [nope] not found"),
    ("2.53", "limit=1&limit=2", "parameters limit"),
    # A fixed unknown uuid: test ids must be the same in every xdist worker.
    ("2.53", "marker=00000000-0000-4000-8000-0000000000ff", "not found"),
    ("2.53", "hypervisor_hostname_pattern=h1&limit=1", "Paging over hypervisors"),
    ("2.53", "hypervisor_hostname_pattern=h%20", "'hypervisor_hostname_pattern'"),
    ("2.53", "with_servers=maybe", "'with_servers'"),
])
def test_bad_queries_are_400s_naming_the_parameter(api: ComputeApi, version: str,
                                                   query: str, words: str) -> None:
    answer = _ask(api, Version.of(version), f"/os-hypervisors?{query}")
    assert answer.status_code == 400, answer.text
    assert words in answer.json()["badRequest"]["message"]


def test_no_match_is_a_404_and_users_are_refused(api: ComputeApi) -> None:
    answer = _ask(api, Version(2, 53), "/os-hypervisors?hypervisor_hostname_pattern=zz")
    assert answer.status_code == 404, answer.text
    for version, path in [("2.1", "/os-hypervisors"), ("2.1", "/os-hypervisors/statistics"),
                          ("2.1", "/os-hypervisors/1/uptime"),
                          ("2.1", "/os-hypervisors/h/search"),
                          ("2.1", "/os-hypervisors/h/servers"),
                          ("2.53", "/os-hypervisors/detail")]:
        refused = api.user("GET", "/v2.1" + path,
                           headers={"OpenStack-API-Version": f"compute {version}"})
        assert refused.status_code == 403, (version, path, refused.text)
