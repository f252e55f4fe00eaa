"""Flavors in every microversion's shape, over HTTP: each gate of ``flavors`` and
``os-flavor-access`` changes its answer exactly at its version, and not a version
before; the 2.1 shape has exactly nova's keys; lists page, sort and filter as nova's
do; bad query input is a 400 that names it; private flavors are shared by project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from moorage.api import microversion
from moorage.api.microversion import Version
from tests.api_fixtures import (
    USER,
    ComputeApi,
    GateCase,
    just_before,
    start_compute_api,
    stop_compute_api,
    version,
)

SMALL = {"id": "small", "name": "m1.small", "ram": 2048, "vcpus": 2, "disk": 20}


def _flavor(api: ComputeApi, **fields: Any) -> dict[str, Any]:
    """A flavor created at the newest version (which takes a description)."""
    body = {"flavor": {**SMALL, **fields}}
    return dict(api.admin("POST", "/v2.1/flavors", json=body, expect=200).json()["flavor"])


@pytest.fixture
def api(compute_api: ComputeApi) -> ComputeApi:
    """A compute API with one public flavor that has a description and an extra spec,
    no swap, and one private flavor."""
    _flavor(compute_api, description="small and cheap")
    compute_api.admin("POST", "/v2.1/flavors/small/os-extra_specs",
                      json={"extra_specs": {"hw:cpu_policy": "shared"}}, expect=200)
    _flavor(compute_api, id="secret", name="m1.secret", **{
        "os-flavor-access:is_public": False})
    return compute_api


# -- one case per gate -------------------------------------------------------------------



def _shown(api: ComputeApi, at: Version) -> dict[str, Any]:
    return dict(api.user("GET", "/v2.1/flavors/small", headers=version(at),
                         expect=200).json()["flavor"])


def _listed(api: ComputeApi, at: Version) -> dict[str, Any]:
    [small] = api.user("GET", "/v2.1/flavors", headers=version(at),
                       expect=200).json()["flavors"]
    return dict(small)


def _detailed(api: ComputeApi, at: Version) -> dict[str, Any]:
    [small] = api.user("GET", "/v2.1/flavors/detail", headers=version(at),
                       expect=200).json()["flavors"]
    return dict(small)


def _created(api: ComputeApi, at: Version) -> object:
    body = {"flavor": {**SMALL, "id": f"new-{at}", "name": f"new-{at}",
                       "description": "new"}}
    response = api.admin("POST", "/v2.1/flavors", json=body, headers=version(at))
    return response.status_code, response.json().get("flavor", {}).get("description")


def _created_keys(api: ComputeApi, at: Version) -> object:
    body = {"flavor": {**SMALL, "id": f"plain-{at}", "name": f"plain-{at}"}}
    flavor = api.admin("POST", "/v2.1/flavors", json=body, headers=version(at),
                       expect=200).json()["flavor"]
    return sorted({"description", "extra_specs"} & set(flavor))


def _updated(api: ComputeApi, at: Version) -> object:
    response = api.admin("PUT", "/v2.1/flavors/small", headers=version(at),
                         json={"flavor": {"description": f"changed at {at}"}})
    return response.status_code


def _strict_query(api: ComputeApi, at: Version) -> object:
    return api.user("GET", "/v2.1/flavors?colour=red", headers=version(at)).status_code


def _share_public(api: ComputeApi, at: Version) -> object:
    return api.admin("POST", "/v2.1/flavors/small/action", headers=version(at),
                     json={"addTenantAccess": {"tenant": f"project-{at}"}}).status_code


CASES = [
    GateCase(microversion.FLAVOR_DESCRIPTION, "list", lambda api, at: "description" in
             _listed(api, at), False, True),
    GateCase(microversion.FLAVOR_DESCRIPTION, "detail", lambda api, at: _detailed(
        api, at).get("description"), None, "small and cheap"),
    GateCase(microversion.FLAVOR_DESCRIPTION, "show", lambda api, at: _shown(
        api, at).get("description"), None, "small and cheap"),
    GateCase(microversion.FLAVOR_DESCRIPTION, "create with one", _created,
             (400, None), (200, "new")),
    GateCase(microversion.FLAVOR_DESCRIPTION, "PUT /flavors/{id}", _updated, 404, 200),
    GateCase(microversion.FLAVOR_EXTRA_SPECS, "show", lambda api, at: _shown(api, at).get(
        "extra_specs"), None, {"hw:cpu_policy": "shared"}),
    GateCase(microversion.FLAVOR_EXTRA_SPECS, "detail", lambda api, at: _detailed(
        api, at).get("extra_specs"), None, {"hw:cpu_policy": "shared"}),
    GateCase(microversion.FLAVOR_EXTRA_SPECS, "create", _created_keys,
             ["description"], ["description", "extra_specs"]),
    GateCase(microversion.SWAP_ZERO, "show", lambda api, at: _shown(api, at)["swap"], "", 0),
    GateCase(microversion.SWAP_ZERO, "detail", lambda api, at: _detailed(api, at)["swap"],
             "", 0),
    GateCase(microversion.FLAVOR_LIST_STRICT_QUERY, "an unknown parameter", _strict_query,
             200, 400),
    GateCase(microversion.FLAVOR_ACCESS_PUBLIC_REFUSED, "share a public flavor",
             _share_public, 200, 409),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.gate.version}-{c.what}")
def test_the_answer_changes_exactly_at_the_gate(api: ComputeApi, case: GateCase) -> None:
    assert (case.observe(api, just_before(case.gate)), case.observe(api, case.gate.version)
            ) == (case.before, case.at)


def test_every_flavor_gate_has_a_case() -> None:
    gates = {g for g in microversion.GATES if g.resource in ("flavors", "os-flavor-access")}
    assert gates == {case.gate for case in CASES}


# -- the shapes ----------------------------------------------------------------------------

V2_1_DETAIL = {"id", "name", "ram", "vcpus", "disk", "swap", "OS-FLV-EXT-DATA:ephemeral",
               "OS-FLV-DISABLED:disabled", "rxtx_factor", "os-flavor-access:is_public",
               "links"}


def test_at_2_1_a_flavor_has_exactly_novas_keys(api: ComputeApi) -> None:
    at = version("2.1")
    listed = api.user("GET", "/v2.1/flavors", headers=at, expect=200).json()
    assert set(listed) == {"flavors"} and set(listed["flavors"][0]) == {"id", "name", "links"}
    [detail] = api.user("GET", "/v2.1/flavors/detail", headers=at, expect=200).json()["flavors"]
    assert set(detail) == V2_1_DETAIL
    assert (detail["rxtx_factor"], detail["OS-FLV-DISABLED:disabled"]) == (1.0, False)
    shown = api.user("GET", "/v2.1/flavors/small", headers=at, expect=200).json()["flavor"]
    assert shown == detail
    # No header at all is 2.1.
    assert api.session.get(api.url + "/v2.1/flavors/small", headers={
        "x-auth-token": USER}).json()["flavor"] == shown


@pytest.mark.parametrize("at", ["2.1", "2.55", "2.61", "2.75", str(microversion.MAX_VERSION)])
def test_a_shown_flavor_is_the_one_in_the_detailed_list(api: ComputeApi, at: str) -> None:
    """What Tempest's flavor tests hold the API to, at every shape."""
    shown = api.user("GET", "/v2.1/flavors/small", headers=version(at)).json()["flavor"]
    detail = api.user("GET", "/v2.1/flavors/detail", headers=version(at)).json()["flavors"]
    assert shown in detail


