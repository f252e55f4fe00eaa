"""/resource_providers/{uuid}/inventories* and /resource_providers/{uuid}/usages over real HTTP."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from moorage.placement.launcher import PlacementProcess
from tests.conftest import PlacementClient

MAX_INT = 2147483647
HTTP_DATE = re.compile(r"^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT$")


def inventories_url(rp: str) -> str:
    return f"/resource_providers/{rp}/inventories"


def inventory_url(rp: str, rc: str) -> str:
    return f"/resource_providers/{rp}/inventories/{rc}"


def state(client: PlacementClient, rp: str) -> dict[str, Any]:
    """Everything the inventory API can show of a provider: to check nothing changed."""
    return dict(client.get(inventories_url(rp), expect=200).json())


def error(response: requests.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    errors = response.json()["errors"]
    assert len(errors) == 1
    return dict(errors[0])


def provider_with(client: PlacementClient, inventories: dict[str, dict[str, Any]]) -> str:
    rp = client.create_provider()
    if inventories:
        client.put(inventories_url(rp), json={
            "resource_provider_generation": 0, "inventories": inventories,
        }, expect=200)
    return rp


def full(total: int, **fields: Any) -> dict[str, Any]:
    """An inventory as the API shows it: the given fields over the defaults."""
    return {"total": total, "reserved": 0, "min_unit": 1, "max_unit": MAX_INT, "step_size": 1,
            "allocation_ratio": 1.0, **fields}


# -- the whole life of an inventory, on both backends ---------------------------------


def test_inventory_lifecycle(backend_placement: PlacementClient) -> None:
    client = backend_placement
    rp = client.create_provider("cn1")
    assert state(client, rp) == {"resource_provider_generation": 0, "inventories": {}}

    created = client.post(inventories_url(rp), json={
        "resource_class": "DISK_GB", "total": 2048, "reserved": 512, "min_unit": 10,
        "max_unit": 1024, "step_size": 10, "allocation_ratio": 1.5,
    }, expect=201)
    assert created.headers["location"] == client.url + inventory_url(rp, "DISK_GB")
    disk = {"total": 2048, "reserved": 512, "min_unit": 10, "max_unit": 1024, "step_size": 10,
            "allocation_ratio": 1.5}
    assert created.json() == {**disk, "resource_provider_generation": 1}
    assert client.get(inventory_url(rp, "DISK_GB"), expect=200).json() == {
        **disk, "resource_provider_generation": 1}

    updated = client.put(inventory_url(rp, "DISK_GB"), json={
        "resource_provider_generation": 1, "total": 4096, "reserved": 1024,
    }, expect=200).json()
    assert updated == {**full(4096, reserved=1024), "resource_provider_generation": 2}

    replaced = client.put(inventories_url(rp), json={
        "resource_provider_generation": 2,
        "inventories": {"VCPU": {"total": 8, "allocation_ratio": 16}, "DISK_GB": {"total": 100}},
    }, expect=200).json()
    expected = {"VCPU": full(8, allocation_ratio=16.0), "DISK_GB": full(100)}
    assert replaced == {"resource_provider_generation": 3, "inventories": expected}
    assert state(client, rp) == replaced
    # The provider shows the same generation.
    assert client.generation(rp) == 3

    client.delete(inventory_url(rp, "DISK_GB"), expect=204)
    assert state(client, rp) == {"resource_provider_generation": 4,
                                 "inventories": {"VCPU": full(8, allocation_ratio=16.0)}}
    client.delete(inventories_url(rp), expect=204)
    assert state(client, rp) == {"resource_provider_generation": 5, "inventories": {}}
    # Emptying an empty inventory still counts as a change, as upstream.
    client.delete(inventories_url(rp), expect=204)
    assert client.generation(rp) == 6


def test_put_all_adds_updates_and_removes_in_one_go(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp = provider_with(client, {"VCPU": {"total": 4}, "MEMORY_MB": {"total": 1024},
                                "DISK_GB": {"total": 10}})
    body = client.put(inventories_url(rp), json={
        "resource_provider_generation": 1,
        "inventories": {"VCPU": {"total": 4}, "MEMORY_MB": {"total": 2048},
                        "IPV4_ADDRESS": {"total": 5}},
    }, expect=200).json()
    expected = {"VCPU": full(4), "MEMORY_MB": full(2048), "IPV4_ADDRESS": full(5)}
    assert body == {"resource_provider_generation": 2, "inventories": expected}
    assert state(client, rp) == body
    # Replacing with the same inventory still bumps the generation.
    client.put(inventories_url(rp), json={
        "resource_provider_generation": 2, "inventories": {k: dict(v) for k, v in expected.items()},
    }, expect=200)
    assert client.generation(rp) == 3
    # An empty PUT (any microversion) removes everything.
    client.put(inventories_url(rp), json={"resource_provider_generation": 3, "inventories": {}},
               version="1.4", expect=200)
    assert state(client, rp) == {"resource_provider_generation": 4, "inventories": {}}


def test_custom_resource_class_inventory(shared_placement: PlacementClient) -> None:
    client = shared_placement
    client.put("/resource_classes/CUSTOM_INV_GOLD", version="1.7", expect=201)
    rp = client.create_provider()
    client.post(inventories_url(rp), json={"resource_class": "CUSTOM_INV_GOLD", "total": 3},
                expect=201)
    assert state(client, rp)["inventories"] == {"CUSTOM_INV_GOLD": full(3)}


def test_post_ignores_the_generation_as_upstream(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp = provider_with(client, {"VCPU": {"total": 1}})
    body = client.post(inventories_url(rp), json={
        "resource_class": "DISK_GB", "total": 5, "resource_provider_generation": 99,
    }, expect=201).json()
    assert body["resource_provider_generation"] == 2


# -- bad input: 400 with a detail naming the problem, and nothing stored changes -------

BAD_POSTS = [
    ({"resource_class": "DISK_GB"}, "'total' is a required property"),
    ({"total": 5}, "'resource_class' is a required property"),
    ({"resource_class": "DISK_GB", "total": -1}, "-1 is less than the minimum of 1"),
    ({"resource_class": "DISK_GB", "total": 0}, "schema['properties']['total']"),
    ({"resource_class": "DISK_GB", "total": 5, "reserved": -1}, "schema['properties']['reserved']"),
    ({"resource_class": "DISK_GB", "total": 5, "min_unit": 0}, "schema['properties']['min_unit']"),
    ({"resource_class": "DISK_GB", "total": 5, "max_unit": 0}, "schema['properties']['max_unit']"),
    ({"resource_class": "DISK_GB", "total": 5, "step_size": 0},
     "schema['properties']['step_size']"),
    ({"resource_class": "DISK_GB", "total": MAX_INT + 1}, "Failed validating 'maximum'"),
    ({"resource_class": "DISK_GB", "total": 5, "reserved": MAX_INT + 1},
     "Failed validating 'maximum'"),
    ({"resource_class": "DISK_GB", "total": 5, "max_unit": MAX_INT + 1},
     "Failed validating 'maximum'"),
    ({"resource_class": "DISK_GB", "total": 5, "allocation_ratio": 3.40282e39},
     "Failed validating 'maximum'"),
    ({"resource_class": "DISK_GB", "total": 5, "allocation_ratio": "1.0"},
     "'1.0' is not of type 'number'"),
    ({"resource_class": "DISK_GB", "total": True}, "True is not of type 'integer'"),
    ({"resource_class": "DISK_GB", "total": 5, "colour": "red"},
     "Additional properties are not allowed"),
    ({"resource_class": "disk_gb", "total": 5}, "does not match"),
    ({"resource_class": "NO_SUCH_CLASS", "total": 5},
     "Unable to create inventory for resource provider {rp}: No such resource class "
     "NO_SUCH_CLASS."),
    ({"resource_class": "DISK_GB", "total": 256, "reserved": 512},
     "Unable to create inventory for resource provider {rp}: Invalid inventory for 'DISK_GB' "
     "on resource provider '{rp}'. The reserved value is greater than or equal to total."),
    ({"resource_class": "DISK_GB", "total": 10, "reserved": 10},
     "The reserved value is greater than or equal to total."),
    ({"resource_class": "DISK_GB", "total": 10, "allocation_ratio": -1.0},
     "The reserved value is greater than or equal to total."),
]


@pytest.mark.parametrize(("body", "detail"), BAD_POSTS)
def test_post_bad_inventory(shared_placement: PlacementClient, body: dict[str, Any],
                            detail: str) -> None:
    client = shared_placement
    rp = provider_with(client, {"VCPU": {"total": 2}})
    before = state(client, rp)
    err = error(client.post(inventories_url(rp), json=body, version="1.25"), 400)
    assert detail.format(rp=rp) in err["detail"]
    assert err["title"] == "Bad Request"
    assert state(client, rp) == before


BAD_PUT_ONE = [
    ({"total": 5}, "'resource_provider_generation' is a required property"),
    ({"resource_provider_generation": 1}, "'total' is a required property"),
    ({"resource_provider_generation": 1, "total": 0}, "0 is less than the minimum of 1"),
    ({"resource_provider_generation": 1, "total": 5, "resource_class": "VCPU"},
     "Additional properties are not allowed"),
    ({"resource_provider_generation": "1", "total": 5}, "'1' is not of type 'integer'"),
    ({"resource_provider_generation": 1, "total": 5, "reserved": 6},
     "Unable to update inventory for resource provider {rp}: Invalid inventory for 'VCPU' on "
     "resource provider '{rp}'. The reserved value is greater than total."),
]


@pytest.mark.parametrize(("body", "detail"), BAD_PUT_ONE)
def test_put_one_bad_inventory(shared_placement: PlacementClient, body: dict[str, Any],
                               detail: str) -> None:
    client = shared_placement
    rp = provider_with(client, {"VCPU": {"total": 2}})
    before = state(client, rp)
    err = error(client.put(inventory_url(rp, "VCPU"), json=body), 400)
    assert detail.format(rp=rp) in err["detail"]
    assert state(client, rp) == before


BAD_PUT_ALL = [
    ({"inventories": {}}, "'resource_provider_generation' is a required property"),
    ({"resource_provider_generation": 1}, "'inventories' is a required property"),
    ({"resource_provider_generation": 1, "inventories": {}, "traits": []},
     "Additional properties are not allowed"),
    ({"resource_provider_generation": 1, "inventories": []}, "[] is not of type 'object'"),
    ({"resource_provider_generation": 1, "inventories": {"VCPU": {}}},
     "'total' is a required property"),
    ({"resource_provider_generation": 1, "inventories": {"VCPU": {"total": MAX_INT + 1}}},
     "Failed validating 'maximum'"),
    ({"resource_provider_generation": 1, "inventories": {"VCPU": {"total": 1, "x": 1}}},
     "Additional properties are not allowed"),
    # Valid changes next to a bad class: nothing at all is written.
    ({"resource_provider_generation": 1,
      "inventories": {"DISK_GB": {"total": 10}, "HOUSE": {"total": 1}}},
     "Unknown resource class in inventory for resource provider {rp}: No such resource class "
     "HOUSE."),
    # A name that could never be a class is an unknown class, its value checked all the same.
    ({"resource_provider_generation": 1, "inventories": {"house": {"total": 1}}},
     "No such resource class house."),
    ({"resource_provider_generation": 1, "inventories": {"house": "big"}},
     "'big' is not of type 'object'"),
    ({"resource_provider_generation": 1,
      "inventories": {"DISK_GB": {"total": 10}, "VCPU": {"total": 4, "reserved": 5}}},
     "Unable to update inventory for resource provider {rp}: Invalid inventory for 'VCPU' on "
     "resource provider '{rp}'. The reserved value is greater than total."),
]


@pytest.mark.parametrize(("body", "detail"), BAD_PUT_ALL)
def test_put_all_bad_inventories(shared_placement: PlacementClient, body: dict[str, Any],
                                 detail: str) -> None:
    client = shared_placement
    rp = provider_with(client, {"VCPU": {"total": 2}})
    before = state(client, rp)
    err = error(client.put(inventories_url(rp), json=body), 400)
    assert detail.format(rp=rp) in err["detail"]
    assert state(client, rp) == before


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/inventories"), ("PUT", "/inventories"), ("PUT", "/inventories/VCPU"),
])
def test_malformed_json_and_media_type(shared_placement: PlacementClient, method: str,
                                       path: str) -> None:
    client = shared_placement
    rp = provider_with(client, {"VCPU": {"total": 2}})
    before = state(client, rp)
    url = f"/resource_providers/{rp}{path}"
    malformed = client.request(method, url, data=b'{"foo": }',
                               headers={"content-type": "application/json"})
    assert "Malformed JSON" in error(malformed, 400)["detail"]
    untyped = client.request(method, url, data=b"total=5",
                             headers={"content-type": "text/plain"})
    assert "The media type text/plain is not supported" in error(untyped, 415)["detail"]
    assert state(client, rp) == before


@pytest.mark.parametrize("path", ["/inventories", "/inventories/VCPU", "/usages"])
def test_gets_need_an_acceptable_media_type(shared_placement: PlacementClient,
                                            path: str) -> None:
    rp = provider_with(shared_placement, {"VCPU": {"total": 2}})
    response = shared_placement.get(f"/resource_providers/{rp}{path}",
                                    headers={"accept": "text/plain"})
    assert response.status_code == 406


# -- reserved versus total across the 1.26 boundary -----------------------------------


@pytest.mark.parametrize(("version", "reserved", "status", "detail"), [
    ("1.25", 9, 200, None),
    ("1.25", 10, 400, "The reserved value is greater than or equal to total."),
    ("1.26", 10, 200, None),
    ("1.26", 11, 400, "The reserved value is greater than total."),
])
@pytest.mark.parametrize("route", ["one", "all", "post"])
def test_reserved_may_equal_total_from_1_26(shared_placement: PlacementClient, route: str,
                                            version: str, reserved: int, status: int,
                                            detail: str | None) -> None:
    client = shared_placement
    if route == "post":
        rp = client.create_provider()
        response = client.post(inventories_url(rp), version=version, json={
            "resource_class": "VCPU", "total": 10, "reserved": reserved})
        status = 201 if status == 200 else status
    else:
        rp = provider_with(client, {"VCPU": {"total": 2}})
        if route == "one":
            response = client.put(inventory_url(rp, "VCPU"), version=version, json={
                "resource_provider_generation": 1, "total": 10, "reserved": reserved})
        else:
            response = client.put(inventories_url(rp), version=version, json={
                "resource_provider_generation": 1,
                "inventories": {"VCPU": {"total": 10, "reserved": reserved}}})
    before_generation = 0 if route == "post" else 1
    if detail is None:
        assert response.status_code == status, response.text
        assert state(client, rp)["inventories"]["VCPU"]["reserved"] == reserved
        assert client.generation(rp) == before_generation + 1
    else:
        assert detail in error(response, status)["detail"]
        assert client.generation(rp) == before_generation


# -- generations -----------------------------------------------------------------------


@pytest.mark.parametrize(("route", "body"), [
    ("one", {"resource_provider_generation": 0, "total": 5}),
    ("one", {"resource_provider_generation": 2, "total": 5}),
    ("all", {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 5}}}),
    ("all", {"resource_provider_generation": 7, "inventories": {}}),
])
def test_stale_generation_conflicts(shared_placement: PlacementClient, route: str,
                                    body: dict[str, Any]) -> None:
    client = shared_placement
    rp = provider_with(client, {"VCPU": {"total": 2}})
    before = state(client, rp)
    url = inventory_url(rp, "VCPU") if route == "one" else inventories_url(rp)
    err = error(client.put(url, json=body), 409)
    assert err["code"] == "placement.concurrent_update"
    assert "resource provider generation conflict" in err["detail"]
    assert state(client, rp) == before


def test_generation_conflict_wins_over_bad_values(shared_placement: PlacementClient) -> None:
    """As upstream, the generation is checked before capacity and resource classes."""
    client = shared_placement
    rp = provider_with(client, {"VCPU": {"total": 2}})
    response = client.put(inventories_url(rp), json={
        "resource_provider_generation": 0, "inventories": {"HOUSE": {"total": 1, "reserved": 2}},
    })
    assert error(response, 409)["code"] == "placement.concurrent_update"


def test_error_codes_appear_from_1_23(shared_placement: PlacementClient) -> None:
    rp = provider_with(shared_placement, {"VCPU": {"total": 2}})
    body = {"resource_provider_generation": 0, "total": 5}
    old = error(shared_placement.put(inventory_url(rp, "VCPU"), json=body, version="1.22"), 409)
    assert "code" not in old
    new = error(shared_placement.put(inventory_url(rp, "VCPU"), json=body, version="1.23"), 409)
    assert new["code"] == "placement.concurrent_update"


# -- not found, conflicts, version gates -----------------------------------------------


def test_duplicate_post_conflicts(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp = provider_with(client, {"VCPU": {"total": 2}})
    before = state(client, rp)
    err = error(client.post(inventories_url(rp), json={"resource_class": "VCPU", "total": 9}),
                409)
    assert err["detail"].strip().endswith(
        f"Update conflict: Resource provider {rp} already has inventory of class VCPU.")
    assert err["code"] == "placement.concurrent_update"
    assert state(client, rp) == before


@pytest.mark.parametrize(("method", "path", "status", "detail"), [
    ("GET", "/inventories/DISK_GB", 404, "No inventory of class DISK_GB for {rp}"),
    ("GET", "/inventories/HOUSE", 404, "No inventory of class HOUSE for {rp}"),
    ("DELETE", "/inventories/DISK_GB", 404,
     "No inventory of class DISK_GB found for delete: No inventory of class DISK_GB found."),
    ("DELETE", "/inventories/HOUSE", 404,
     "No inventory of class HOUSE found for delete: No such resource class HOUSE."),
    ("PUT", "/inventories/DISK_GB", 400,
     "No inventory record with resource class for resource provider {rp}: No inventory of "
     "class DISK_GB found."),
    ("PUT", "/inventories/HOUSE", 404, "No such resource class HOUSE."),
])
def test_missing_inventory(shared_placement: PlacementClient, method: str, path: str,
                           status: int, detail: str) -> None:
    client = shared_placement
    rp = provider_with(client, {"VCPU": {"total": 2}})
    before = state(client, rp)
    body = {"resource_provider_generation": 1, "total": 5} if method == "PUT" else None
    err = error(client.request(method, f"/resource_providers/{rp}{path}", json=body), status)
    assert detail.format(rp=rp) in err["detail"]
    assert state(client, rp) == before


@pytest.mark.parametrize(("method", "path", "body"), [
    ("GET", "/inventories", None),
    ("POST", "/inventories", {"resource_class": "VCPU", "total": 1}),
    ("PUT", "/inventories", {"resource_provider_generation": 0, "inventories": {}}),
    ("DELETE", "/inventories", None),
    ("GET", "/inventories/VCPU", None),
    ("PUT", "/inventories/VCPU", {"resource_provider_generation": 0, "total": 1}),
    ("DELETE", "/inventories/VCPU", None),
    ("GET", "/usages", None),
])
def test_missing_provider(shared_placement: PlacementClient, method: str, path: str,
                          body: dict[str, Any] | None) -> None:
    missing = str(uuid.uuid4())
    response = shared_placement.request(method, f"/resource_providers/{missing}{path}",
                                        json=body)
    assert f"No resource provider with uuid {missing} found" in error(response, 404)["detail"]


def test_delete_all_needs_1_5(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp = provider_with(client, {"VCPU": {"total": 2}})
    before = state(client, rp)
    response = client.delete(inventories_url(rp), version="1.4")
    assert response.status_code == 405
    assert state(client, rp) == before
    client.delete(inventories_url(rp), version="1.5", expect=204)
    assert state(client, rp) == {"resource_provider_generation": 2, "inventories": {}}


def test_location_is_absolute(shared_placement: PlacementClient) -> None:
    """The Location of a new inventory is absolute, on the host the client asked."""
    client = shared_placement
    rp = client.create_provider()
    response = client.post(inventories_url(rp), json={"resource_class": "VCPU", "total": 1},
                           headers={"host": "placement.example.com:8778"}, expect=201)
    assert response.headers["location"] == (
        f"http://placement.example.com:8778/resource_providers/{rp}/inventories/VCPU")
    assert client.get(inventory_url(rp, "VCPU"), expect=200).json()["total"] == 1


# -- caching headers ---------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "body"), [
    ("GET", "/inventories", None),
    ("GET", "/inventories/VCPU", None),
    ("GET", "/usages", None),
    ("POST", "/inventories", {"resource_class": "DISK_GB", "total": 1}),
    ("PUT", "/inventories/VCPU", {"resource_provider_generation": 1, "total": 3}),
    ("PUT", "/inventories", {"resource_provider_generation": 1,
                             "inventories": {"VCPU": {"total": 3}}}),
])
def test_cache_headers_from_1_15(shared_placement: PlacementClient, method: str, path: str,
                                 body: dict[str, Any] | None) -> None:
    for version, present in (("1.14", False), ("1.15", True)):
        rp = provider_with(shared_placement, {"VCPU": {"total": 2}})
        response = shared_placement.request(method, f"/resource_providers/{rp}{path}",
                                            json=body, version=version)
        assert response.status_code in (200, 201), response.text
        if present:
            assert response.headers["cache-control"] == "no-cache"
            assert HTTP_DATE.match(response.headers["last-modified"])
        else:
            assert "cache-control" not in response.headers
            assert "last-modified" not in response.headers


# -- policy ------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "body"), [
    ("GET", "/inventories", None),
    ("POST", "/inventories", {"resource_class": "DISK_GB", "total": 1}),
    ("PUT", "/inventories", {"resource_provider_generation": 1, "inventories": {}}),
    ("DELETE", "/inventories", None),
    ("GET", "/inventories/VCPU", None),
    ("PUT", "/inventories/VCPU", {"resource_provider_generation": 1, "total": 3}),
    ("DELETE", "/inventories/VCPU", None),
    ("GET", "/usages", None),
])
def test_non_admin_is_forbidden(shared_placement: PlacementClient, method: str, path: str,
                                body: dict[str, Any] | None) -> None:
    client = shared_placement
    rp = provider_with(client, {"VCPU": {"total": 2}})
    before = state(client, rp)
    response = client.request(method, f"/resource_providers/{rp}{path}", json=body,
                              token="someone:project")
    assert error(response, 403)["title"] == "Forbidden"
    assert state(client, rp) == before


def test_service_role_is_allowed(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp = provider_with(client, {"VCPU": {"total": 2}})
    client.put(inventory_url(rp, "VCPU"), json={"resource_provider_generation": 1, "total": 4},
               token="nova:service", headers={"x-roles": "service"}, expect=200)
    assert state(client, rp)["inventories"]["VCPU"]["total"] == 4


# -- usages --------------------------------------------------------------------------------


def test_usages_without_allocations(shared_placement: PlacementClient) -> None:
    client = shared_placement
    rp = client.create_provider()
    assert client.get(f"/resource_providers/{rp}/usages", version="1.0", expect=200).json() == {
        "resource_provider_generation": 0, "usages": {}}
    client.put(inventories_url(rp), json={
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 2}, "DISK_GB": {"total": 20}},
    }, expect=200)
    assert client.get(f"/resource_providers/{rp}/usages", expect=200).json() == {
        "resource_provider_generation": 1, "usages": {"VCPU": 0, "DISK_GB": 0}}


# -- inventory in use ------------------------------------------------------------------------


class Deployment:
    """A server of the module's own, whose log the tests read."""

    def __init__(self, server: PlacementProcess) -> None:
        self.server = server
        self.client = PlacementClient(server.url)

    def allocate(self, rp: str, resources: dict[str, int]) -> str:
        """Allocations of ``rp``'s resources to a new consumer, through the API."""
        consumer = str(uuid.uuid4())
        self.client.put(f"/allocations/{consumer}", version="1.38", json={
            "allocations": {rp: {"resources": resources}},
            "project_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4()),
            "consumer_generation": None, "consumer_type": "INSTANCE",
        }, expect=204)
        return consumer


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    server = PlacementProcess(tmp_path_factory.mktemp("inventory-in-use")).start()
    yield Deployment(server)
    server.stop()


