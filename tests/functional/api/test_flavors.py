"""Flavors and extra specs over HTTP, in nova's shapes, with validation when written."""

from __future__ import annotations

from typing import Any

from tests.api_fixtures import ComputeApi

FLAVOR = {"name": "m1.small", "ram": 2048, "vcpus": 2, "disk": 20, "id": "m1.small"}


def _create(api: ComputeApi, expect: int = 200, **fields: Any) -> Any:
    return api.admin("POST", "/v2.1/flavors", json={"flavor": {**FLAVOR, **fields}},
                     expect=expect).json()


def test_create_show_list_delete(compute_api: ComputeApi) -> None:
    created = _create(compute_api, extra_specs={"trait:HW_CPU_X86_AVX2": "required"})
    flavor = created["flavor"]
    assert (flavor["id"], flavor["ram"], flavor["vcpus"], flavor["disk"]) == (
        "m1.small", 2048, 2, 20)
    assert flavor["extra_specs"] == {"trait:HW_CPU_X86_AVX2": "required"}
    shown = compute_api.user("GET", "/v2.1/flavors/m1.small", expect=200).json()["flavor"]
    assert shown["extra_specs"] == {"trait:HW_CPU_X86_AVX2": "required"}
    listed = compute_api.user("GET", "/v2.1/flavors", expect=200).json()["flavors"]
    assert [f["id"] for f in listed] == ["m1.small"]
    assert set(listed[0]) == {"id", "name", "description", "links"}
    detail = compute_api.user("GET", "/v2.1/flavors/detail", expect=200).json()["flavors"]
    assert detail[0]["OS-FLV-EXT-DATA:ephemeral"] == 0
    compute_api.admin("DELETE", "/v2.1/flavors/m1.small", expect=202)
    gone = compute_api.admin("GET", "/v2.1/flavors/m1.small", expect=404).json()
    assert gone == {"itemNotFound": {"code": 404,
                                     "message": "Flavor m1.small could not be found."}}


def test_generated_id_is_a_uuid(compute_api: ComputeApi) -> None:
    body = dict(FLAVOR)
    del body["id"]
    flavor = compute_api.admin("POST", "/v2.1/flavors", json={"flavor": body},
                               expect=200).json()["flavor"]
    assert len(flavor["id"]) == 36


def test_only_admins_create_flavors(compute_api: ComputeApi) -> None:
    response = compute_api.user("POST", "/v2.1/flavors", json={"flavor": FLAVOR}, expect=403)
    assert "os_compute_api:os-flavor-manage:create" in response.json()["forbidden"]["message"]
    compute_api.admin("GET", "/v2.1/flavors/m1.small", expect=404)


def test_bad_flavors_are_400_and_not_stored(compute_api: ComputeApi) -> None:
    cases = [
        ({"ram": 0}, "'ram'"),
        ({"vcpus": "two"}, "'vcpus'"),
        ({"name": ""}, "'name'"),
        ({"extra_specs": {"trait:NOT_A_TRAIT": "required"}}, "trait:NOT_A_TRAIT"),
        ({"extra_specs": {"resources:VCPU": "-2"}}, "resources:VCPU"),
        ({"extra_specs": {"group_policy": "strict"}}, "allowed: none, isolate"),
        ({"colour": "red"}, "'colour' was unexpected"),
    ]
    for fields, message in cases:
        body = _create(compute_api, expect=400, **fields)
        assert message in body["badRequest"]["message"], (fields, body)
    compute_api.admin("GET", "/v2.1/flavors/m1.small", expect=404)
    assert compute_api.admin("GET", "/v2.1/flavors").json()["flavors"] == []


def test_duplicate_flavor_is_409(compute_api: ComputeApi) -> None:
    _create(compute_api)
    body = _create(compute_api, expect=409)
    assert "m1.small already exists" in body["conflictingRequest"]["message"]
    body = _create(compute_api, expect=409, id="other")
    assert "name m1.small already exists" in body["conflictingRequest"]["message"]


def test_extra_specs_routes(compute_api: ComputeApi) -> None:
    _create(compute_api)
    base = "/v2.1/flavors/m1.small/os-extra_specs"
    compute_api.admin("POST", base, json={"extra_specs": {
        "trait1:CUSTOM_GOLD": "required", "resources1:CUSTOM_FPGA": "1",
        "group_policy": "isolate", "hw:cpu_policy": "dedicated"}}, expect=200)
    assert compute_api.user("GET", base, expect=200).json()["extra_specs"] == {
        "trait1:CUSTOM_GOLD": "required", "resources1:CUSTOM_FPGA": "1",
        "group_policy": "isolate", "hw:cpu_policy": "dedicated"}
    compute_api.admin("PUT", f"{base}/hw:cpu_policy", json={"hw:cpu_policy": "shared"},
                      expect=200)
    assert compute_api.user("GET", f"{base}/hw:cpu_policy", expect=200).json() == {
        "hw:cpu_policy": "shared"}
    compute_api.admin("DELETE", f"{base}/group_policy", expect=200)
    compute_api.admin("GET", f"{base}/group_policy", expect=404)
    compute_api.admin("DELETE", f"{base}/group_policy", expect=404)


def test_bad_extra_specs_are_400_and_nothing_stored(compute_api: ComputeApi) -> None:
    _create(compute_api)
    base = "/v2.1/flavors/m1.small/os-extra_specs"
    body = compute_api.admin("POST", base, json={"extra_specs": {
        "trait:CUSTOM_OK": "required", "trait:CUSTOM_BAD": "maybe"}}, expect=400).json()
    assert "trait:CUSTOM_BAD" in body["badRequest"]["message"]
    assert "required, forbidden" in body["badRequest"]["message"]
    assert compute_api.admin("GET", base).json()["extra_specs"] == {}
    body = compute_api.admin("PUT", f"{base}/hw:cpu_policy", json={"hw:numa_nodes": "1"},
                             expect=400).json()
    assert "key of the URL" in body["badRequest"]["message"]
    compute_api.admin("POST", "/v2.1/flavors/nope/os-extra_specs",
                      json={"extra_specs": {"a": "b"}}, expect=404)
    compute_api.user("POST", base, json={"extra_specs": {"a": "b"}}, expect=403)
    compute_api.admin("POST", base, data="{not json", expect=400,
                      headers={"content-type": "application/json"})
