"""GET /allocation_candidates over HTTP: every microversion boundary, and bad input.

One small cloud serves the whole module:

    cn1  VCPU 8, MEMORY_MB 4096          AVX2            aggregate A
    cn2  DISK_GB 500                     (root)          aggregate B
     +- numa0  VCPU 4, MEMORY_MB 2048    HW_NUMA_ROOT
     +- numa1  VCPU 4, MEMORY_MB 2048    HW_NUMA_ROOT, AVX2
    cn3  VCPU 2, MEMORY_MB 1024          SSD, CUSTOM_GOLD
    ss   DISK_GB 1000                    MISC_SHARES_VIA_AGGREGATE, aggregate A
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from moorage.placement.launcher import PlacementProcess
from tests.conftest import PlacementClient

# Fixed, not uuid4(): they appear in test ids, which every xdist worker must collect alike.
AGG_A = "a66a0000-0000-4000-8000-00000000000a"
AGG_B = "a66a0000-0000-4000-8000-00000000000b"


@dataclass(frozen=True)
class Cloud:
    client: PlacementClient
    cn1: str
    cn2: str
    numa0: str
    numa1: str
    cn3: str
    ss: str

    def name(self, rp: str) -> str:
        return next(k for k, v in self.__dict__.items() if v == rp)


def _inventory(client: PlacementClient, rp: str, **totals: int) -> None:
    client.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": client.generation(rp),
        "inventories": {rc: {"total": n} for rc, n in totals.items()},
    }, expect=200)


def _traits(client: PlacementClient, rp: str, *names: str) -> None:
    client.put(f"/resource_providers/{rp}/traits", json={
        "resource_provider_generation": client.generation(rp), "traits": list(names)},
        expect=200)


def _aggregates(client: PlacementClient, rp: str, *aggs: str) -> None:
    client.put(f"/resource_providers/{rp}/aggregates", json={
        "resource_provider_generation": client.generation(rp), "aggregates": list(aggs)},
        expect=200)


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    server = PlacementProcess(tmp_path_factory.mktemp("ac")).start()
    client = PlacementClient(server.url)
    client.put("/traits/CUSTOM_GOLD", expect=201)
    cn1 = client.create_provider("cn1")
    cn2 = client.create_provider("cn2")
    numa0 = client.create_provider("cn2-numa0", parent=cn2)
    numa1 = client.create_provider("cn2-numa1", parent=cn2)
    cn3 = client.create_provider("cn3")
    ss = client.create_provider("ss")
    _inventory(client, cn1, VCPU=8, MEMORY_MB=4096)
    _inventory(client, cn2, DISK_GB=500)
    _inventory(client, numa0, VCPU=4, MEMORY_MB=2048)
    _inventory(client, numa1, VCPU=4, MEMORY_MB=2048)
    _inventory(client, cn3, VCPU=2, MEMORY_MB=1024)
    _inventory(client, ss, DISK_GB=1000)
    _traits(client, cn1, "HW_CPU_X86_AVX2")
    _traits(client, numa0, "HW_NUMA_ROOT")
    _traits(client, numa1, "HW_NUMA_ROOT", "HW_CPU_X86_AVX2")
    _traits(client, cn3, "STORAGE_DISK_SSD", "CUSTOM_GOLD")
    _traits(client, ss, "MISC_SHARES_VIA_AGGREGATE")
    _aggregates(client, cn1, AGG_A)
    _aggregates(client, cn2, AGG_B)
    _aggregates(client, ss, AGG_A)
    yield Cloud(client, cn1, cn2, numa0, numa1, cn3, ss)
    server.stop()


def candidates(cloud: Cloud, query: str, version: str, expect: int = 200) -> Any:
    return cloud.client.get(f"/allocation_candidates?{query}", version=version,
                            expect=expect).json()


def named(cloud: Cloud, body: dict[str, Any]) -> set[frozenset[tuple[str, str, int]]]:
    """Candidates as sets of (provider name, class, amount), for dict-format versions."""
    return {
        frozenset((cloud.name(rp), rc, n) for rp, a in ar["allocations"].items()
                  for rc, n in a["resources"].items())
        for ar in body["allocation_requests"]
    }


def test_route_appears_at_1_10(cloud: Cloud) -> None:
    candidates(cloud, "resources=VCPU:1", "1.9", expect=404)
    candidates(cloud, "resources=VCPU:1", "1.10")


def test_list_format_before_1_12_and_dict_format_after(cloud: Cloud) -> None:
    old = candidates(cloud, "resources=VCPU:1,MEMORY_MB:1024", "1.11")
    assert isinstance(old["allocation_requests"][0]["allocations"], list)
    cn1 = [ar for ar in old["allocation_requests"]
           if ar["allocations"][0]["resource_provider"]["uuid"] == cloud.cn1]
    assert cn1 == [{"allocations": [{"resource_provider": {"uuid": cloud.cn1},
                                     "resources": {"VCPU": 1, "MEMORY_MB": 1024}}]}]
    new = candidates(cloud, "resources=VCPU:1,MEMORY_MB:1024", "1.12")
    assert {"allocations": {cloud.cn1: {"resources": {"VCPU": 1, "MEMORY_MB": 1024}}}} in (
        new["allocation_requests"])


def test_limit_from_1_16(cloud: Cloud) -> None:
    candidates(cloud, "resources=VCPU:1&limit=1", "1.15", expect=400)
    body = candidates(cloud, "resources=VCPU:1&limit=1", "1.16")
    assert len(body["allocation_requests"]) == 1
    # Summaries follow the limit: only the trees of the kept candidate.
    kept = next(iter(body["allocation_requests"][0]["allocations"]))
    assert set(body["provider_summaries"]) == {kept}
    for bad in ("0", "-1", "x"):
        candidates(cloud, f"resources=VCPU:1&limit={bad}", "1.16", expect=400)


def test_required_and_traits_in_summaries_from_1_17(cloud: Cloud) -> None:
    candidates(cloud, "resources=VCPU:1&required=HW_CPU_X86_AVX2", "1.16", expect=400)
    before = candidates(cloud, "resources=VCPU:1", "1.16")
    assert all("traits" not in s for s in before["provider_summaries"].values())
    body = candidates(cloud, "resources=VCPU:1&required=HW_CPU_X86_AVX2", "1.17")
    assert named(cloud, body) == {frozenset({("cn1", "VCPU", 1)}),
                                  frozenset({("numa1", "VCPU", 1)})}
    assert body["provider_summaries"][cloud.cn1]["traits"] == ["HW_CPU_X86_AVX2"]


def test_member_of_from_1_21_and_repeated_from_1_24(cloud: Cloud) -> None:
    candidates(cloud, f"resources=VCPU:1&member_of={AGG_A}", "1.20", expect=400)
    body = candidates(cloud, f"resources=VCPU:1&member_of={AGG_A}", "1.21")
    assert named(cloud, body) == {frozenset({("cn1", "VCPU", 1)})}
    both = f"resources=VCPU:1&member_of=in:{AGG_A},{AGG_B}&member_of={AGG_A}"
    error = candidates(cloud, both, "1.23", expect=400)
    assert "Multiple member_of parameters are not supported" in error["errors"][0]["detail"]
    assert named(cloud, candidates(cloud, both, "1.24")) == {frozenset({("cn1", "VCPU", 1)})}


def test_forbidden_traits_from_1_22(cloud: Cloud) -> None:
    query = "resources=VCPU:1&required=!HW_CPU_X86_AVX2"
    candidates(cloud, query, "1.21", expect=400)
    names = {c for cand in named(cloud, candidates(cloud, query, "1.29")) for c, _, _ in cand}
    assert names == {"numa0", "cn3"}


def test_granular_groups_from_1_25(cloud: Cloud) -> None:
    query = "resources1=VCPU:1&resources2=VCPU:1&group_policy=isolate"
    candidates(cloud, query, "1.24", expect=400)
    body = candidates(cloud, query, "1.29")
    # Two different providers in one tree: only cn2's NUMA nodes qualify.
    assert named(cloud, body) == {frozenset({("numa0", "VCPU", 1), ("numa1", "VCPU", 1)})}
    shared = candidates(cloud, query.replace("isolate", "none"), "1.29")
    assert frozenset({("cn1", "VCPU", 2)}) in named(cloud, shared)
    error = candidates(cloud, "resources1=VCPU:1&resources2=VCPU:1", "1.25", expect=400)
    assert '"group_policy" parameter is required' in error["errors"][0]["detail"]


def test_all_resources_in_summaries_from_1_27(cloud: Cloud) -> None:
    query = "resources=VCPU:1&required=HW_CPU_X86_AVX2&limit=1"
    assert set(candidates(cloud, "resources=VCPU:1&required=CUSTOM_GOLD", "1.26")[
        "provider_summaries"][cloud.cn3]["resources"]) == {"VCPU"}
    assert set(candidates(cloud, "resources=VCPU:1&required=CUSTOM_GOLD", "1.27")[
        "provider_summaries"][cloud.cn3]["resources"]) == {"VCPU", "MEMORY_MB"}
    assert candidates(cloud, query, "1.27")["allocation_requests"]


def test_nested_candidates_from_1_29(cloud: Cloud) -> None:
    query = "resources=VCPU:1,DISK_GB:10"
    # Before 1.29 a candidate may not take from two providers of one tree.
    old = named(cloud, candidates(cloud, query, "1.28"))
    assert all(not {"numa0", "numa1"} & {n for n, _, _ in c} for c in old)
    new_body = candidates(cloud, query, "1.29")
    new = named(cloud, new_body)
    assert frozenset({("numa0", "VCPU", 1), ("cn2", "DISK_GB", 10)}) in new
    # cn1 takes its disk from the sharing provider in aggregate A.
    assert frozenset({("cn1", "VCPU", 1), ("ss", "DISK_GB", 10)}) in new
    summary = new_body["provider_summaries"][cloud.numa0]
    assert summary["parent_provider_uuid"] == cloud.cn2
    assert summary["root_provider_uuid"] == cloud.cn2
    assert "root_provider_uuid" not in candidates(cloud, query, "1.28")[
        "provider_summaries"][cloud.cn1]


def test_in_tree_from_1_31(cloud: Cloud) -> None:
    query = f"resources=VCPU:1&in_tree={cloud.numa1}"
    candidates(cloud, query, "1.30", expect=400)
    names = {n for c in named(cloud, candidates(cloud, query, "1.31")) for n, _, _ in c}
    assert names == {"numa0", "numa1"}
    unknown = candidates(cloud, f"resources=VCPU:1&in_tree={uuid.uuid4()}", "1.31")
    assert unknown == {"allocation_requests": [], "provider_summaries": {}}


def test_forbidden_aggregates_from_1_32(cloud: Cloud) -> None:
    query = f"resources=VCPU:1&member_of=!{AGG_A}"
    candidates(cloud, query, "1.31", expect=400)
    names = {n for c in named(cloud, candidates(cloud, query, "1.32")) for n, _, _ in c}
    assert names == {"numa0", "numa1", "cn3"}


def test_string_suffixes_from_1_33_and_mappings_from_1_34(cloud: Cloud) -> None:
    query = "resources_CPU=VCPU:1&required_CPU=HW_NUMA_ROOT&resources=DISK_GB:5"
    candidates(cloud, query, "1.32", expect=400)
    body = candidates(cloud, query, "1.33")
    assert "mappings" not in body["allocation_requests"][0]
    mapped = candidates(cloud, query, "1.34")["allocation_requests"]
    assert {"_CPU": [cloud.numa0], "": [cloud.cn2]} in [ar["mappings"] for ar in mapped]


def test_root_required_from_1_35(cloud: Cloud) -> None:
    query = "resources=VCPU:1&root_required=!HW_CPU_X86_AVX2"
    candidates(cloud, query, "1.34", expect=400)
    names = {n for c in named(cloud, candidates(cloud, query, "1.35")) for n, _, _ in c}
    assert names == {"numa0", "numa1", "cn3"}
    error = candidates(cloud, "resources=VCPU:1&root_required=A&root_required=B", "1.35",
                       expect=400)["errors"][0]
    assert error["code"] == "placement.query.duplicate_key"


def test_same_subtree_and_resourceless_groups_from_1_36(cloud: Cloud) -> None:
    query = ("resources_A=VCPU:1&required_A=HW_CPU_X86_AVX2&required_B=HW_NUMA_ROOT"
             "&same_subtree=_A,_B&group_policy=none")
    candidates(cloud, query, "1.35", expect=400)
    body = candidates(cloud, query, "1.36")
    # numa1 alone holds both traits; numa0 and numa1 are siblings, so not one subtree.
    assert [ar["mappings"] for ar in body["allocation_requests"]] == [
        {"_A": [cloud.numa1], "_B": [cloud.numa1]}]
    error = candidates(cloud, "resources_A=VCPU:1&required_B=HW_NUMA_ROOT&group_policy=none",
                       "1.36", expect=400)["errors"][0]
    assert "should be specified in `same_subtree`" in error["detail"]


def test_any_of_and_repeated_required_from_1_39(cloud: Cloud) -> None:
    any_of = "resources=VCPU:1&required=in:CUSTOM_GOLD,HW_NUMA_ROOT"
    error = candidates(cloud, any_of, "1.38", expect=400)["errors"][0]
    assert "only supported since microversion 1.39" in error["detail"]
    # Before 1.39 only the last ``required`` counts.
    query = any_of + "&required=!HW_CPU_X86_AVX2"
    before = {n for c in named(cloud, candidates(cloud, query, "1.38")) for n, _, _ in c}
    assert before == {"numa0", "cn3"}
    names = {n for c in named(cloud, candidates(cloud, query, "1.39")) for n, _, _ in c}
    assert names == {"numa0", "cn3"}


@pytest.mark.parametrize(("query", "version", "detail"), [
    ("resources=VCPU:1,NOPE:2", "1.39",
     "Invalid resource class in resources parameter: No such resource class NOPE."),
    ("resources=VCPU:1&required=CUSTOM_NOPE", "1.39", "No such trait(s): CUSTOM_NOPE."),
    ("resources=VCPU", "1.39", "Badly formed resources parameter"),
    ("resources=VCPU:0", "1.39", "requires amount >= 1"),
    ("resources=VCPU:one", "1.39", "expected positive integer amount"),
    ("resources=", "1.39", "Got: empty string"),
    ("", "1.39", "There must be at least one resources or resources[$S] parameter."),
    ("", "1.20", "'resources' is a required property"),
    ("resources=VCPU:1&required=HW_CPU_X86_AVX2,!HW_CPU_X86_AVX2", "1.39",
     "Conflicting required and forbidden traits"),
    ("resources=VCPU:1&member_of=not-a-uuid", "1.39", "valid UUID"),
    ("resources=VCPU:1&member_of=a,b", "1.39", "must be prefixed with the 'in:'"),
    ("resources=VCPU:1&in_tree=nope", "1.39", "to be a format of uuid"),
    ("resources=VCPU:1&group_policy=sometimes", "1.39", "is not one of"),
    ("resources=VCPU:1&colour=blue", "1.39", "Invalid query string parameters"),
    ("resources=VCPU:1&same_subtree=_A,", "1.39", "Empty string (unsuffixed group)"),
    ("resources=VCPU:1&same_subtree=_X", "1.39", "Real suffixes should be specified"),
    ("resources=VCPU:1&root_required=in:A,B", "1.39", "only supported since microversion"),
    ("resources=VCPU:1&required1=HW_CPU_X86_AVX2", "1.35",
     "Found the following orphaned traits keys: required1"),
    (f"resources=VCPU:1&member_of1={AGG_A}", "1.35",
     "Found the following orphaned member_of keys: member_of1"),
    (f"resources=VCPU:1&in_tree1={AGG_A}", "1.35", "All request groups must specify resources."),
])
def test_bad_queries_are_400_with_a_clear_detail(
    cloud: Cloud, query: str, version: str, detail: str
) -> None:
    error = candidates(cloud, query, version, expect=400)["errors"][0]
    assert error["status"] == 400
    assert detail in error["detail"]


def test_policy_and_accept(cloud: Cloud) -> None:
    cloud.client.get("/allocation_candidates?resources=VCPU:1", token="someone", expect=403)
    cloud.client.get("/allocation_candidates?resources=VCPU:1",
                     headers={"accept": "text/plain"}, expect=406)


def test_capacity_min_max_step_and_usage_are_honoured(cloud: Cloud) -> None:
    client = cloud.client
    rp = client.create_provider("odd")
    client.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": client.generation(rp),
        "inventories": {"CUSTOM_GOLD_SLOT": {"total": 10, "reserved": 2, "min_unit": 2,
                                              "max_unit": 6, "step_size": 2,
                                              "allocation_ratio": 1.5}},
    }, expect=400)  # the class does not exist yet
    client.put("/resource_classes/CUSTOM_GOLD_SLOT", expect=201)
    client.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": client.generation(rp),
        "inventories": {"CUSTOM_GOLD_SLOT": {"total": 10, "reserved": 2, "min_unit": 2,
                                              "max_unit": 6, "step_size": 2,
                                              "allocation_ratio": 1.5}},
    }, expect=200)

    def fits(amount: int) -> bool:
        body = candidates(cloud, f"resources=CUSTOM_GOLD_SLOT:{amount}", "1.39")
        return bool(body["allocation_requests"])

    # capacity (10 - 2) * 1.5 = 12; min 2, max 6, step 2
    assert [n for n in range(1, 9) if fits(n)] == [2, 4, 6]
    consumer = str(uuid.uuid4())
    client.put(f"/allocations/{consumer}", version="1.38", json={
        "allocations": {rp: {"resources": {"CUSTOM_GOLD_SLOT": 6}}},
        "project_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4()),
        "consumer_generation": None, "consumer_type": "INSTANCE"}, expect=204)
    client.put(f"/allocations/{uuid.uuid4()}", version="1.38", json={
        "allocations": {rp: {"resources": {"CUSTOM_GOLD_SLOT": 4}}},
        "project_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4()),
        "consumer_generation": None, "consumer_type": "INSTANCE"}, expect=204)
    # 12 - 10 used = 2 left
    assert [n for n in range(1, 9) if fits(n)] == [2]
    summary = candidates(cloud, "resources=CUSTOM_GOLD_SLOT:2", "1.39")["provider_summaries"]
    assert summary[rp]["resources"]["CUSTOM_GOLD_SLOT"] == {"capacity": 12, "used": 10}


def _flat_cloud(server: PlacementProcess, count: int) -> PlacementClient:
    client = PlacementClient(server.url)
    for i in range(count):
        rp = client.create_provider(f"flat-{i}")
        _inventory(client, rp, VCPU=4)
    return client


def test_randomized_sampling_when_configured(tmp_path: Path) -> None:
    def samples(randomize: bool) -> set[tuple[str, ...]]:
        server = PlacementProcess(tmp_path / str(randomize), config={
            "placement": {"randomize_allocation_candidates": randomize}}).start()
        try:
            client = _flat_cloud(server, 12)
            return {
                tuple(next(iter(ar["allocations"])) for ar in client.get(
                    "/allocation_candidates?resources=VCPU:1&limit=4",
                    expect=200).json()["allocation_requests"])
                for _ in range(8)
            }
        finally:
            server.stop()

    # Deterministic by default: the same four, in provider order, every time.
    assert len(samples(False)) == 1
    # Randomized: eight draws of 4 out of 12 are not all the same.
    assert len(samples(True)) > 1


def test_max_allocation_candidates_caps_generation(tmp_path: Path) -> None:
    server = PlacementProcess(tmp_path / "capped", config={
        "placement": {"max_allocation_candidates": 3}}).start()
    try:
        client = _flat_cloud(server, 6)
        body = client.get("/allocation_candidates?resources=VCPU:1", expect=200).json()
        assert len(body["allocation_requests"]) == 3
        assert len(client.get("/allocation_candidates?resources=VCPU:1&limit=2",
                              expect=200).json()["allocation_requests"]) == 2
    finally:
        server.stop()
