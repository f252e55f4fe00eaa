"""GET /usages: what a project (or one of its users) consumes."""

from __future__ import annotations

import pytest

from tests.conftest import PlacementClient
from tests.functional.placement.test_allocation import (
    claim,
    error,
    make_provider,
    new_uuid,
)

PROJECT, OTHER_PROJECT = "usage-project", "usage-other-project"
USER, OTHER_USER = "usage-user", "usage-other-user"


@pytest.fixture(scope="module")
def loaded(shared_placement: PlacementClient) -> PlacementClient:
    """Consumers of two projects, of three types and none:

    project PROJECT: INSTANCE (user, 2 VCPU + 100 MB), INSTANCE (other user, 1 VCPU),
    PONY (user, 10 GB), and an untyped consumer (user, 1 VCPU + 50 MB);
    project OTHER_PROJECT: INSTANCE (user, 4 VCPU).
    """
    client = shared_placement
    rp = make_provider(client, {"VCPU": {"total": 64}, "MEMORY_MB": {"total": 4096},
                                "DISK_GB": {"total": 100}})
    claim(client, new_uuid(), {rp: {"VCPU": 2, "MEMORY_MB": 100}}, project=PROJECT, user=USER)
    claim(client, new_uuid(), {rp: {"VCPU": 1}}, project=PROJECT, user=OTHER_USER)
    claim(client, new_uuid(), {rp: {"DISK_GB": 10}}, project=PROJECT, user=USER,
          consumer_type="PONY")
    client.put(f"/allocations/{new_uuid()}", version="1.37", expect=204, json={
        "allocations": {rp: {"resources": {"VCPU": 1, "MEMORY_MB": 50}}},
        "project_id": PROJECT, "user_id": USER, "consumer_generation": None})
    claim(client, new_uuid(), {rp: {"VCPU": 4}}, project=OTHER_PROJECT, user=USER)
    return client


TOTALS = [
    # (query, usages at 1.9)
    (f"project_id={PROJECT}", {"VCPU": 4, "MEMORY_MB": 150, "DISK_GB": 10}),
    (f"project_id={PROJECT}&user_id={USER}", {"VCPU": 3, "MEMORY_MB": 150, "DISK_GB": 10}),
    (f"project_id={PROJECT}&user_id={OTHER_USER}", {"VCPU": 1}),
    (f"project_id={OTHER_PROJECT}", {"VCPU": 4}),
    (f"project_id={OTHER_PROJECT}&user_id={OTHER_USER}", {}),
    ("project_id=nobody", {}),
]


@pytest.mark.parametrize(("query", "usages"), TOTALS)
def test_totals_by_resource_class(loaded: PlacementClient, query: str,
                                  usages: dict[str, int]) -> None:
    for version in ("1.9", "1.37"):
        response = loaded.get(f"/usages?{query}", version=version, expect=200)
        assert response.json() == {"usages": usages}


BY_TYPE = [
    # (query, usages at 1.38)
    (f"project_id={PROJECT}", {
        "INSTANCE": {"VCPU": 3, "MEMORY_MB": 100, "consumer_count": 2},
        "PONY": {"DISK_GB": 10, "consumer_count": 1},
        "unknown": {"VCPU": 1, "MEMORY_MB": 50, "consumer_count": 1},
    }),
    (f"project_id={PROJECT}&user_id={USER}", {
        "INSTANCE": {"VCPU": 2, "MEMORY_MB": 100, "consumer_count": 1},
        "PONY": {"DISK_GB": 10, "consumer_count": 1},
        "unknown": {"VCPU": 1, "MEMORY_MB": 50, "consumer_count": 1},
    }),
    (f"project_id={PROJECT}&consumer_type=PONY", {"PONY": {"DISK_GB": 10, "consumer_count": 1}}),
    (f"project_id={PROJECT}&consumer_type=INSTANCE&user_id={OTHER_USER}",
     {"INSTANCE": {"VCPU": 1, "consumer_count": 1}}),
    (f"project_id={PROJECT}&consumer_type=all",
     {"all": {"VCPU": 4, "MEMORY_MB": 150, "DISK_GB": 10, "consumer_count": 4}}),
    (f"project_id={PROJECT}&consumer_type=unknown",
     {"unknown": {"VCPU": 1, "MEMORY_MB": 50, "consumer_count": 1}}),
    # Only the lower-case words are special.
    (f"project_id={PROJECT}&consumer_type=ALL", {}),
    (f"project_id={PROJECT}&consumer_type=UNKNOWN", {}),
    (f"project_id={PROJECT}&consumer_type=COW", {}),
    (f"project_id={OTHER_PROJECT}", {"INSTANCE": {"VCPU": 4, "consumer_count": 1}}),
    ("project_id=nobody&consumer_type=all", {}),
]


