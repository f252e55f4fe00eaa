"""/traits, /traits/{name} and /resource_providers/{uuid}/traits over real HTTP."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import os_traits
import pytest
import requests

from tests.conftest import PlacementClient

STANDARD = os_traits.HW_CPU_X86_SSE
INVALID_TRAIT = (
    'The trait is invalid. A valid trait must be no longer than 255 characters, start with '
    'the prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"'
)


def custom(label: str = "T") -> str:
    """A trait name no other test uses."""
    return f"CUSTOM_{label}_{uuid.uuid4().hex[:10].upper()}"


def error(response: requests.Response) -> dict[str, Any]:
    """The single entry of a placement error body."""
    entries = response.json()["errors"]
    assert len(entries) == 1
    return dict(entries[0])


def provider_traits(client: PlacementClient, rp: str) -> tuple[list[str], int]:
    body = client.get(f"/resource_providers/{rp}/traits", expect=200).json()
    return body["traits"], body["resource_provider_generation"]


def create_traits(client: PlacementClient, *names: str) -> None:
    for name in names:
        client.put(f"/traits/{name}", expect=201)


# -- microversions and policy ------------------------------------------------------

ROUTES = [
    ("GET", "/traits"),
    ("GET", "/traits/CUSTOM_A"),
    ("PUT", "/traits/CUSTOM_A"),
    ("DELETE", "/traits/CUSTOM_A"),
    ("GET", "/resource_providers/{rp}/traits"),
    ("PUT", "/resource_providers/{rp}/traits"),
    ("DELETE", "/resource_providers/{rp}/traits"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_absent_before_1_6(shared_placement: PlacementClient, method: str, path: str) -> None:
    rp = shared_placement.create_provider()
    body = {"traits": [], "resource_provider_generation": 0} if method == "PUT" else None
    shared_placement.request(method, path.format(rp=rp), json=body, version="1.5", expect=404)


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_non_admin_is_forbidden(
    shared_placement: PlacementClient, method: str, path: str
) -> None:
    rp = shared_placement.create_provider()
    name = custom()
    create_traits(shared_placement, name)
    body = {"traits": [name], "resource_provider_generation": 0} if method == "PUT" else None
    path = path.format(rp=rp).replace("CUSTOM_A", name)
    response = shared_placement.request(method, path, json=body, token="user", expect=403)
    assert "Policy does not allow placement:" in error(response)["detail"]
    # Nothing changed: the trait is still there, the provider still has no traits.
    shared_placement.get(f"/traits/{name}", expect=204)
    assert provider_traits(shared_placement, rp) == ([], 0)


# -- /traits/{name} ------------------------------------------------------------------

@pytest.mark.parametrize("name", [
    "TRAIT_X",
    "CUSTOM_ABC:1",
    "CUSTOM_lower",
    "CUSTOM_" + "A" * 249,
])
def test_put_invalid_trait_name(shared_placement: PlacementClient, name: str) -> None:
    response = shared_placement.put(f"/traits/{name}", expect=400)
    assert INVALID_TRAIT in error(response)["detail"]
    shared_placement.get(f"/traits/{name}", expect=404)


def test_longest_trait_name_is_accepted(shared_placement: PlacementClient) -> None:
    name = custom()
    name += "X" * (255 - len(name))
    shared_placement.put(f"/traits/{name}", expect=201)
    shared_placement.get(f"/traits/{name}", expect=204)


def test_create_then_verify_trait(shared_placement: PlacementClient) -> None:
    name = custom()
    created = shared_placement.put(f"/traits/{name}", version="1.6", expect=201)
    assert created.headers["location"] == f"{shared_placement.url}/traits/{name}"
    assert "content-type" not in created.headers
    assert "last-modified" not in created.headers
    again = shared_placement.put(f"/traits/{name}", version="1.6", expect=204)
    assert again.headers["location"] == f"{shared_placement.url}/traits/{name}"
    shown = shared_placement.get(f"/traits/{name}", version="1.6", expect=204)
    assert "content-type" not in shown.headers
    assert name in shared_placement.get("/traits").json()["traits"]


@pytest.mark.parametrize(("method", "status"), [("PUT", 201), ("PUT", 204), ("GET", 204)])
@pytest.mark.parametrize(("version", "cached"), [("1.14", False), ("1.15", True)])
def test_trait_cache_headers(
    shared_placement: PlacementClient, method: str, status: int, version: str, cached: bool
) -> None:
    name = custom()
    if status == 204 or method == "GET":
        create_traits(shared_placement, name)
    response = shared_placement.request(method, f"/traits/{name}", version=version,
                                        expect=status)
    assert ("last-modified" in response.headers) is cached
    assert ("cache-control" in response.headers) is cached
    if cached:
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["last-modified"].endswith(" GMT")


def test_show_missing_trait(shared_placement: PlacementClient) -> None:
    for version in ("1.6", "1.15"):
        response = shared_placement.get("/traits/CUSTOM_NOT_THERE", version=version,
                                        expect=404)
        assert "No such trait(s): CUSTOM_NOT_THERE." in error(response)["detail"]


def test_delete_trait(shared_placement: PlacementClient) -> None:
    name = custom()
    create_traits(shared_placement, name)
    shared_placement.get(f"/traits/{name}", version="1.14", expect=204)
    deleted = shared_placement.delete(f"/traits/{name}", version="1.15", expect=204)
    assert "last-modified" not in deleted.headers
    # Before 1.15 the answer comes from the in-memory catalogue, from 1.15 from the table.
    for version in ("1.14", "1.15"):
        shared_placement.get(f"/traits/{name}", version=version, expect=404)
    assert name not in shared_placement.get("/traits").json()["traits"]
    response = shared_placement.delete(f"/traits/{name}", expect=404)
    assert f"No such trait(s): {name}." in error(response)["detail"]


def test_delete_standard_trait_is_refused(shared_placement: PlacementClient) -> None:
    response = shared_placement.delete(f"/traits/{STANDARD}", expect=400)
    assert f"Cannot delete standard trait {STANDARD}." in error(response)["detail"]
    shared_placement.get(f"/traits/{STANDARD}", expect=204)


def test_delete_trait_in_use_is_refused(shared_placement: PlacementClient) -> None:
    name = custom()
    create_traits(shared_placement, name)
    rp = shared_placement.create_provider()
    shared_placement.put(f"/resource_providers/{rp}/traits",
                         json={"traits": [name], "resource_provider_generation": 0}, expect=200)
    response = shared_placement.delete(f"/traits/{name}", expect=409)
    assert f"The trait {name} is in use by a resource provider." in error(response)["detail"]
    shared_placement.get(f"/traits/{name}", expect=204)
    assert provider_traits(shared_placement, rp) == ([name], 1)
    # Once no provider has it, it can go.
    shared_placement.delete(f"/resource_providers/{rp}/traits", expect=204)
    shared_placement.delete(f"/traits/{name}", expect=204)


# -- GET /traits -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def listed(shared_placement: PlacementClient) -> dict[str, str]:
    """Custom traits for the listing tests: two associated with a provider, two not.

    ``AB_C`` and ``ABXC`` tell a prefix test apart from SQL LIKE, where "_" matches
    any character.
    """
    tag = uuid.uuid4().hex[:8].upper()
    names = {
        "used1": f"CUSTOM_L{tag}_AB_C",
        "used2": f"CUSTOM_L{tag}_USED",
        "free1": f"CUSTOM_L{tag}_ABXC",
        "free2": f"CUSTOM_L{tag}_FREE",
    }
    create_traits(shared_placement, *names.values())
    rp = shared_placement.create_provider()
    shared_placement.put(
        f"/resource_providers/{rp}/traits",
        json={"traits": [names["used1"], names["used2"], STANDARD],
              "resource_provider_generation": 0},
        expect=200,
    )
    names["tag"] = tag
    return names


@pytest.mark.parametrize(("query", "expected"), [
    ("name=in:{used1},{free2}", ["used1", "free2"]),
    ("name=in:{used1},{used1},CUSTOM_NOT_THERE", ["used1"]),
    ("name=startswith:CUSTOM_L{tag}", ["used1", "used2", "free1", "free2"]),
    ("name=startswith:CUSTOM_L{tag}_AB_", ["used1"]),
    ("name=startswith:CUSTOM_L{tag}&associated=true", ["used1", "used2"]),
    ("name=startswith:CUSTOM_L{tag}&associated=false", ["free1", "free2"]),
    ("name=startswith:CUSTOM_L{tag}&associated=TRUE", ["used1", "used2"]),
    ("name=in:{used1},{free1}&associated=False", ["free1"]),
    ("name=startswith:CUSTOM_NOTHING_{tag}", []),
])
def test_list_traits_filters(
    shared_placement: PlacementClient, listed: dict[str, str], query: str,
    expected: list[str],
) -> None:
    body = shared_placement.get(f"/traits?{query.format(**listed)}", expect=200).json()
    assert body == {"traits": sorted(listed[key] for key in expected)}


def test_list_traits_associated_includes_standard(
    shared_placement: PlacementClient, listed: dict[str, str]
) -> None:
    associated = shared_placement.get("/traits?associated=true", expect=200).json()["traits"]
    assert {listed["used1"], listed["used2"], STANDARD} <= set(associated)
    assert listed["free1"] not in associated
    free = shared_placement.get("/traits?associated=false", expect=200).json()["traits"]
    assert STANDARD not in free
    assert os_traits.MISC_SHARES_VIA_AGGREGATE in free


def test_list_all_traits(shared_placement: PlacementClient, listed: dict[str, str]) -> None:
    traits = shared_placement.get("/traits", expect=200).json()["traits"]
    assert set(os_traits.get_traits()) <= set(traits)
    assert listed["free2"] in traits
    assert traits == sorted(traits)
    # An operator other than in/startswith filters nothing, as upstream.
    assert shared_placement.get("/traits?name=other:X", expect=200).json()["traits"] == traits


@pytest.mark.parametrize(("query", "detail"), [
    ("name=in_abc", 'Badly formatted name parameter. Expected name query string parameter in '
                    'form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "in_abc"'),
    ("associated=xyz", 'The query parameter "associated" only accepts "true" or "false"'),
    ("invalid=abc", "Invalid query string parameters: Additional properties are not allowed"),
])
def test_list_traits_bad_query(shared_placement: PlacementClient, query: str,
                               detail: str) -> None:
    response = shared_placement.get(f"/traits?{query}", expect=400)
    assert detail in error(response)["detail"]


@pytest.mark.parametrize(("version", "cached"), [("1.14", False), ("1.15", True)])
def test_list_traits_cache_headers(shared_placement: PlacementClient, version: str,
                                   cached: bool) -> None:
    response = shared_placement.get("/traits", version=version, expect=200)
    assert ("last-modified" in response.headers) is cached
    assert ("cache-control" in response.headers) is cached


def test_list_traits_needs_json(shared_placement: PlacementClient) -> None:
    shared_placement.get("/traits", headers={"accept": "text/plain"}, expect=406)


# -- /resource_providers/{uuid}/traits --------------------------------------------------

def test_set_get_delete_provider_traits(shared_placement: PlacementClient) -> None:
    a, b = sorted([custom("A"), custom("B")])
    create_traits(shared_placement, a, b)
    rp = shared_placement.create_provider()
    empty = shared_placement.get(f"/resource_providers/{rp}/traits", version="1.6", expect=200)
    assert empty.json() == {"traits": [], "resource_provider_generation": 0}
    assert "last-modified" not in empty.headers

    put = shared_placement.put(
        f"/resource_providers/{rp}/traits", version="1.6",
        json={"traits": [b, a, b, STANDARD], "resource_provider_generation": 0}, expect=200,
    )
    # Catalogue order, as upstream: standard traits (synced first), then custom ones as created.
    assert put.json() == {"traits": [STANDARD, a, b], "resource_provider_generation": 1}
    assert "last-modified" not in put.headers
    assert provider_traits(shared_placement, rp) == ([STANDARD, a, b], 1)
    assert shared_placement.generation(rp) == 1
    # The index sees the change: the provider is found by its new trait.
    found = shared_placement.get(f"/resource_providers?required={a}", expect=200).json()
    assert [p["uuid"] for p in found["resource_providers"]] == [rp]

    # Setting the same set again changes nothing, not even the generation.
    same = shared_placement.put(
        f"/resource_providers/{rp}/traits",
        json={"traits": [STANDARD, a, b], "resource_provider_generation": 1}, expect=200,
    )
    assert same.json()["resource_provider_generation"] == 1

    replaced = shared_placement.put(
        f"/resource_providers/{rp}/traits",
        json={"traits": [b], "resource_provider_generation": 1}, expect=200,
    )
    assert replaced.json() == {"traits": [b], "resource_provider_generation": 2}
    assert shared_placement.get(f"/resource_providers?required={a}").json() == {
        "resource_providers": []}

    deleted = shared_placement.delete(f"/resource_providers/{rp}/traits", expect=204)
    assert "content-type" not in deleted.headers
    assert provider_traits(shared_placement, rp) == ([], 3)
    # Deleting no traits leaves the generation alone.
    shared_placement.delete(f"/resource_providers/{rp}/traits", expect=204)
    assert provider_traits(shared_placement, rp) == ([], 3)


@pytest.mark.parametrize(("version", "cached"), [("1.14", False), ("1.15", True)])
def test_provider_traits_cache_headers(shared_placement: PlacementClient, version: str,
                                       cached: bool) -> None:
    name = custom()
    create_traits(shared_placement, name)
    rp = shared_placement.create_provider()
    for traits in ([], [name]):
        got = shared_placement.get(f"/resource_providers/{rp}/traits", version=version,
                                   expect=200)
        put = shared_placement.put(
            f"/resource_providers/{rp}/traits", version=version,
            json={"traits": traits, "resource_provider_generation": got.json()[
                "resource_provider_generation"]},
            expect=200,
        )
        for response in (got, put):
            assert ("last-modified" in response.headers) is cached
            assert ("cache-control" in response.headers) is cached


def test_generation_conflict_changes_nothing(shared_placement: PlacementClient) -> None:
    a, b = custom("A"), custom("B")
    create_traits(shared_placement, a, b)
    rp = shared_placement.create_provider()
    shared_placement.put(f"/resource_providers/{rp}/traits",
                         json={"traits": [a], "resource_provider_generation": 0}, expect=200)
    for version, code in (("1.22", None), ("1.23", "placement.concurrent_update")):
        response = shared_placement.put(
            f"/resource_providers/{rp}/traits", version=version,
            json={"traits": [b], "resource_provider_generation": 0}, expect=409,
        )
        entry = error(response)
        assert ("Resource provider's generation already changed. Please update the "
                "generation and try again.") in entry["detail"]
        assert entry.get("code") == code
    assert provider_traits(shared_placement, rp) == ([a], 1)


@pytest.mark.parametrize(("body", "detail"), [
    ({"traits": ["CUSTOM_NOPE_2", "{a}", "CUSTOM_NOPE_1"], "resource_provider_generation": 1},
     "No such trait CUSTOM_NOPE_1, CUSTOM_NOPE_2"),
    ({"traits": ["{a}"]}, "'resource_provider_generation' is a required property"),
    ({"resource_provider_generation": 1}, "'traits' is a required property"),
    ({"traits": ["{a}"], "resource_provider_generation": "invalid_generation"},
     "'invalid_generation' is not of type 'integer'"),
    ({"traits": "invalid_type", "resource_provider_generation": 1},
     "'invalid_type' is not of type 'array'"),
    ({"traits": [""], "resource_provider_generation": 1}, "JSON does not validate"),
    ({"traits": ["{a}"], "resource_provider_generation": 1, "additional": 1},
     "Additional properties are not allowed"),
])
def test_set_provider_traits_bad_body(shared_placement: PlacementClient, body: dict[str, Any],
                                      detail: str) -> None:
    a, b = custom("A"), custom("B")
    create_traits(shared_placement, a, b)
    rp = shared_placement.create_provider()
    shared_placement.put(f"/resource_providers/{rp}/traits",
                         json={"traits": [b], "resource_provider_generation": 0}, expect=200)
    if "traits" in body and isinstance(body["traits"], list):
        body = {**body, "traits": [t.format(a=a) for t in body["traits"]]}
    response = shared_placement.put(f"/resource_providers/{rp}/traits", json=body, expect=400)
    assert detail in error(response)["detail"]
    assert provider_traits(shared_placement, rp) == ([b], 1)


def test_set_provider_traits_needs_json(shared_placement: PlacementClient) -> None:
    rp = shared_placement.create_provider()
    shared_placement.put(f"/resource_providers/{rp}/traits", data="traits",
                         headers={"content-type": "text/plain"}, expect=415)
    shared_placement.put(f"/resource_providers/{rp}/traits", data="{",
                         headers={"content-type": "application/json"}, expect=400)
    shared_placement.get(f"/resource_providers/{rp}/traits",
                         headers={"accept": "text/plain"}, expect=406)
    assert provider_traits(shared_placement, rp) == ([], 0)


@pytest.mark.parametrize(("method", "detail"), [
    ("GET", "No resource provider with uuid {rp} found: No resource provider with uuid {rp} "
            "found"),
    ("PUT", "No resource provider with uuid {rp} found"),
    ("DELETE", "No resource provider with uuid {rp} found"),
])
def test_missing_provider(shared_placement: PlacementClient, method: str, detail: str) -> None:
    rp = str(uuid.uuid4())
    body = {"traits": [STANDARD], "resource_provider_generation": 0}
    response = shared_placement.request(method, f"/resource_providers/{rp}/traits",
                                        json=body if method == "PUT" else None, expect=404)
    assert detail.format(rp=rp) in error(response)["detail"]


# -- both backends ----------------------------------------------------------------------

def test_traits_on_both_backends(backend_placement: PlacementClient) -> None:
    client = backend_placement
    name = custom()
    with ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(lambda _: client.put(f"/traits/{name}").status_code,
                                   range(8)))
    assert statuses == [201] + [204] * 7
    rp = client.create_provider()
    client.put(f"/resource_providers/{rp}/traits",
               json={"traits": [name, STANDARD], "resource_provider_generation": 0},
               expect=200)
    client.put(f"/resource_providers/{rp}/traits",
               json={"traits": ["CUSTOM_NOPE"], "resource_provider_generation": 1}, expect=400)
    client.put(f"/resource_providers/{rp}/traits",
               json={"traits": [], "resource_provider_generation": 0}, expect=409)
    assert provider_traits(client, rp) == ([STANDARD, name], 1)
    assert client.get(f"/traits?name=in:{name}&associated=true").json() == {"traits": [name]}
    client.delete(f"/traits/{name}", expect=409)
    client.delete(f"/resource_providers/{rp}/traits", expect=204)
    client.delete(f"/traits/{name}", expect=204)
    assert client.get(f"/traits?name=in:{name}").json() == {"traits": []}
