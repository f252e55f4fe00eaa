"""/resource_providers/{uuid}/aggregates over real HTTP."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from tests.conftest import PlacementClient


def agg() -> str:
    return str(uuid.uuid4())


def error(response: requests.Response) -> dict[str, Any]:
    """The single entry of a placement error body."""
    entries = response.json()["errors"]
    assert len(entries) == 1
    return dict(entries[0])


def aggregates_of(client: PlacementClient, rp: str) -> tuple[list[str], int]:
    body = client.get(f"/resource_providers/{rp}/aggregates", expect=200).json()
    return body["aggregates"], body["resource_provider_generation"]


def members(client: PlacementClient, aggregate: str) -> set[str]:
    """Providers GET /resource_providers finds in ``aggregate`` (the index's view)."""
    body = client.get(f"/resource_providers?member_of={aggregate}", expect=200).json()
    return {p["uuid"] for p in body["resource_providers"]}


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_absent_before_1_1(shared_placement: PlacementClient, method: str) -> None:
    rp = shared_placement.create_provider()
    shared_placement.request(method, f"/resource_providers/{rp}/aggregates", json=[agg()],
                             version="1.0", expect=404)
    assert aggregates_of(shared_placement, rp) == ([], 0)


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_non_admin_is_forbidden(shared_placement: PlacementClient, method: str) -> None:
    rp = shared_placement.create_provider()
    body = {"aggregates": [agg()], "resource_provider_generation": 0}
    response = shared_placement.request(method, f"/resource_providers/{rp}/aggregates",
                                        json=body, token="user", expect=403)
    assert ("Policy does not allow placement:resource_providers:aggregates:"
            in error(response)["detail"])
    assert aggregates_of(shared_placement, rp) == ([], 0)


@pytest.mark.parametrize(("method", "body"), [
    ("GET", None),
    ("PUT", {"aggregates": [], "resource_provider_generation": 0}),
    # The provider is looked up before the body is validated, as upstream.
    ("PUT", []),
])
def test_missing_provider(shared_placement: PlacementClient, method: str, body: Any) -> None:
    rp = str(uuid.uuid4())
    response = shared_placement.request(method, f"/resource_providers/{rp}/aggregates",
                                        json=body, expect=404)
    assert f"No resource provider with uuid {rp} found" in error(response)["detail"]


@pytest.mark.parametrize("version", ["1.1", "1.18"])
def test_before_1_19_plain_list_and_generation_unchanged(
    shared_placement: PlacementClient, version: str
) -> None:
    rp = shared_placement.create_provider()
    a, b = agg(), agg()
    path = f"/resource_providers/{rp}/aggregates"
    assert shared_placement.get(path, version=version, expect=200).json() == {"aggregates": []}
    put = shared_placement.put(path, json=[b, a], version=version, expect=200)
    # The response echoes the request's order.
    assert put.json() == {"aggregates": [b, a]}
    got = shared_placement.get(path, version=version, expect=200).json()
    assert got == {"aggregates": sorted([a, b])}
    assert shared_placement.generation(rp) == 0
    assert rp in members(shared_placement, a)
    shared_placement.put(path, json=[], version=version, expect=200)
    assert aggregates_of(shared_placement, rp) == ([], 0)
    assert rp not in members(shared_placement, a)


def test_from_1_19_generation_checked_and_incremented(shared_placement: PlacementClient) -> None:
    rp = shared_placement.create_provider()
    a, b = agg(), agg()
    path = f"/resource_providers/{rp}/aggregates"
    put = shared_placement.put(
        path, json={"aggregates": [a, b], "resource_provider_generation": 0}, version="1.19",
        expect=200,
    )
    assert put.json() == {"aggregates": [a, b], "resource_provider_generation": 1}
    assert aggregates_of(shared_placement, rp) == (sorted([a, b]), 1)
    assert shared_placement.generation(rp) == 1
    # Even an unchanged set increments the generation, as upstream.
    same = shared_placement.put(
        path, json={"aggregates": [b, a], "resource_provider_generation": 1}, expect=200)
    assert same.json()["resource_provider_generation"] == 2
    cleared = shared_placement.put(
        path, json={"aggregates": [], "resource_provider_generation": 2}, expect=200)
    assert cleared.json() == {"aggregates": [], "resource_provider_generation": 3}
    assert rp not in members(shared_placement, a)


@pytest.mark.parametrize(("version", "code"), [("1.19", None),
                                               ("1.23", "placement.concurrent_update")])
def test_stale_generation_changes_nothing(shared_placement: PlacementClient, version: str,
                                          code: str | None) -> None:
    rp = shared_placement.create_provider()
    a = agg()
    path = f"/resource_providers/{rp}/aggregates"
    shared_placement.put(path, json={"aggregates": [a], "resource_provider_generation": 0},
                         expect=200)
    response = shared_placement.put(
        path, json={"aggregates": [agg()], "resource_provider_generation": 0},
        version=version, expect=409,
    )
    entry = error(response)
    assert ("Resource provider's generation already changed. Please update the generation "
            "and try again.") in entry["detail"]
    assert entry.get("code") == code
    assert aggregates_of(shared_placement, rp) == ([a], 1)


A1 = "f918801a-5e54-4bee-9095-09a9d0c786b8"


@pytest.mark.parametrize(("version", "body", "detail"), [
    ("1.19", [A1], "JSON does not validate"),
    ("1.18", {"aggregates": [A1], "resource_provider_generation": 1},
     "JSON does not validate"),
    ("1.19", {"aggregates": [A1]}, "'resource_provider_generation' is a required property"),
    ("1.19", {"resource_provider_generation": 1}, "'aggregates' is a required property"),
    ("1.19", {"aggregates": ["harry"], "resource_provider_generation": 1},
     "'harry' is not a 'uuid'"),
    ("1.19", {"aggregates": [A1, A1], "resource_provider_generation": 1},
     "has non-unique elements"),
    ("1.19", {"aggregates": [A1], "resource_provider_generation": 1, "x": 1},
     "Additional properties are not allowed"),
    ("1.1", ["sally"], "'sally' is not a 'uuid'"),
    ("1.1", [A1, A1], "has non-unique elements"),
    ("1.19", {"aggregates": [f"{{{A1}}}"], "resource_provider_generation": 1},
     "is not in the 8-4-4-4-12 form"),
])
def test_bad_body_changes_nothing(shared_placement: PlacementClient, version: str, body: Any,
                                  detail: str) -> None:
    rp = shared_placement.create_provider()
    kept = agg()
    path = f"/resource_providers/{rp}/aggregates"
    shared_placement.put(path, json={"aggregates": [kept], "resource_provider_generation": 0},
                         expect=200)
    response = shared_placement.put(path, json=body, version=version, expect=400)
    assert detail in error(response)["detail"]
    assert aggregates_of(shared_placement, rp) == ([kept], 1)


def test_body_must_be_json(shared_placement: PlacementClient) -> None:
    rp = shared_placement.create_provider()
    path = f"/resource_providers/{rp}/aggregates"
    response = shared_placement.put(path, data='{"bad", "not json"}',
                                    headers={"content-type": "application/json"}, expect=400)
    assert "Malformed JSON" in error(response)["detail"]
    shared_placement.put(path, data="[]", headers={"content-type": "text/plain"}, expect=415)
    shared_placement.get(path, headers={"accept": "text/plain"}, expect=406)
    assert aggregates_of(shared_placement, rp) == ([], 0)


def test_uuid_spelling_is_kept(shared_placement: PlacementClient) -> None:
    rp = shared_placement.create_provider()
    upper, bare = agg().upper(), agg().replace("-", "")
    path = f"/resource_providers/{rp}/aggregates"
    shared_placement.put(path, json=[upper, bare], version="1.1", expect=200)
    assert aggregates_of(shared_placement, rp) == (sorted([upper, bare]), 0)
    assert members(shared_placement, upper) == {rp}


@pytest.mark.parametrize(("method", "version", "cached"), [
    ("GET", "1.14", False), ("PUT", "1.14", False), ("GET", "1.15", True), ("PUT", "1.15", True),
])
def test_cache_headers(shared_placement: PlacementClient, method: str, version: str,
                       cached: bool) -> None:
    rp = shared_placement.create_provider()
    response = shared_placement.request(method, f"/resource_providers/{rp}/aggregates",
                                        json=[agg()], version=version, expect=200)
    assert ("last-modified" in response.headers) is cached
    assert ("cache-control" in response.headers) is cached


def test_aggregate_shared_between_providers(shared_placement: PlacementClient) -> None:
    shared, own = agg(), agg()
    rp1, rp2 = shared_placement.create_provider(), shared_placement.create_provider()
    shared_placement.put(f"/resource_providers/{rp1}/aggregates", json=[shared, own],
                         version="1.1", expect=200)
    shared_placement.put(f"/resource_providers/{rp2}/aggregates", json=[shared],
                         version="1.1", expect=200)
    assert members(shared_placement, shared) == {rp1, rp2}
    assert members(shared_placement, own) == {rp1}
    shared_placement.put(f"/resource_providers/{rp1}/aggregates", json=[own], version="1.1",
                         expect=200)
    assert members(shared_placement, shared) == {rp2}


def test_aggregates_on_both_backends(backend_placement: PlacementClient) -> None:
    client = backend_placement
    new = agg()
    rps = [client.create_provider() for _ in range(6)]

    def put(rp: str) -> int:
        body = {"aggregates": [new], "resource_provider_generation": 0}
        return client.put(f"/resource_providers/{rp}/aggregates", json=body).status_code

    # Several providers joining one new aggregate at once all succeed.
    with ThreadPoolExecutor(6) as pool:
        assert list(pool.map(put, rps)) == [200] * 6
    assert members(client, new) == set(rps)
    client.put(f"/resource_providers/{rps[0]}/aggregates",
               json={"aggregates": [], "resource_provider_generation": 0}, expect=409)
    client.put(f"/resource_providers/{rps[0]}/aggregates",
               json={"aggregates": [], "resource_provider_generation": 1}, expect=200)
    assert members(client, new) == set(rps[1:])
    assert aggregates_of(client, rps[0]) == ([], 2)
