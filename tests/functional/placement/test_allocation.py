"""/allocations, /allocations/{consumer_uuid} and /resource_providers/{uuid}/allocations.

Most tests share one server and build their own providers and consumers; the
backend and concurrency tests start their own.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from moorage.placement.launcher import PlacementProcess
from tests.conftest import PlacementClient

PROJECT = "3b9b4b3a-4b65-4c57-9d4a-4f1f5d2c1e01"
USER = "b5f1a7e2-2f0c-4f7b-8f8b-77d6f2f3a902"
INCOMPLETE = "00000000-0000-0000-0000-000000000000"
COMPUTE = {"VCPU": {"total": 8, "max_unit": 8}, "MEMORY_MB": {"total": 4096},
           "DISK_GB": {"total": 100, "min_unit": 10, "max_unit": 50, "step_size": 10}}


# -- helpers shared with test_usage and test_reshaper --------------------------------------
def make_provider(client: PlacementClient, inventories: dict[str, dict[str, Any]] | None = None,
                  *, parent: str | None = None) -> str:
    """A new provider with these inventories (COMPUTE by default)."""
    rp = client.create_provider(parent=parent)
    client.put(f"/resource_providers/{rp}/inventories", expect=200, json={
        "resource_provider_generation": 0,
        "inventories": COMPUTE if inventories is None else inventories,
    })
    return rp


def claim(client: PlacementClient, consumer: str, resources: dict[str, dict[str, int]], *,
          generation: int | None = None, consumer_type: str = "INSTANCE",
          project: str = PROJECT, user: str = USER, expect: int | None = 204,
          version: str = "1.39") -> requests.Response:
    """PUT /allocations/{consumer} in the 1.38+ shape."""
    return client.put(f"/allocations/{consumer}", version=version, expect=expect, json={
        "allocations": {rp: {"resources": amounts} for rp, amounts in resources.items()},
        "project_id": project, "user_id": user, "consumer_generation": generation,
        "consumer_type": consumer_type,
    })


def usage(client: PlacementClient, rp: str) -> tuple[int, dict[str, int]]:
    """(generation, usages) of a provider."""
    body = client.get(f"/resource_providers/{rp}/usages", expect=200).json()
    return body["resource_provider_generation"], body["usages"]


def held(client: PlacementClient, consumer: str) -> dict[str, Any]:
    return client.get(f"/allocations/{consumer}", version="1.39", expect=200).json()


def error(response: requests.Response) -> dict[str, Any]:
    """The single error of a placement error body."""
    errors = response.json()["errors"]
    assert len(errors) == 1
    return errors[0]  # type: ignore[no-any-return]


def new_uuid() -> str:
    return str(uuid.uuid4())


# -- one PUT/GET round trip per body format ------------------------------------------------
def _listed(rp: str, amounts: dict[str, int]) -> dict[str, Any]:
    return {"allocations": [{"resource_provider": {"uuid": rp}, "resources": amounts}]}


def _keyed(rp: str, amounts: dict[str, int]) -> dict[str, Any]:
    return {"allocations": {rp: {"resources": amounts}}}


OWNERS = {"project_id": PROJECT, "user_id": USER}
FORMATS: list[tuple[str, Callable[[str, dict[str, int]], dict[str, Any]], set[str]]] = [
    # (microversion, body for (provider, amounts), keys GET shows besides "allocations")
    ("1.0", _listed, set()),
    ("1.8", lambda rp, a: {**_listed(rp, a), **OWNERS}, set()),
    ("1.12", lambda rp, a: {**_keyed(rp, a), **OWNERS}, {"project_id", "user_id"}),
    ("1.28", lambda rp, a: {**_keyed(rp, a), **OWNERS, "consumer_generation": None},
     {"project_id", "user_id", "consumer_generation"}),
    ("1.34", lambda rp, a: {**_keyed(rp, a), **OWNERS, "consumer_generation": None,
                            "mappings": {"_NET": [rp]}},
     {"project_id", "user_id", "consumer_generation"}),
    ("1.38", lambda rp, a: {**_keyed(rp, a), **OWNERS, "consumer_generation": None,
                            "consumer_type": "INSTANCE"},
     {"project_id", "user_id", "consumer_generation", "consumer_type"}),
]


@pytest.mark.parametrize(("version", "body", "extra_keys"), FORMATS,
                         ids=[f[0] for f in FORMATS])
def test_put_then_get_in_each_format(
    shared_placement: PlacementClient, version: str,
    body: Callable[[str, dict[str, int]], dict[str, Any]], extra_keys: set[str],
) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    amounts = {"VCPU": 2, "DISK_GB": 20}
    response = client.put(f"/allocations/{consumer}", json=body(rp, amounts), version=version,
                          expect=204)
    assert response.content == b""
    assert "content-type" not in response.headers
    assert "last-modified" not in response.headers

    generation, used = usage(client, rp)
    assert used == {"VCPU": 2, "MEMORY_MB": 0, "DISK_GB": 20}
    shown = client.get(f"/allocations/{consumer}", version=version, expect=200).json()
    assert shown.pop("allocations") == {rp: {"generation": generation, "resources": amounts}}
    assert set(shown) == extra_keys
    if "project_id" in extra_keys:
        assert (shown["project_id"], shown["user_id"]) == (PROJECT, USER)
    if "consumer_generation" in extra_keys:
        assert shown["consumer_generation"] == 1
    if "consumer_type" in extra_keys:
        assert shown["consumer_type"] == "INSTANCE"
    # The 1.12 shape of GET can be PUT back as it is.
    if version == "1.12":
        again = client.get(f"/allocations/{consumer}", version=version).json()
        client.put(f"/allocations/{consumer}", version=version, expect=204, json=again)


def test_before_1_8_the_configured_incomplete_owner_is_recorded(tmp_path: Path) -> None:
    project, user = "proj-of-old-clients", "user-of-old-clients"
    config = {"placement": {"incomplete_consumer_project_id": project,
                            "incomplete_consumer_user_id": user}}
    with PlacementProcess(tmp_path, config=config) as server:
        client = PlacementClient(server.url)
        rp, consumer = make_provider(client), new_uuid()
        client.put(f"/allocations/{consumer}", version="1.7", expect=204,
                   json=_listed(rp, {"VCPU": 1}))
        shown = client.get(f"/allocations/{consumer}", version="1.12").json()
        assert (shown["project_id"], shown["user_id"]) == (project, user)
        assert client.get(f"/usages?project_id={project}", version="1.9").json() == {
            "usages": {"VCPU": 1}}


def test_incomplete_owner_defaults_to_the_null_uuid(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    client.put(f"/allocations/{consumer}", version="1.7", expect=204,
               json=_listed(rp, {"VCPU": 1}))
    shown = client.get(f"/allocations/{consumer}", version="1.12").json()
    assert (shown["project_id"], shown["user_id"]) == (INCOMPLETE, INCOMPLETE)


def test_a_provider_listed_twice_before_1_12_keeps_its_last_entry(
    shared_placement: PlacementClient,
) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    body = {"allocations": [
        {"resource_provider": {"uuid": rp}, "resources": {"VCPU": 1}},
        {"resource_provider": {"uuid": rp}, "resources": {"MEMORY_MB": 64}},
    ], **OWNERS}
    client.put(f"/allocations/{consumer}", version="1.8", expect=204, json=body)
    assert held(client, consumer)["allocations"][rp]["resources"] == {"MEMORY_MB": 64}


# -- bad bodies ------------------------------------------------------------------------------
def _v28(rp: str) -> dict[str, Any]:
    return {**_keyed(rp, {"VCPU": 1}), **OWNERS, "consumer_generation": None}


def _v38(rp: str) -> dict[str, Any]:
    return {**_v28(rp), "consumer_type": "INSTANCE"}


BAD_BODIES: list[tuple[str, str, Callable[[str], Any], str]] = [
    # (case, microversion, body for a provider, text the error detail holds)
    ("empty list", "1.0", lambda rp: {"allocations": []}, "JSON does not validate"),
    ("zero amount", "1.0", lambda rp: _listed(rp, {"VCPU": 0}),
     "0 is less than the minimum of 1"),
    ("no resources", "1.0",
     lambda rp: {"allocations": [{"resource_provider": {"uuid": rp}}]},
     "'resources' is a required property"),
    ("empty resources", "1.0", lambda rp: _listed(rp, {}), "JSON does not validate"),
    ("provider uuid not a uuid", "1.0",
     lambda rp: {"allocations": [{"resource_provider": {"uuid": "nope"},
                                  "resources": {"VCPU": 1}}]},
     "'nope' is not a 'uuid'"),
    ("owner missing from 1.8", "1.8", lambda rp: {**_listed(rp, {"VCPU": 1}), "user_id": USER},
     "'project_id' is a required property"),
    ("empty project", "1.8", lambda rp: {**_listed(rp, {"VCPU": 1}), **OWNERS, "project_id": ""},
     "Failed validating 'minLength'"),
    ("long user", "1.8", lambda rp: {**_listed(rp, {"VCPU": 1}), **OWNERS, "user_id": "u" * 256},
     "Failed validating 'maxLength'"),
    ("list from 1.12", "1.12", lambda rp: {**_listed(rp, {"VCPU": 1}), **OWNERS},
     "JSON does not validate"),
    ("provider key not a uuid", "1.12", lambda rp: {**_keyed("nice_house", {"VCPU": 1}), **OWNERS},
     "does not match any of the regexes"),
    ("lower-case class", "1.12", lambda rp: {**_keyed(rp, {"vcpu": 1}), **OWNERS},
     "does not match any of the regexes"),
    ("empty allocations before 1.28", "1.27", lambda rp: {"allocations": {}, **OWNERS},
     "JSON does not validate"),
    ("unknown field", "1.12", lambda rp: {**_keyed(rp, {"VCPU": 1}), **OWNERS, "bad": 1},
     "Additional properties are not allowed"),
    ("no consumer generation from 1.28", "1.28", lambda rp: {**_keyed(rp, {"VCPU": 1}), **OWNERS},
     "'consumer_generation' is a required property"),
    ("mappings before 1.34", "1.33", lambda rp: {**_v28(rp), "mappings": {"a": [rp]}},
     "('mappings' was unexpected)"),
    ("mappings not lists", "1.34", lambda rp: {**_v28(rp), "mappings": {"alpha": "beta"}},
     "'beta' is not of type 'array'"),
    ("empty mappings", "1.34", lambda rp: {**_v28(rp), "mappings": {}}, "JSON does not validate"),
    ("consumer type before 1.38", "1.37", lambda rp: {**_v38(rp)},
     "('consumer_type' was unexpected)"),
    ("no consumer type from 1.38", "1.38", _v28, "'consumer_type' is a required property"),
    ("lower-case consumer type", "1.38", lambda rp: {**_v38(rp), "consumer_type": "instance"},
     "'instance' does not match '^[A-Z0-9_]+$'"),
    ("not JSON", "1.38", lambda rp: None, "Malformed JSON"),
]


@pytest.mark.parametrize(("version", "body", "detail"), [c[1:] for c in BAD_BODIES],
                         ids=[c[0] for c in BAD_BODIES])
def test_put_refuses_bad_bodies(shared_placement: PlacementClient, version: str,
                                body: Callable[[str], Any], detail: str) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    data = body(rp)
    if data is None:
        response = client.put(f"/allocations/{consumer}", version=version, data=b"{nope",
                              headers={"content-type": "application/json"})
    else:
        response = client.put(f"/allocations/{consumer}", version=version, json=data)
    assert response.status_code == 400, response.text
    assert detail in error(response)["detail"]
    assert held(client, consumer) == {"allocations": {}}
    assert usage(client, rp) == (1, {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0})


@pytest.mark.parametrize(("method", "path"), [("PUT", "/allocations/{consumer}"),
                                            ("POST", "/allocations")])
def test_writes_need_a_json_body(shared_placement: PlacementClient, method: str,
                                 path: str) -> None:
    response = shared_placement.request(method, path.format(consumer=new_uuid()), data="x",
                                        headers={"content-type": "text/plain"})
    assert response.status_code == 415


def test_put_refuses_a_consumer_that_is_not_a_uuid(shared_placement: PlacementClient) -> None:
    client = shared_placement
    response = claim(client, "not-a-uuid", {make_provider(client): {"VCPU": 1}}, expect=400)
    assert "Malformed consumer_uuid: not-a-uuid" in error(response)["detail"]


def test_a_dashless_consumer_uuid_is_stored_dashed(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    claim(client, consumer.replace("-", ""), {rp: {"VCPU": 1}})
    assert held(client, consumer)["allocations"][rp]["resources"] == {"VCPU": 1}


# -- claims that do not fit change nothing -----------------------------------------------------
REFUSED: list[tuple[str, Callable[[str, str], dict[str, dict[str, int]]], int, str]] = [
    # (case, resources for (provider, other provider), status, error detail)
    ("unknown provider", lambda rp, other: {"5ad6ef2b-9b41-4b6a-9d7d-a5d1c5b3a0f1": {"VCPU": 1}},
     400, "Allocation for resource provider '5ad6ef2b-9b41-4b6a-9d7d-a5d1c5b3a0f1' that does "
          "not exist."),
    ("unknown class", lambda rp, other: {rp: {"VCPU": 1, "CUSTOM_NOPE": 1}},
     400, "Unable to allocate inventory for consumer {consumer}: No such resource class "
          "CUSTOM_NOPE."),
    ("class without inventory", lambda rp, other: {rp: {"VCPU": 1, "PCI_DEVICE": 1}},
     409, "Unable to allocate inventory: Inventory for 'PCI_DEVICE' on resource provider "
          "'{rp}' invalid."),
    ("provider without any of the classes", lambda rp, other: {other: {"VCPU": 1}},
     409, "Unable to allocate inventory: Inventory for 'VCPU' on resource provider "
          "'{other}' invalid."),
    ("over capacity", lambda rp, other: {rp: {"VCPU": 8, "MEMORY_MB": 4097}},
     409, "Unable to allocate inventory: Unable to create allocation for 'MEMORY_MB' on "
          "resource provider '{rp}'. The requested amount would exceed the capacity."),
    ("above max_unit", lambda rp, other: {rp: {"DISK_GB": 60}},
     409, "Unable to create allocation for 'DISK_GB' on resource provider '{rp}'. The "
          "requested amount would violate inventory constraints."),
    ("below min_unit", lambda rp, other: {rp: {"DISK_GB": 5}},
     409, "The requested amount would violate inventory constraints."),
    ("off step_size", lambda rp, other: {rp: {"DISK_GB": 25}},
     409, "The requested amount would violate inventory constraints."),
]


@pytest.mark.parametrize(("resources", "status", "detail"), [c[1:] for c in REFUSED],
                         ids=[c[0] for c in REFUSED])
def test_refused_claims_change_nothing(
    shared_placement: PlacementClient, resources: Callable[[str, str], dict[str, dict[str, int]]],
    status: int, detail: str,
) -> None:
    client = shared_placement
    rp, other = make_provider(client), make_provider(client, {"DISK_GB": {"total": 10}})
    consumer = new_uuid()
    claim(client, consumer, {rp: {"VCPU": 2}})
    before = held(client, consumer), usage(client, rp), usage(client, other)

    response = claim(client, consumer, resources(rp, other), generation=1, expect=status)
    assert detail.format(consumer=consumer, rp=rp, other=other) in error(response)["detail"]
    assert (held(client, consumer), usage(client, rp), usage(client, other)) == before


def test_several_errors_report_the_unknown_provider_first(
    shared_placement: PlacementClient,
) -> None:
    client = shared_placement
    rp, missing = make_provider(client), new_uuid()
    response = claim(client, new_uuid(), {rp: {"CUSTOM_NOPE": 1}, missing: {"VCPU": 1}},
                     expect=400)
    assert f"Allocation for resource provider '{missing}' that does not exist." in (
        error(response)["detail"])


# -- consumer generations ------------------------------------------------------------------------
def test_consumer_generations(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()

    response = claim(client, consumer, {rp: {"VCPU": 1}}, generation=5, expect=409)
    assert error(response)["code"] == "placement.concurrent_update"
    assert "consumer generation conflict - expected null but got 5" in error(response)["detail"]
    assert held(client, consumer) == {"allocations": {}}

    claim(client, consumer, {rp: {"VCPU": 1}}, generation=None)
    assert held(client, consumer)["consumer_generation"] == 1
    for stale, expected in ((None, "expected 1 but got None"), (7, "expected 1 but got 7")):
        response = claim(client, consumer, {rp: {"VCPU": 2}}, generation=stale, expect=409)
        assert error(response)["code"] == "placement.concurrent_update"
        assert f"consumer generation conflict - {expected}" in error(response)["detail"]
    assert held(client, consumer)["allocations"][rp]["resources"] == {"VCPU": 1}

    claim(client, consumer, {rp: {"VCPU": 2}}, generation=1)
    claim(client, consumer, {rp: {"VCPU": 2}}, generation=2)
    assert held(client, consumer)["consumer_generation"] == 3
    # Before 1.28 the generation is neither given nor checked, but still moves.
    client.put(f"/allocations/{consumer}", version="1.27", expect=204,
               json={**_keyed(rp, {"VCPU": 3}), **OWNERS})
    assert held(client, consumer)["consumer_generation"] == 4


def test_empty_allocations_remove_the_consumer(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    claim(client, consumer, {rp: {"VCPU": 1}})
    generation, _ = usage(client, rp)

    claim(client, consumer, {}, generation=1)
    assert held(client, consumer) == {"allocations": {}}
    # As upstream, the provider the consumer gave up gets a new generation.
    assert usage(client, rp) == (generation + 1, {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0})
    # The consumer is gone: it is new again.
    claim(client, consumer, {rp: {"VCPU": 1}}, generation=None)
    assert held(client, consumer)["consumer_generation"] == 1


def test_empty_allocations_for_an_unknown_consumer_store_nothing(
    shared_placement: PlacementClient,
) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    claim(client, consumer, {}, generation=None)
    assert held(client, consumer) == {"allocations": {}}
    claim(client, consumer, {rp: {"VCPU": 1}}, generation=None)


# -- capacity ------------------------------------------------------------------------------------
def test_a_consumer_replacing_its_allocations_does_not_count_them_twice(
    shared_placement: PlacementClient,
) -> None:
    client = shared_placement
    rp = make_provider(client, {"VCPU": {"total": 4}})
    first, second = new_uuid(), new_uuid()
    claim(client, first, {rp: {"VCPU": 3}})
    claim(client, first, {rp: {"VCPU": 4}}, generation=1)
    response = claim(client, second, {rp: {"VCPU": 1}}, expect=409)
    assert "The requested amount would exceed the capacity." in error(response)["detail"]
    assert usage(client, rp)[1] == {"VCPU": 4}


@pytest.mark.parametrize(("inventory", "fits", "too_much"), [
    ({"total": 4, "reserved": 1, "allocation_ratio": 2.0}, 6, 7),
    ({"total": 10, "reserved": 0, "allocation_ratio": 0.5}, 5, 6),
    ({"total": 3, "reserved": 3, "allocation_ratio": 16.0}, 0, 1),
])
def test_capacity_is_total_less_reserved_times_ratio(
    shared_placement: PlacementClient, inventory: dict[str, Any], fits: int, too_much: int,
) -> None:
    client = shared_placement
    rp = make_provider(client, {"VCPU": inventory})
    if fits:
        claim(client, new_uuid(), {rp: {"VCPU": fits}})
    claim(client, new_uuid(), {rp: {"VCPU": too_much - fits}}, expect=409)
    assert usage(client, rp)[1] == {"VCPU": fits}


def test_an_over_committed_class_may_only_get_better(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp = make_provider(client, {"VCPU": {"total": 4}})
    big, small = new_uuid(), new_uuid()
    claim(client, big, {rp: {"VCPU": 4}})
    generation = usage(client, rp)[0]
    client.put(f"/resource_providers/{rp}/inventories", expect=200, json={
        "resource_provider_generation": generation, "inventories": {"VCPU": {"total": 2}}})

    claim(client, small, {rp: {"VCPU": 1}}, expect=409)  # 5 > 4 in use: worse
    claim(client, big, {rp: {"VCPU": 5}}, generation=1, expect=409)
    claim(client, big, {rp: {"VCPU": 4}}, generation=1)  # as bad as before: allowed
    claim(client, big, {rp: {"VCPU": 3}}, generation=2)  # better, still over: allowed
    assert usage(client, rp)[1] == {"VCPU": 3}


# -- generations of providers ---------------------------------------------------------------------
def test_provider_generations_follow_upstream(shared_placement: PlacementClient) -> None:
    client = shared_placement
    source, target, consumer = make_provider(client), make_provider(client), new_uuid()

    claim(client, consumer, {source: {"VCPU": 2}})
    assert usage(client, source) == (2, {"VCPU": 2, "MEMORY_MB": 0, "DISK_GB": 0})
    shown = held(client, consumer)
    assert shown["allocations"][source]["generation"] == 2

    # Moving: the provider named gets a new generation, the one given up does not.
    claim(client, consumer, {target: {"VCPU": 2}}, generation=1)
    assert usage(client, source) == (2, {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0})
    assert usage(client, target) == (2, {"VCPU": 2, "MEMORY_MB": 0, "DISK_GB": 0})

    # Deleting changes no generation.
    client.delete(f"/allocations/{consumer}", expect=204)
    assert usage(client, target) == (2, {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0})


# -- POST /allocations ----------------------------------------------------------------------------
def _post_body(entries: dict[str, dict[str, dict[str, int]]],
               generations: dict[str, int | None] | None = None,
               owners: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        consumer: {
            "allocations": {rp: {"resources": amounts} for rp, amounts in resources.items()},
            **(owners or OWNERS), "consumer_type": "INSTANCE",
            "consumer_generation": (generations or {}).get(consumer),
        }
        for consumer, resources in entries.items()
    }


def test_post_is_not_there_before_1_13(shared_placement: PlacementClient) -> None:
    shared_placement.post("/allocations", version="1.12", json={}, expect=404)
    response = shared_placement.get("/allocations", expect=405)
    assert response.headers["allow"] == "POST"


def test_post_writes_several_consumers(shared_placement: PlacementClient) -> None:
    client = shared_placement
    compute, storage = make_provider(client), make_provider(client, {"DISK_GB": {"total": 500}})
    instance, migration = new_uuid(), new_uuid()
    client.post("/allocations", version="1.39", expect=204, json=_post_body({
        instance: {compute: {"VCPU": 2, "MEMORY_MB": 512}, storage: {"DISK_GB": 50}},
        migration: {compute: {"VCPU": 1}},
    }))
    assert held(client, instance)["allocations"] == {
        compute: {"generation": 2, "resources": {"VCPU": 2, "MEMORY_MB": 512}},
        storage: {"generation": 2, "resources": {"DISK_GB": 50}},
    }
    assert usage(client, compute)[1] == {"VCPU": 3, "MEMORY_MB": 512, "DISK_GB": 0}

    # Move the migration's allocations to the instance and drop the migration.
    client.post("/allocations", version="1.39", expect=204, json=_post_body(
        {instance: {compute: {"VCPU": 3, "MEMORY_MB": 512}}, migration: {}},
        {instance: 1, migration: 1},
    ))
    assert held(client, migration) == {"allocations": {}}
    assert held(client, instance)["consumer_generation"] == 2
    assert usage(client, compute) == (3, {"VCPU": 3, "MEMORY_MB": 512, "DISK_GB": 0})
    assert usage(client, storage) == (2, {"DISK_GB": 0})


def test_post_is_all_or_nothing(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp = make_provider(client, {"VCPU": {"total": 2}})
    first, second = new_uuid(), new_uuid()
    # Each fits alone; together they do not.
    response = client.post("/allocations", version="1.39", expect=409, json=_post_body(
        {first: {rp: {"VCPU": 1}}, second: {rp: {"VCPU": 2}}}))
    assert "The requested amount would exceed the capacity." in error(response)["detail"]
    assert held(client, first) == {"allocations": {}}
    assert usage(client, rp) == (1, {"VCPU": 0})

    claim(client, first, {rp: {"VCPU": 1}})
    response = client.post("/allocations", version="1.39", expect=409, json=_post_body(
        {first: {rp: {"VCPU": 2}}, second: {rp: {"VCPU": 1}}}, {first: 1, second: 3}))
    assert "consumer generation conflict - expected null but got 3" in error(response)["detail"]
    assert held(client, first)["allocations"][rp]["resources"] == {"VCPU": 1}


@pytest.mark.parametrize(("resources", "status", "detail"), [
    ({"CUSTOM_PONY": 1}, 400, "Unable to allocate inventory No such resource class CUSTOM_PONY."),
    ({"PCI_DEVICE": 1}, 409, "Unable to allocate inventory: Inventory for 'PCI_DEVICE' on"),
])
def test_post_error_texts(shared_placement: PlacementClient, resources: dict[str, int],
                          status: int, detail: str) -> None:
    client = shared_placement
    rp = make_provider(client)
    response = client.post("/allocations", version="1.39", expect=status,
                           json=_post_body({new_uuid(): {rp: resources}}))
    assert detail in error(response)["detail"]


@pytest.mark.parametrize(("version", "body", "detail"), [
    ("1.13", {}, "JSON does not validate"),
    ("1.13", {"not-a-uuid": {}}, "does not match any of the regexes"),
    ("1.13", {"5ad6ef2b-9b41-4b6a-9d7d-a5d1c5b3a0f1": {"cow": "moo"}},
     "Additional properties are not allowed"),
    ("1.28", {"5ad6ef2b-9b41-4b6a-9d7d-a5d1c5b3a0f1": {"allocations": {}, **OWNERS}},
     "'consumer_generation' is a required property"),
    ("1.33", {"5ad6ef2b-9b41-4b6a-9d7d-a5d1c5b3a0f1": {
        "allocations": {}, **OWNERS, "consumer_generation": None, "mappings": {"x": []}}},
     "('mappings' was unexpected)"),
    ("1.38", {"5ad6ef2b-9b41-4b6a-9d7d-a5d1c5b3a0f1": {
        "allocations": {}, **OWNERS, "consumer_generation": None}},
     "'consumer_type' is a required property"),
])
def test_post_refuses_bad_bodies(shared_placement: PlacementClient, version: str,
                                 body: dict[str, Any], detail: str) -> None:
    response = shared_placement.post("/allocations", version=version, json=body, expect=400)
    assert detail in error(response)["detail"]


def test_post_before_1_28_takes_no_generation(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    for amount in (1, 2):  # a new consumer, then an existing one
        client.post("/allocations", version="1.27", expect=204, json={
            consumer: {**_keyed(rp, {"VCPU": amount}), **OWNERS}})
    assert held(client, consumer)["consumer_generation"] == 2
    assert held(client, consumer)["allocations"][rp]["resources"] == {"VCPU": 2}


def test_post_with_mappings_from_1_34(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    body = _post_body({consumer: {rp: {"VCPU": 1}}})
    del body[consumer]["consumer_type"]
    body[consumer]["mappings"] = {"": [rp], "_NET1": [rp]}
    client.post("/allocations", version="1.34", json=body, expect=204)
    assert held(client, consumer)["allocations"][rp]["resources"] == {"VCPU": 1}


# -- DELETE and the reads ------------------------------------------------------------------------
def test_delete(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    claim(client, consumer, {rp: {"VCPU": 1, "MEMORY_MB": 10}})
    response = client.delete(f"/allocations/{consumer}", expect=204)
    assert response.content == b""
    assert held(client, consumer) == {"allocations": {}}
    assert usage(client, rp)[1] == {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}

    response = client.delete(f"/allocations/{consumer}", expect=404)
    assert f"No allocations for consumer '{consumer}'" in error(response)["detail"]
    claim(client, consumer, {rp: {"VCPU": 1}}, generation=None)  # the consumer was removed


def test_get_consumer_allocations(shared_placement: PlacementClient) -> None:
    client = shared_placement
    first, second, consumer = make_provider(client), make_provider(client), new_uuid()
    claim(client, consumer, {first: {"VCPU": 1}, second: {"MEMORY_MB": 64, "DISK_GB": 10}})
    assert held(client, consumer) == {
        "allocations": {
            first: {"generation": 2, "resources": {"VCPU": 1}},
            second: {"generation": 2, "resources": {"MEMORY_MB": 64, "DISK_GB": 10}},
        },
        "project_id": PROJECT, "user_id": USER, "consumer_generation": 1,
        "consumer_type": "INSTANCE",
    }
    assert client.get("/allocations/not-even-a-uuid", expect=200).json() == {"allocations": {}}
    client.get(f"/allocations/{consumer}", headers={"accept": "text/plain"}, expect=406)


@pytest.mark.parametrize("path", ["/allocations/{consumer}",
                                  "/resource_providers/{rp}/allocations"])
def test_cache_headers_from_1_15(shared_placement: PlacementClient, path: str) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    claim(client, consumer, {rp: {"VCPU": 1}})
    url = path.format(consumer=consumer, rp=rp)
    old = client.get(url, version="1.14", expect=200)
    assert "last-modified" not in old.headers and "cache-control" not in old.headers
    new = client.get(url, version="1.15", expect=200)
    assert new.headers["cache-control"] == "no-cache"
    assert new.headers["last-modified"].endswith(" GMT")


def test_get_provider_allocations(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp, first, second = make_provider(client), new_uuid(), new_uuid()
    assert client.get(f"/resource_providers/{rp}/allocations").json() == {
        "allocations": {}, "resource_provider_generation": 1}
    claim(client, first, {rp: {"VCPU": 1}})
    claim(client, second, {rp: {"VCPU": 2, "MEMORY_MB": 8}})
    claim(client, second, {rp: {"VCPU": 2, "MEMORY_MB": 16}}, generation=1)

    shown = client.get(f"/resource_providers/{rp}/allocations", version="1.28").json()
    assert shown == {
        "resource_provider_generation": 4,
        "allocations": {
            first: {"resources": {"VCPU": 1}, "consumer_generation": 1},
            second: {"resources": {"VCPU": 2, "MEMORY_MB": 16}, "consumer_generation": 2},
        },
    }
    older = client.get(f"/resource_providers/{rp}/allocations", version="1.27").json()
    assert older["allocations"][second] == {"resources": {"VCPU": 2, "MEMORY_MB": 16}}

    missing = new_uuid()
    response = client.get(f"/resource_providers/{missing}/allocations", expect=404)
    assert (f"Resource provider '{missing}' not found: No resource provider with uuid "
            f"{missing} found") in error(response)["detail"]


# -- owners and consumer types -------------------------------------------------------------------
def test_a_claim_may_change_the_consumer_owner_and_type(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    other_project, other_user = new_uuid(), new_uuid()
    claim(client, consumer, {rp: {"VCPU": 1}})
    claim(client, consumer, {rp: {"VCPU": 1}}, generation=1, project=other_project,
          user=other_user, consumer_type="MIGRATION")
    shown = held(client, consumer)
    assert (shown["project_id"], shown["user_id"], shown["consumer_type"]) == (
        other_project, other_user, "MIGRATION")
    # Before 1.38 the type is kept.
    client.put(f"/allocations/{consumer}", version="1.37", expect=204, json={
        **_keyed(rp, {"VCPU": 2}), **OWNERS, "consumer_generation": 2})
    assert held(client, consumer)["consumer_type"] == "MIGRATION"


def test_consumers_without_a_type_show_unknown(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    client.put(f"/allocations/{consumer}", version="1.37", expect=204, json={
        **_keyed(rp, {"VCPU": 1}), **OWNERS, "consumer_generation": None})
    assert held(client, consumer)["consumer_type"] == "unknown"


# -- policy ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/allocations/{consumer}"),
    ("PUT", "/allocations/{consumer}"),
    ("DELETE", "/allocations/{consumer}"),
    ("POST", "/allocations"),
    ("GET", "/resource_providers/{rp}/allocations"),
])
def test_non_admins_are_refused(shared_placement: PlacementClient, method: str,
                                path: str) -> None:
    client = shared_placement
    rp, consumer = make_provider(client), new_uuid()
    claim(client, consumer, {rp: {"VCPU": 1}})
    body = {"allocations": {}, **OWNERS, "consumer_generation": 1, "consumer_type": "INSTANCE"}
    response = client.request(method, path.format(consumer=consumer, rp=rp), token="someone",
                              json={consumer: body} if method == "POST" else body)
    assert response.status_code == 403, response.text
    assert held(client, consumer)["allocations"][rp]["resources"] == {"VCPU": 1}


# -- both backends, and concurrency -----------------------------------------------------------
def test_claim_lifecycle_on_each_backend(backend_placement: PlacementClient) -> None:
    client = backend_placement
    rp, consumer, other = make_provider(client), new_uuid(), new_uuid()
    claim(client, consumer, {rp: {"VCPU": 4}})
    claim(client, consumer, {rp: {"VCPU": 6}}, generation=1)
    claim(client, other, {rp: {"VCPU": 3}}, expect=409)
    client.post("/allocations", version="1.39", expect=204, json=_post_body(
        {consumer: {rp: {"VCPU": 5}}, other: {rp: {"VCPU": 3}}}, {consumer: 2}))
    assert usage(client, rp) == (4, {"VCPU": 8, "MEMORY_MB": 0, "DISK_GB": 0})
    assert client.get(f"/usages?project_id={PROJECT}", version="1.38").json() == {
        "usages": {"INSTANCE": {"VCPU": 8, "consumer_count": 2}}}
    client.delete(f"/allocations/{consumer}", expect=204)
    claim(client, other, {}, generation=1)
    assert usage(client, rp) == (5, {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0})
    assert client.get(f"/resource_providers/{rp}/allocations").json()["allocations"] == {}


def _race(url: str, jobs: list[tuple[str, dict[str, Any]]]) -> list[requests.Response]:
    """Send the PUTs at once, one thread and connection each."""
    barrier = threading.Barrier(len(jobs))
    results: list[requests.Response | None] = [None] * len(jobs)

    def run(index: int, path: str, body: dict[str, Any]) -> None:
        session = requests.Session()
        headers = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
        barrier.wait()
        results[index] = session.put(url + path, json=body, headers=headers, timeout=60)

    threads = [threading.Thread(target=run, args=(i, path, body))
               for i, (path, body) in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [r for r in results if r is not None]


def test_concurrent_claims_never_share_the_last_capacity_on_postgresql(
    tmp_path: Path, postgresql_url: str,
) -> None:
    # Two processes of four threads each, so that claims really run at once.
    config = {"placement_server": {"threads": 8}}
    with PlacementProcess(tmp_path, database_url=postgresql_url, workers=2,
                          config=config) as server:
        client = PlacementClient(server.url)
        for _ in range(3):
            rp = make_provider(client, {"VCPU": {"total": 2}})
            jobs = [
                (f"/allocations/{new_uuid()}",
                 {"allocations": {rp: {"resources": {"VCPU": 1}}}, **OWNERS,
                  "consumer_generation": None, "consumer_type": "INSTANCE"})
                for _ in range(12)
            ]
            results = _race(server.url, jobs)
            statuses = sorted(r.status_code for r in results)
            assert statuses == [204, 204] + [409] * 10, [r.text for r in results]
            assert usage(client, rp)[1] == {"VCPU": 2}
            allocations = client.get(f"/resource_providers/{rp}/allocations").json()
            assert len(allocations["allocations"]) == 2


def test_concurrent_claims_of_one_new_consumer_on_postgresql(
    tmp_path: Path, postgresql_url: str,
) -> None:
    with PlacementProcess(tmp_path, database_url=postgresql_url, workers=2) as server:
        client = PlacementClient(server.url)
        rp, consumer = make_provider(client, {"VCPU": {"total": 100}}), new_uuid()
        body = {"allocations": {rp: {"resources": {"VCPU": 1}}}, **OWNERS,
                "consumer_generation": None, "consumer_type": "INSTANCE"}
        results = _race(server.url, [(f"/allocations/{consumer}", body)] * 6)
        statuses = sorted(r.status_code for r in results)
        assert statuses == [204] + [409] * 5, [r.text for r in results]
        assert held(client, consumer)["consumer_generation"] == 1
        assert usage(client, rp)[1] == {"VCPU": 1}