def test_swap_is_the_number_when_there_is_swap(api: ComputeApi) -> None:
    _flavor(api, id="swapped", name="swapped", swap=512)
    for at in ("2.1", "2.75"):
        shown = api.user("GET", "/v2.1/flavors/swapped", headers=version(at)).json()
        assert shown["flavor"]["swap"] == 512


def test_extra_specs_are_left_out_when_policy_hides_them(tmp_path: Path,
                                                         placement: Any) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text('"os_compute_api:os-flavor-extra-specs:index": "role:admin"\n')
    conf = tmp_path / "moorage.conf"
    conf.write_text(f"[oslo_policy]\npolicy_file = {policy}\n")
    api = start_compute_api(tmp_path / "api", placement.url, config_files=[conf])
    try:
        _flavor(api, extra_specs={"hw:cpu_policy": "shared"})
        as_user = api.user("GET", "/v2.1/flavors/small", expect=200).json()["flavor"]
        as_admin = api.admin("GET", "/v2.1/flavors/small", expect=200).json()["flavor"]
        assert "extra_specs" not in as_user
        assert as_admin["extra_specs"] == {"hw:cpu_policy": "shared"}
    finally:
        stop_compute_api(api)


def test_put_changes_only_the_description(api: ComputeApi) -> None:
    changed = api.admin("PUT", "/v2.1/flavors/small", json={"flavor": {"description": None}},
                        expect=200).json()["flavor"]
    assert changed["description"] is None and changed["ram"] == 2048
    refused = api.admin("PUT", "/v2.1/flavors/small", json={"flavor": {"ram": 1}}, expect=400)
    assert "'ram' was unexpected" in refused.json()["badRequest"]["message"]
    api.user("PUT", "/v2.1/flavors/small", json={"flavor": {"description": "x"}}, expect=403)
    api.admin("PUT", "/v2.1/flavors/nope", json={"flavor": {"description": "x"}}, expect=404)