@pytest.mark.parametrize(("query", "usages"), BY_TYPE)
def test_totals_by_consumer_type_from_1_38(loaded: PlacementClient, query: str,
                                           usages: dict[str, dict[str, int]]) -> None:
    response = loaded.get(f"/usages?{query}", version="1.38", expect=200)
    assert response.json() == {"usages": usages}


def test_emptied_consumers_no_longer_count(shared_placement: PlacementClient) -> None:
    client = shared_placement
    project, consumer = new_uuid(), new_uuid()
    rp = make_provider(client)
    claim(client, consumer, {rp: {"VCPU": 2}}, project=project)
    assert client.get(f"/usages?project_id={project}", version="1.9").json() == {
        "usages": {"VCPU": 2}}
    claim(client, consumer, {}, generation=1, project=project)
    assert client.get(f"/usages?project_id={project}", version="1.9").json() == {"usages": {}}


BAD_QUERIES = [
    # (microversion, query, status, text the error detail holds)
    ("1.8", f"project_id={PROJECT}", 404, ""),
    ("1.9", "", 400, "'project_id' is a required property"),
    ("1.9", f"user_id={USER}", 400, "'project_id' is a required property"),
    ("1.9", "project_id=", 400, "Failed validating 'minLength'"),
    ("1.9", f"project_id={PROJECT}&user_id=", 400, "Failed validating 'minLength'"),
    ("1.9", f"project_id={'p' * 256}", 400, "Failed validating 'maxLength'"),
    ("1.9", f"project_id={PROJECT}&dummy=1", 400, "Additional properties are not allowed"),
    ("1.37", f"project_id={PROJECT}&consumer_type=PONY", 400,
     "Additional properties are not allowed"),
    ("1.38", f"project_id={PROJECT}&consumer_type=pony", 400, "does not match"),
]


@pytest.mark.parametrize(("version", "query", "status", "detail"), BAD_QUERIES)
def test_bad_queries(shared_placement: PlacementClient, version: str, query: str, status: int,
                     detail: str) -> None:
    response = shared_placement.get(f"/usages?{query}", version=version, expect=status)
    assert detail in error(response)["detail"]
    if status == 400:
        assert error(response)["detail"].count("Invalid query string parameters") == 1


def test_cache_headers_from_1_15(shared_placement: PlacementClient) -> None:
    old = shared_placement.get(f"/usages?project_id={PROJECT}", version="1.14", expect=200)
    assert "cache-control" not in old.headers and "last-modified" not in old.headers
    new = shared_placement.get(f"/usages?project_id={PROJECT}", version="1.15", expect=200)
    assert new.headers["cache-control"] == "no-cache"
    assert new.headers["last-modified"].endswith(" GMT")


def test_only_json_is_offered(shared_placement: PlacementClient) -> None:
    shared_placement.get(f"/usages?project_id={PROJECT}", headers={"accept": "text/html"},
                         expect=406)


@pytest.mark.parametrize(("project", "roles", "status"), [
    (PROJECT, "reader", 200),  # a reader of the project asked about
    (PROJECT, "member,reader", 200),
    (OTHER_PROJECT, "reader", 403),  # a reader of another project
    (OTHER_PROJECT, "member,reader", 403),
    (OTHER_PROJECT, "admin", 200),
    (OTHER_PROJECT, "service", 200),
    (PROJECT, "", 403),
])
def test_project_readers_see_their_project(shared_placement: PlacementClient, project: str,
                                           roles: str, status: int) -> None:
    response = shared_placement.get(f"/usages?project_id={PROJECT}", token=f"user:{project}",
                                    headers={"x-roles": roles})
    assert response.status_code == status, response.text


def test_names_a_refused_claim_recorded_are_not_remembered(shared_placement: PlacementClient,
                                                           ) -> None:
    """A refused claim rolls back the project and consumer type it recorded; a later
    name may get the same row id, and the first name must then get a new one."""
    client = shared_placement
    rp = make_provider(client, {"VCPU": {"total": 10}})
    fresh, decoy = new_uuid(), new_uuid()
    claim(client, new_uuid(), {rp: {"VCPU": 11}}, project=fresh, consumer_type="FRESH",
          expect=409)
    claim(client, new_uuid(), {rp: {"VCPU": 1}}, project=decoy, consumer_type="DECOY")
    claim(client, new_uuid(), {rp: {"VCPU": 2}}, project=fresh, consumer_type="FRESH")
    assert client.get(f"/usages?project_id={fresh}", version="1.38").json() == {
        "usages": {"FRESH": {"VCPU": 2, "consumer_count": 1}}}
    assert client.get(f"/usages?project_id={decoy}", version="1.38").json() == {
        "usages": {"DECOY": {"VCPU": 1, "consumer_count": 1}}}
