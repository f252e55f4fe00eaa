"""/resource_classes and /resource_classes/{name} over real HTTP."""

from __future__ import annotations

import email.utils
import time
import uuid
from typing import Any

import os_resource_classes
import pytest
import requests

from tests.conftest import PlacementClient


def custom(label: str = "RC") -> str:
    """A resource class name no other test uses."""
    return f"CUSTOM_{label}_{uuid.uuid4().hex[:10].upper()}"


def error(response: requests.Response) -> dict[str, Any]:
    """The single entry of a placement error body."""
    entries = response.json()["errors"]
    assert len(entries) == 1
    return dict(entries[0])


def names(client: PlacementClient) -> list[str]:
    body = client.get("/resource_classes", expect=200).json()
    return [rc["name"] for rc in body["resource_classes"]]


def create(client: PlacementClient, name: str) -> None:
    client.post("/resource_classes", json={"name": name}, expect=201)


def add_inventory(client: PlacementClient, rp: str, name: str) -> None:
    client.put(
        f"/resource_providers/{rp}/inventories",
        json={"resource_provider_generation": client.generation(rp),
              "inventories": {name: {"total": 5}}},
        expect=200,
    )


# -- microversions and policy ------------------------------------------------------

ROUTES = [
    ("GET", "/resource_classes"),
    ("POST", "/resource_classes"),
    ("GET", "/resource_classes/{name}"),
    ("PUT", "/resource_classes/{name}"),
    ("DELETE", "/resource_classes/{name}"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_absent_before_1_2(shared_placement: PlacementClient, method: str, path: str) -> None:
    name = custom()
    create(shared_placement, name)
    body = {"name": custom()} if method in ("POST", "PUT") else None
    shared_placement.request(method, path.format(name=name), json=body, version="1.1",
                             expect=404)
    assert shared_placement.get(f"/resource_classes/{name}", expect=200).json()["name"] == name


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_non_admin_is_forbidden(
    shared_placement: PlacementClient, method: str, path: str
) -> None:
    name = custom()
    create(shared_placement, name)
    new = custom()
    body = {"name": new} if method == "POST" else None
    response = shared_placement.request(method, path.format(name=name), json=body,
                                        token="user", expect=403)
    assert "Policy does not allow placement:resource_classes:" in error(response)["detail"]
    shared_placement.get(f"/resource_classes/{name}", expect=200)
    shared_placement.get(f"/resource_classes/{new}", expect=404)


# -- listing and showing ------------------------------------------------------------------

def test_list_standard_then_custom_in_creation_order(placement: PlacementClient) -> None:
    assert names(placement) == list(os_resource_classes.STANDARDS)
    second, first = "CUSTOM_A_SECOND", "CUSTOM_Z_FIRST"
    create(placement, first)
    placement.put(f"/resource_classes/{second}", expect=201)
    body = placement.get("/resource_classes", version="1.2", expect=200).json()
    assert body["resource_classes"][0] == {
        "name": "VCPU", "links": [{"rel": "self", "href": "/resource_classes/VCPU"}]}
    assert [rc["name"] for rc in body["resource_classes"]] == [
        *os_resource_classes.STANDARDS, first, second]


def test_show_class(shared_placement: PlacementClient) -> None:
    name = custom()
    create(shared_placement, name)
    for version in ("1.2", "1.15"):
        shown = shared_placement.get(f"/resource_classes/{name}", version=version, expect=200)
        assert shown.json() == {
            "name": name, "links": [{"rel": "self", "href": f"/resource_classes/{name}"}]}
        assert shown.headers["content-type"].startswith("application/json")
    assert shared_placement.get("/resource_classes/VCPU", expect=200).json()["name"] == "VCPU"


@pytest.mark.parametrize("version", ["1.2", "1.15"])
def test_show_missing_class(shared_placement: PlacementClient, version: str) -> None:
    response = shared_placement.get("/resource_classes/CUSTOM_NOPE", version=version,
                                    expect=404)
    assert "No such resource class CUSTOM_NOPE." in error(response)["detail"]


@pytest.mark.parametrize("path", ["/resource_classes", "/resource_classes/VCPU"])
def test_reads_need_json(shared_placement: PlacementClient, path: str) -> None:
    shared_placement.get(path, headers={"accept": "text/plain"}, expect=406)


@pytest.mark.parametrize(("version", "cached"), [("1.14", False), ("1.15", True)])
@pytest.mark.parametrize("path", ["/resource_classes", "/resource_classes/VCPU",
                                  "/resource_classes/{custom}"])
def test_read_cache_headers(shared_placement: PlacementClient, path: str, version: str,
                            cached: bool) -> None:
    name = custom()
    create(shared_placement, name)
    response = shared_placement.get(path.format(custom=name), version=version, expect=200)
    assert ("last-modified" in response.headers) is cached
    assert ("cache-control" in response.headers) is cached


def test_last_modified_custom_is_its_own_time_standard_is_now(
    shared_placement: PlacementClient,
) -> None:
    name = custom()
    create(shared_placement, name)
    created = time.time()
    time.sleep(1.2)

    def last_modified(path: str) -> float:
        response = shared_placement.get(path, version="1.15", expect=200)
        return email.utils.parsedate_to_datetime(response.headers["last-modified"]).timestamp()

    assert last_modified(f"/resource_classes/{name}") <= created
    assert last_modified("/resource_classes/VCPU") > created
    assert last_modified("/resource_classes") > created


@pytest.mark.parametrize(("method", "status"), [("POST", 201), ("PUT", 201), ("PUT", 204),
                                                ("DELETE", 204)])
def test_writes_have_no_cache_headers(shared_placement: PlacementClient, method: str,
                                      status: int) -> None:
    name = custom()
    if status == 204:
        create(shared_placement, name)
    path = "/resource_classes" if method == "POST" else f"/resource_classes/{name}"
    body = {"name": name} if method == "POST" else None
    response = shared_placement.request(method, path, json=body, expect=status)
    assert "last-modified" not in response.headers
    assert "cache-control" not in response.headers


# -- POST /resource_classes ------------------------------------------------------------------

def test_create_class(shared_placement: PlacementClient) -> None:
    name = custom()
    response = shared_placement.post("/resource_classes", json={"name": name}, version="1.2",
                                     expect=201)
    assert response.headers["location"] == f"{shared_placement.url}/resource_classes/{name}"
    assert "content-type" not in response.headers
    assert name in names(shared_placement)
    # Before 1.15 the answer comes from the in-memory catalogue, from 1.15 from the table.
    for version in ("1.14", "1.15"):
        shared_placement.get(f"/resource_classes/{name}", version=version, expect=200)
    again = shared_placement.post("/resource_classes", json={"name": name}, expect=409)
    assert f"Conflicting resource class already exists: {name}" in error(again)["detail"]
    assert names(shared_placement).count(name) == 1


@pytest.mark.parametrize(("body", "detail"), [
    ({"name": "IRON_NFV"}, "Failed validating 'pattern'"),
    ({"name": "VCPU"}, "Failed validating 'pattern'"),
    ({"name": "CUSTOM_Illegal&@!Name?"}, "Failed validating 'pattern'"),
    ({"name": "CUSTOM_" + "S" * 249}, "Failed validating 'maxLength'"),
    ({"name": "CUSTOM_NFV_BAR", "additional": 1}, "Additional properties are not allowed"),
    ({}, "'name' is a required property"),
])
def test_create_bad_body(shared_placement: PlacementClient, body: dict[str, Any],
                         detail: str) -> None:
    before = names(shared_placement)
    response = shared_placement.post("/resource_classes", json=body, expect=400)
    assert "JSON does not validate" in error(response)["detail"]
    assert detail in error(response)["detail"]
    assert names(shared_placement) == before


def test_create_needs_json(shared_placement: PlacementClient) -> None:
    before = names(shared_placement)
    shared_placement.post("/resource_classes", data="CUSTOM_X",
                          headers={"content-type": "text/plain"}, expect=415)
    response = shared_placement.post("/resource_classes", data='{"foo": }',
                                     headers={"content-type": "application/json"}, expect=400)
    assert "Malformed JSON:" in error(response)["detail"]
    assert names(shared_placement) == before


def test_longest_name_is_accepted(shared_placement: PlacementClient) -> None:
    name = custom()
    name += "X" * (255 - len(name))
    create(shared_placement, name)
    shared_placement.get(f"/resource_classes/{name}", expect=200)


# -- PUT /resource_classes/{name} from 1.7: create or verify -------------------------------

def test_put_creates_then_verifies(shared_placement: PlacementClient) -> None:
    name = custom()
    created = shared_placement.put(f"/resource_classes/{name}", version="1.7", expect=201)
    assert created.headers["location"] == f"{shared_placement.url}/resource_classes/{name}"
    verified = shared_placement.put(f"/resource_classes/{name}", version="1.7", expect=204)
    assert verified.headers["location"] == f"{shared_placement.url}/resource_classes/{name}"
    assert names(shared_placement).count(name) == 1


@pytest.mark.parametrize(("name", "detail"), [
    ("COW", "Failed validating 'pattern'"),
    ("VCPU", "Failed validating 'pattern'"),
    ("CUSTOM_" + "S" * 249, "Failed validating 'maxLength'"),
])
def test_put_refuses_bad_names(shared_placement: PlacementClient, name: str,
                               detail: str) -> None:
    before = names(shared_placement)
    response = shared_placement.put(f"/resource_classes/{name}", expect=400)
    assert "JSON does not validate" in error(response)["detail"]
    assert detail in error(response)["detail"]
    assert names(shared_placement) == before


# -- PUT /resource_classes/{name} at 1.2-1.6: rename ----------------------------------------

def test_rename(shared_placement: PlacementClient) -> None:
    old, new = custom("OLD"), custom("NEW")
    create(shared_placement, old)
    response = shared_placement.put(f"/resource_classes/{old}", json={"name": new},
                                    version="1.6", expect=200)
    assert response.json() == {
        "name": new, "links": [{"rel": "self", "href": f"/resource_classes/{new}"}]}
    shared_placement.get(f"/resource_classes/{old}", expect=404)
    shared_placement.get(f"/resource_classes/{new}", expect=200)
    # Renaming to its own name is a no-op.
    shared_placement.put(f"/resource_classes/{new}", json={"name": new}, version="1.2",
                         expect=200)


def test_rename_class_in_use_moves_inventories(shared_placement: PlacementClient) -> None:
    old, new = custom("OLD"), custom("NEW")
    create(shared_placement, old)
    rp = shared_placement.create_provider()
    add_inventory(shared_placement, rp, old)

    def found_by(name: str) -> list[str]:
        body = shared_placement.get(f"/resource_providers?resources={name}:1",
                                    expect=200).json()
        return [p["uuid"] for p in body["resource_providers"]]

    # The index holds the provider under the old name before the rename...
    assert found_by(old) == [rp]
    shared_placement.put(f"/resource_classes/{old}", json={"name": new}, version="1.6",
                         expect=200)
    # ... and under the new one after it.
    assert found_by(new) == [rp]
    inventories = shared_placement.get(f"/resource_providers/{rp}/inventories",
                                       expect=200).json()["inventories"]
    assert list(inventories) == [new]


@pytest.mark.parametrize(("path_name", "body", "status", "detail"), [
    ("VCPU", {"name": "{other}"}, 400, "Cannot update standard resource class VCPU"),
    ("VCPU", {"name": "VCPU_ALTERNATE"}, 400, "JSON does not validate"),
    ("{name}", {"name": "VCPU"}, 400, "JSON does not validate"),
    ("{name}", {"name": "{other}"}, 409, "Resource class already exists: {other}"),
    ("{name}", {"name": "CUSTOM_" + "S" * 249}, 400, "Failed validating 'maxLength'"),
    ("{name}", {"name": "CUSTOM_X", "additional": "1"}, 400,
     "Additional properties are not allowed"),
    ("CUSTOM_NOT_THERE", {"name": "{other}"}, 404, "No such resource class CUSTOM_NOT_THERE."),
])
def test_rename_refused(shared_placement: PlacementClient, path_name: str,
                        body: dict[str, str], status: int, detail: str) -> None:
    name, other = custom("A"), custom("B")
    create(shared_placement, name)
    create(shared_placement, other)
    before = names(shared_placement)

    def fill(text: str) -> str:
        return text.format(name=name, other=other)

    response = shared_placement.put(f"/resource_classes/{fill(path_name)}",
                                    json={k: fill(v) for k, v in body.items()},
                                    version="1.6", expect=status)
    assert fill(detail) in error(response)["detail"]
    assert names(shared_placement) == before


def test_rename_needs_a_json_body(shared_placement: PlacementClient) -> None:
    name = custom()
    create(shared_placement, name)
    response = shared_placement.put(f"/resource_classes/{name}", version="1.6",
                                    headers={"content-type": "application/json"}, expect=400)
    assert "Malformed JSON:" in error(response)["detail"]
    shared_placement.put(f"/resource_classes/{name}", version="1.6", data="x",
                         headers={"content-type": "text/plain"}, expect=415)
    shared_placement.get(f"/resource_classes/{name}", expect=200)


# -- DELETE /resource_classes/{name} ------------------------------------------------------

def test_delete_class(shared_placement: PlacementClient) -> None:
    name = custom()
    create(shared_placement, name)
    shared_placement.get(f"/resource_classes/{name}", version="1.14", expect=200)
    shared_placement.delete(f"/resource_classes/{name}", expect=204)
    for version in ("1.14", "1.15"):
        shared_placement.get(f"/resource_classes/{name}", version=version, expect=404)
    response = shared_placement.delete(f"/resource_classes/{name}", expect=404)
    assert f"No such resource class {name}." in error(response)["detail"]
    # The name can be created again.
    create(shared_placement, name)


def test_delete_standard_class_is_refused(shared_placement: PlacementClient) -> None:
    response = shared_placement.delete("/resource_classes/VCPU", expect=400)
    assert ("Error in delete resource class: Cannot delete standard resource class VCPU."
            in error(response)["detail"])
    shared_placement.get("/resource_classes/VCPU", expect=200)


def test_delete_class_in_use_is_refused(shared_placement: PlacementClient) -> None:
    name = custom()
    create(shared_placement, name)
    rp = shared_placement.create_provider()
    add_inventory(shared_placement, rp, name)
    response = shared_placement.delete(f"/resource_classes/{name}", expect=409)
    assert (f"Error in delete resource class: Cannot delete resource class {name}. Class is "
            "in use in inventory.") in error(response)["detail"]
    shared_placement.get(f"/resource_classes/{name}", expect=200)
    shared_placement.delete(f"/resource_providers/{rp}/inventories", expect=204)
    shared_placement.delete(f"/resource_classes/{name}", expect=204)


# -- both backends ----------------------------------------------------------------------

def test_resource_classes_on_both_backends(backend_placement: PlacementClient) -> None:
    client = backend_placement
    a, b = custom("A"), custom("B")
    create(client, a)
    client.post("/resource_classes", json={"name": a}, expect=409)
    client.put(f"/resource_classes/{b}", expect=201)
    client.put(f"/resource_classes/{b}", expect=204)
    client.put(f"/resource_classes/{b}", json={"name": a}, version="1.6", expect=409)
    renamed = custom("C")
    client.put(f"/resource_classes/{b}", json={"name": renamed}, version="1.6", expect=200)
    assert names(client) == [*os_resource_classes.STANDARDS, a, renamed]
    client.delete(f"/resource_classes/{a}", expect=204)
    client.delete(f"/resource_classes/{renamed}", expect=204)
    assert names(client) == list(os_resource_classes.STANDARDS)