# -- lists: paging, sorting, filtering ------------------------------------------------------

def _ids(api: ComputeApi, query: str, *, token: str = "admin",
         at: str = str(microversion.MAX_VERSION)) -> list[str]:
    found = api.request("GET", f"/v2.1/flavors{query}", token=token, headers=version(at),
                        expect=200).json()["flavors"]
    return [f["id"] for f in found]


@pytest.fixture
def many(compute_api: ComputeApi) -> ComputeApi:
    for ident, ram, disk in (("a", 512, 1), ("b", 4096, 40), ("c", 1024, 10),
                             ("d", 2048, 20)):
        _flavor(compute_api, id=ident, name=f"m-{ident}", ram=ram, disk=disk)
    return compute_api


def test_a_list_pages_by_limit_and_marker_with_a_next_link(many: ComputeApi) -> None:
    assert _ids(many, "") == ["a", "b", "c", "d"]
    page = many.admin("GET", "/v2.1/flavors/detail?limit=2&minDisk=0", expect=200).json()
    assert [f["id"] for f in page["flavors"]] == ["a", "b"]
    [link] = page["flavors_links"]
    assert link["rel"] == "next"
    assert link["href"] == many.url + "/v2.1/flavors/detail?limit=2&marker=b&minDisk=0"
    following = many.admin("GET", link["href"][len(many.url):], expect=200).json()
    assert [f["id"] for f in following["flavors"]] == ["c", "d"]
    assert "flavors_links" in following  # a full page: nova links on
    last = many.admin("GET", "/v2.1/flavors?limit=2&marker=d", expect=200).json()
    assert last == {"flavors": []}
    assert _ids(many, "?limit=0") == []


@pytest.mark.parametrize(("query", "expected"), [
    ("?sort_key=memory_mb", ["a", "c", "d", "b"]),
    ("?sort_key=memory_mb&sort_dir=desc", ["b", "d", "c", "a"]),
    ("?sort_key=memory_mb&sort_dir=desc&marker=d", ["c", "a"]),
    ("?sort_key=name&sort_dir=desc&limit=1", ["d"]),
    ("?sort_key=rxtx_factor", ["a", "b", "c", "d"]),  # the same for all: by id
    ("?minRam=1024", ["b", "c", "d"]),
    ("?minRam=-1&minDisk=20", ["b", "d"]),
    ("?minDisk=99999999999999", []),
])
def test_a_list_sorts_and_filters_as_nova(many: ComputeApi, query: str,
                                          expected: list[str]) -> None:
    assert _ids(many, query) == expected