def in_use_provider(deployment: Deployment) -> str:
    """A provider with VCPU, MEMORY_MB and DISK_GB inventory, using VCPU and DISK_GB."""
    rp = provider_with(deployment.client, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096},
                                           "DISK_GB": {"total": 100}})
    deployment.allocate(rp, {"VCPU": 2, "DISK_GB": 60})
    return rp


def test_usages_count_allocations(deployment: Deployment) -> None:
    client = deployment.client
    rp = in_use_provider(deployment)
    deployment.allocate(rp, {"VCPU": 1})
    assert client.get(f"/resource_providers/{rp}/usages", expect=200).json() == {
        "resource_provider_generation": client.generation(rp),
        "usages": {"VCPU": 3, "MEMORY_MB": 0, "DISK_GB": 60}}


@pytest.mark.parametrize(("method", "path", "inventories", "version", "code", "detail"), [
    ("DELETE", "/inventories/VCPU", None, "latest", "placement.concurrent_update",
     "Unable to delete inventory of class VCPU: Inventory for 'VCPU' on resource provider "
     "'{rp}' in use."),
    ("DELETE", "/inventories", None, "1.5", None,
     "Inventory for 'VCPU, DISK_GB' on resource provider '{rp}' in use."),
    ("DELETE", "/inventories", None, "latest", "placement.inventory.inuse",
     "Inventory for 'VCPU, DISK_GB' on resource provider '{rp}' in use."),
    ("PUT", "/inventories", {"VCPU": {"total": 16}, "IPV4_ADDRESS": {"total": 4}},
     "latest", "placement.inventory.inuse",
     "update conflict: Inventory for 'DISK_GB' on resource provider '{rp}' in use."),
    ("PUT", "/inventories", {}, "latest", "placement.inventory.inuse",
     "update conflict: Inventory for 'VCPU, DISK_GB' on resource provider '{rp}' in use."),
])
def test_inventory_in_use_cannot_be_removed(
    deployment: Deployment, method: str, path: str, inventories: dict[str, Any] | None,
    version: str, code: str | None, detail: str,
) -> None:
    client = deployment.client
    rp = in_use_provider(deployment)
    before = state(client, rp)
    body = None
    if inventories is not None:
        body = {"resource_provider_generation": before["resource_provider_generation"],
                "inventories": inventories}
    response = client.request(method, f"/resource_providers/{rp}{path}", json=body,
                              version=version)
    err = error(response, 409)
    assert detail.format(rp=rp) in err["detail"]
    assert err.get("code") == code
    assert state(client, rp) == before


