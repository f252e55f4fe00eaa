"""Host aggregates, mirrored into placement: the aggregate's uuid is set on (and removed
from) the host's compute node provider."""

from __future__ import annotations

from typing import Any

import pytest

from moorage.api import microversion
from tests.api_fixtures import ComputeApi, just_before, version


def _register(api: ComputeApi, host: str) -> None:
    api.internal("PUT", f"/internal/services/{host}", expect=200,
                json={"driver": "fake", "nodes": [host], "agent_url": "http://127.0.0.1:9"})


def _aggregates_of(placement: Any, provider: str) -> list[str]:
    return list(placement.get(f"/resource_providers/{provider}/aggregates",
                              expect=200).json()["aggregates"])


def test_add_and_remove_host_mirror_to_placement(compute_api: ComputeApi,
                                                 placement: Any) -> None:
    _register(compute_api, "h1")
    provider = placement.create_provider("h1")
    other = "6e2f8c51-9c0c-4b8a-8d2c-3b1e0f4d7a10"  # set by someone else: left alone
    placement.put(f"/resource_providers/{provider}/aggregates", json={
        "resource_provider_generation": 0, "aggregates": [other]}, expect=200)
    created = compute_api.admin("POST", "/v2.1/os-aggregates", json={
        "aggregate": {"name": "fast", "availability_zone": "az1"}}, expect=200).json()
    aggregate = created["aggregate"]
    url = f"/v2.1/os-aggregates/{aggregate['id']}/action"
    added = compute_api.admin("POST", url, json={"add_host": {"host": "h1"}},
                              expect=200).json()["aggregate"]
    assert added["hosts"] == ["h1"]
    assert sorted(_aggregates_of(placement, provider)) == sorted([other, aggregate["uuid"]])
    compute_api.admin("POST", url, json={"add_host": {"host": "h1"}}, expect=409)
    removed = compute_api.admin("POST", url, json={"remove_host": {"host": "h1"}},
                                expect=200).json()["aggregate"]
    assert removed["hosts"] == []
    assert _aggregates_of(placement, provider) == [other]
    compute_api.admin("POST", url, json={"remove_host": {"host": "h1"}}, expect=404)


def test_metadata_zone_and_lifecycle(compute_api: ComputeApi) -> None:
    _register(compute_api, "h1")
    aggregate = compute_api.admin("POST", "/v2.1/os-aggregates", json={
        "aggregate": {"name": "a1"}}, expect=200).json()["aggregate"]
    base = f"/v2.1/os-aggregates/{aggregate['id']}"
    updated = compute_api.admin("POST", f"{base}/action", json={"set_metadata": {"metadata": {
        "ssd": "true", "availability_zone": "az2"}}}, expect=200).json()["aggregate"]
    assert updated["metadata"] == {"ssd": "true", "availability_zone": "az2"}
    assert updated["availability_zone"] == "az2"
    cleared = compute_api.admin("POST", f"{base}/action", json={"set_metadata": {
        "metadata": {"ssd": None}}}, expect=200).json()["aggregate"]
    assert cleared["metadata"] == {"availability_zone": "az2"}
    renamed = compute_api.admin("PUT", base, json={"aggregate": {"name": "a2"}},
                                expect=200).json()["aggregate"]
    assert renamed["name"] == "a2"
    # A host is in one availability zone at most.
    compute_api.admin("POST", f"{base}/action", json={"add_host": {"host": "h1"}},
                      expect=200)
    other = compute_api.admin("POST", "/v2.1/os-aggregates", json={
        "aggregate": {"name": "b", "availability_zone": "az3"}}, expect=200).json()
    message = compute_api.admin(
        "POST", f"/v2.1/os-aggregates/{other['aggregate']['id']}/action",
        json={"add_host": {"host": "h1"}}, expect=400).json()["badRequest"]["message"]
    assert "az2" in message
    # Not deleted while it has hosts.
    compute_api.admin("DELETE", base, expect=400)
    compute_api.admin("POST", f"{base}/action", json={"remove_host": {"host": "h1"}},
                      expect=200)
    compute_api.admin("DELETE", base, expect=200)
    compute_api.admin("GET", base, expect=404)


def test_bad_aggregate_requests(compute_api: ComputeApi) -> None:
    aggregate = compute_api.admin("POST", "/v2.1/os-aggregates", json={
        "aggregate": {"name": "a1"}}, expect=200).json()["aggregate"]
    url = f"/v2.1/os-aggregates/{aggregate['id']}/action"
    compute_api.admin("POST", "/v2.1/os-aggregates", json={"aggregate": {"name": "a1"}},
                      expect=409)
    compute_api.admin("POST", url, json={"add_host": {"host": "unknown"}}, expect=404)
    compute_api.admin("POST", url, json={"reboot": {}}, expect=400)
    compute_api.admin("POST", url, json={"add_host": "h1"}, expect=400)
    compute_api.admin("POST", "/v2.1/os-aggregates/999/action",
                      json={"add_host": {"host": "h1"}}, expect=404)
    compute_api.user("GET", "/v2.1/os-aggregates", expect=403)
    assert compute_api.admin("GET", url.rsplit("/", 1)[0]).json()["aggregate"]["hosts"] == []


# What each request answers just before AGGREGATE_UUID and at it: the uuid is shown
# from 2.41, in every answer that shows an aggregate, and nothing else changes.
_ANSWERS = [
    ("create", lambda api, at, ident: api.admin(
        "POST", "/v2.1/os-aggregates", headers=version(at), expect=200,
        json={"aggregate": {"name": f"new-{at}"}}).json()["aggregate"]),
    ("list", lambda api, at, ident: api.admin(
        "GET", "/v2.1/os-aggregates", headers=version(at), expect=200).json()["aggregates"][0]),
    ("show", lambda api, at, ident: api.admin(
        "GET", f"/v2.1/os-aggregates/{ident}", headers=version(at),
        expect=200).json()["aggregate"]),
    ("update", lambda api, at, ident: api.admin(
        "PUT", f"/v2.1/os-aggregates/{ident}", headers=version(at), expect=200,
        json={"aggregate": {"availability_zone": f"az-{at}"}}).json()["aggregate"]),
    ("set_metadata", lambda api, at, ident: api.admin(
        "POST", f"/v2.1/os-aggregates/{ident}/action", headers=version(at), expect=200,
        json={"set_metadata": {"metadata": {"k": "v"}}}).json()["aggregate"]),
]


@pytest.mark.parametrize(("what", "answer"), _ANSWERS, ids=[a[0] for a in _ANSWERS])
def test_the_uuid_is_shown_exactly_from_2_41(compute_api: ComputeApi, what: str,
                                             answer: Any) -> None:
    created = compute_api.admin("POST", "/v2.1/os-aggregates", json={
        "aggregate": {"name": "a1"}}, expect=200).json()["aggregate"]
    gate = microversion.AGGREGATE_UUID
    before = answer(compute_api, just_before(gate), created["id"])
    at = answer(compute_api, gate.version, created["id"])
    assert "uuid" not in before and len(at.pop("uuid")) == 36
    # nova's create answers without hosts and metadata (a new aggregate has neither).
    rest = set() if what == "create" else {"hosts", "metadata"}
    assert set(before) == set(at) == {
        "id", "name", "availability_zone", "created_at", "updated_at", "deleted",
        "deleted_at"} | rest