@pytest.mark.parametrize(("query", "words"), [
    ("?marker=nope", "marker [nope] not found"),
    ("?limit=-1", "Invalid input for query parameters limit. Value: -1."),
    ("?limit=two", "Invalid input for query parameters limit. Value: two."),
    ("?sort_key=colour", "Invalid input for query parameters sort_key. Value: colour."),
    ("?sort_dir=up", "Invalid input for query parameters sort_dir. Value: up."),
    ("?minRam=lots", "Invalid minRam filter [lots]"),
    ("?minDisk=%D9%A3", "Invalid minDisk filter [٣]"),
    ("?is_public=maybe", "Invalid is_public filter [maybe]"),
    ("?colour=red&size=big", "('colour', 'size' were unexpected)"),
])
def test_bad_list_input_is_a_400_naming_it(many: ComputeApi, query: str, words: str) -> None:
    refused = many.admin("GET", f"/v2.1/flavors{query}", expect=400).json()
    assert words in refused["badRequest"]["message"]


def test_only_an_administrator_chooses_public_or_private(api: ComputeApi) -> None:
    assert _ids(api, "") == ["small"]
    assert _ids(api, "?is_public=false") == ["secret"]
    assert _ids(api, "?is_public=None") == ["secret", "small"]
    # A member's is_public is not read: the public ones, and those shared with it.
    assert _ids(api, "?is_public=none", token=USER) == ["small"]
    assert _ids(api, "?is_public=false", token=USER) == ["small"]


# -- os-flavor-access ----------------------------------------------------------------------

def test_a_private_flavor_shared_with_a_project_is_its_members(api: ComputeApi) -> None:
    member_project = USER.split(":")[1]
    base = "/v2.1/flavors/secret"
    assert api.admin("GET", f"{base}/os-flavor-access", expect=200).json() == {
        "flavor_access": []}
    api.user("GET", base, expect=404)
    shared = api.admin("POST", f"{base}/action", expect=200,
                       json={"addTenantAccess": {"tenant": member_project}}).json()
    assert shared == {"flavor_access": [{"flavor_id": "secret", "tenant_id": member_project}]}
    assert api.user("GET", base, expect=200).json()["flavor"]["id"] == "secret"
    assert _ids(api, "", token=USER) == ["secret", "small"]
    assert _ids(api, "?marker=secret", token=USER) == ["small"]
    # The administrator's default list: public flavors and its own project's only.
    assert _ids(api, "") == ["small"]
    again = api.admin("POST", f"{base}/action", expect=409,
                      json={"addTenantAccess": {"tenant": member_project}}).json()
    assert "already exists" in again["conflictingRequest"]["message"]
    api.admin("POST", f"{base}/action", expect=200,
              json={"removeTenantAccess": {"tenant": member_project}})
    api.user("GET", base, expect=404)
    assert _ids(api, "", token=USER) == ["small"]
    gone = api.admin("POST", f"{base}/action", expect=404,
                     json={"removeTenantAccess": {"tenant": member_project}}).json()
    assert "Flavor access not found" in gone["itemNotFound"]["message"]


def test_flavor_access_refusals(api: ComputeApi) -> None:
    public = api.admin("GET", "/v2.1/flavors/small/os-flavor-access", expect=404).json()
    assert public["itemNotFound"]["message"] == "Access list not available for public flavors."
    api.user("GET", "/v2.1/flavors/secret/os-flavor-access", expect=403)
    api.user("POST", "/v2.1/flavors/secret/action", expect=403,
             json={"addTenantAccess": {"tenant": "p"}})
    api.admin("POST", "/v2.1/flavors/nope/action", expect=404,
              json={"addTenantAccess": {"tenant": "p"}})
    unknown = api.admin("POST", "/v2.1/flavors/secret/action", expect=400,
                        json={"shareWith": {"tenant": "p"}}).json()
    assert "no such action: shareWith" in unknown["badRequest"]["message"]
    missing = api.admin("POST", "/v2.1/flavors/secret/action", expect=400,
                        json={"addTenantAccess": {}}).json()
    assert "'tenant' is a required property" in missing["badRequest"]["message"]