def test_unused_inventory_of_a_used_provider_can_go(deployment: Deployment) -> None:
    client = deployment.client
    rp = in_use_provider(deployment)
    client.delete(inventory_url(rp, "MEMORY_MB"), expect=204)
    assert sorted(state(client, rp)["inventories"]) == ["DISK_GB", "VCPU"]


@pytest.mark.parametrize("route", ["one", "all"])
def test_capacity_may_drop_below_usage(deployment: Deployment, route: str) -> None:
    client = deployment.client
    rp = in_use_provider(deployment)
    generation = client.generation(rp)
    if route == "one":
        client.put(inventory_url(rp, "DISK_GB"), json={
            "resource_provider_generation": generation, "total": 50}, expect=200)
    else:
        client.put(inventories_url(rp), json={
            "resource_provider_generation": generation,
            "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096},
                            "DISK_GB": {"total": 50}},
        }, expect=200)
    assert state(client, rp)["inventories"]["DISK_GB"]["total"] == 50
    assert client.get(f"/resource_providers/{rp}/usages", expect=200).json() == {
        "resource_provider_generation": generation + 1,
        "usages": {"VCPU": 2, "MEMORY_MB": 0, "DISK_GB": 60}}
    log = deployment.server.output()
    assert f"Resource provider {rp} is now over-capacity for DISK_GB" in log
    assert f"Resource provider {rp} is now over-capacity for VCPU" not in log


def test_in_use_guard_on_both_backends(backend_placement: PlacementClient) -> None:
    client = backend_placement
    rp = provider_with(client, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    client.put(f"/allocations/{uuid.uuid4()}", version="1.38", json={
        "allocations": {rp: {"resources": {"DISK_GB": 60}}},
        "project_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4()),
        "consumer_generation": None, "consumer_type": "INSTANCE",
    }, expect=204)
    before = state(client, rp)
    err = error(client.delete(inventories_url(rp)), 409)
    assert err["code"] == "placement.inventory.inuse"
    assert state(client, rp) == before
    generation = before["resource_provider_generation"]
    client.put(inventories_url(rp), json={
        "resource_provider_generation": generation, "inventories": {"DISK_GB": {"total": 10}},
    }, expect=200)
    assert client.get(f"/resource_providers/{rp}/usages", expect=200).json() == {
        "resource_provider_generation": generation + 1, "usages": {"DISK_GB": 60}}
