"""The image service's answers that Tempest's image tests ask for beside the basics:
deactivate and reactivate, the v2.0 patch media type's older form, an empty image id,
and the import methods' discovery. Over HTTP at /image on a real compute API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api_fixtures import (
    ADMIN,
    USER,
    ComputeApi,
    start_compute_api,
    stop_compute_api,
    version,
)

OCTET = {"Content-Type": "application/octet-stream"}
PATCH_V20 = {"Content-Type": "application/openstack-images-v2.0-json-patch"}
PATCH_V21 = {"Content-Type": "application/openstack-images-v2.1-json-patch"}
OTHER = "bob:bob-project"
DATA = b"image data " * 100


@pytest.fixture
def compute_api(tmp_path: Path, shared_placement: Any) -> Iterator[ComputeApi]:
    api = start_compute_api(tmp_path / "api", shared_placement.url)
    yield api
    stop_compute_api(api)


def create(api: ComputeApi, token: str = USER, **fields: Any) -> str:
    body = {"name": "img", "disk_format": "raw", "container_format": "bare", **fields}
    image_id: str = api.image("POST", "/v2/images", json=body, token=token,
                              expect=201).json()["id"]
    return image_id


def uploaded(api: ComputeApi, token: str = USER, **fields: Any) -> str:
    image_id = create(api, token, **fields)
    api.image("PUT", f"/v2/images/{image_id}/file", data=DATA, headers=OCTET, token=token,
              expect=204)
    return image_id


def status(api: ComputeApi, image_id: str) -> str:
    found: str = api.image("GET", f"/v2/images/{image_id}", expect=200).json()["status"]
    return found


def act(api: ComputeApi, image_id: str, action: str, token: str = USER,
        expect: int = 204) -> dict[str, Any]:
    answer = api.image("POST", f"/v2/images/{image_id}/actions/{action}", token=token,
                       expect=expect)
    return answer.json() if answer.content else {}


# -- deactivate, reactivate ---------------------------------------------------------

def test_a_deactivated_image_keeps_its_data_from_all_but_administrators(
        compute_api: ComputeApi) -> None:
    image_id = uploaded(compute_api)
    file = f"/v2/images/{image_id}/file"
    act(compute_api, image_id, "deactivate")
    assert status(compute_api, image_id) == "deactivated"
    refused = compute_api.image("GET", file, token=USER, expect=403).json()
    assert "deactivated" in refused["message"]
    # The record stays: its data's size and hashes, visible and changeable.
    shown = compute_api.image("GET", f"/v2/images/{image_id}", token=USER, expect=200).json()
    assert shown["size"] == len(DATA) and shown["checksum"]
    compute_api.image("PATCH", f"/v2/images/{image_id}", token=USER, headers=PATCH_V21,
                      json=[{"op": "replace", "path": "/name", "value": "kept"}], expect=200)
    assert compute_api.image("GET", file, token=ADMIN, expect=200).content == DATA
    # A second deactivate changes nothing; uploading again is still a 409.
    act(compute_api, image_id, "deactivate")
    compute_api.image("PUT", file, data=b"x", headers=OCTET, token=USER, expect=409)
    act(compute_api, image_id, "reactivate")
    assert status(compute_api, image_id) == "active"
    assert compute_api.image("GET", file, token=USER, expect=200).content == DATA
    act(compute_api, image_id, "reactivate")
    assert status(compute_api, image_id) == "active"


@pytest.mark.parametrize("action", ["deactivate", "reactivate"])
def test_actions_refuse_an_image_without_data(compute_api: ComputeApi, action: str) -> None:
    image_id = create(compute_api)
    refused = act(compute_api, image_id, action, expect=403)
    assert refused["message"] == (
        f"Not allowed to {action} image in status 'queued'; allowed: "
        + ("active, deactivated." if action == "deactivate" else "deactivated, active."))
    assert status(compute_api, image_id) == "queued"


def test_who_may_deactivate(compute_api: ComputeApi) -> None:
    """The owner and administrators; a project that sees the image is refused (403),
    one that cannot see it is told nothing (404)."""
    public = uploaded(compute_api, ADMIN, visibility="public")
    act(compute_api, public, "deactivate", token=OTHER, expect=403)
    assert status(compute_api, public) == "active"
    act(compute_api, public, "deactivate", token=ADMIN)
    act(compute_api, public, "reactivate", token=OTHER, expect=403)
    private = uploaded(compute_api, USER, visibility="private")
    act(compute_api, private, "deactivate", token=OTHER, expect=404)
    act(compute_api, private, "deactivate", token=ADMIN)
    act(compute_api, private, "reactivate", token=USER)
    act(compute_api, "8d4bb6c3-1a7b-4b0e-9d55-3f1d1b6f0a11", "deactivate", expect=404)


def test_the_action_routes(compute_api: ComputeApi) -> None:
    image_id = uploaded(compute_api)
    answer = compute_api.image("GET", f"/v2/images/{image_id}/actions/deactivate",
                               expect=405)
    assert answer.headers["Allow"] == "POST"
    compute_api.image("POST", f"/v2/images/{image_id}/actions/explode", expect=404)


def test_the_compute_api_shows_a_deactivated_image_as_nova_does(
        compute_api: ComputeApi) -> None:
    """nova's proxy knows no such state: UNKNOWN, progress 0."""
    image_id = uploaded(compute_api)
    act(compute_api, image_id, "deactivate")
    shown = compute_api.user("GET", f"/v2.1/images/{image_id}", headers=version("2.35"),
                             expect=200).json()["image"]
    assert (shown["status"], shown["progress"]) == ("UNKNOWN", 0)


# -- the v2.0 patch media type ------------------------------------------------------

def test_the_v2_0_media_type_takes_the_operation_as_the_key(compute_api: ComputeApi) -> None:
    image_id = create(compute_api, os_distro="cirros")
    changed = compute_api.image("PATCH", f"/v2/images/{image_id}", headers=PATCH_V20, json=[
        {"replace": "/name", "value": "renamed"}, {"add": "/os_version", "value": "1"},
        {"remove": "/os_distro"}, {"replace": "/protected", "value": True}],
        expect=200).json()
    assert (changed["name"], changed["os_version"], changed["protected"]) == (
        "renamed", "1", True)
    assert "os_distro" not in changed
    # A protected image is not deleted until its protection is replaced.
    compute_api.image("DELETE", f"/v2/images/{image_id}", expect=403)
    compute_api.image("PATCH", f"/v2/images/{image_id}", headers=PATCH_V20,
                      json=[{"replace": "/protected", "value": False}], expect=200)
    compute_api.image("DELETE", f"/v2/images/{image_id}", expect=204)


def test_each_patch_media_type_refuses_the_other_form(compute_api: ComputeApi) -> None:
    image_id = create(compute_api)
    url = f"/v2/images/{image_id}"
    older = compute_api.image("PATCH", url, headers=PATCH_V21, expect=400,
                              json=[{"replace": "/name", "value": "x"}]).json()
    assert "Invalid operation None: allowed: add, replace, remove." in older["message"]
    newer = compute_api.image("PATCH", url, headers=PATCH_V20, expect=400,
                              json=[{"op": "replace", "path": "/name", "value": "x"}]).json()
    assert "exactly one of add, replace, remove" in newer["message"]
    reserved = compute_api.image("PATCH", url, headers=PATCH_V20, expect=403,
                                 json=[{"add": "/os_glance_foo", "value": "bar"}]).json()
    assert reserved["message"] == "Attribute 'os_glance_foo' is reserved."
    assert compute_api.image("GET", url, expect=200).json()["name"] == "img"


def test_an_administrator_gives_an_image_to_another_project(compute_api: ComputeApi) -> None:
    image_id = create(compute_api, ADMIN, owner="first-project")
    compute_api.image("PATCH", f"/v2/images/{image_id}", headers=PATCH_V20,
                      json=[{"replace": "/owner", "value": "second-project"}], expect=200)
    shown = compute_api.image("GET", f"/v2/images/{image_id}", expect=200).json()
    assert shown["owner"] == "second-project"


# -- an empty image id; discovery ---------------------------------------------------

@pytest.mark.parametrize("method", ["GET", "DELETE", "PATCH"])
def test_an_empty_image_id_is_not_found(compute_api: ComputeApi, method: str) -> None:
    create(compute_api)
    answer = compute_api.image(method, "/v2/images/", expect=404).json()
    assert answer["code"] == "404 Not Found"
    assert len(compute_api.image("GET", "/v2/images", expect=200).json()["images"]) == 1


def test_the_version_documents_still_take_a_trailing_slash(compute_api: ComputeApi) -> None:
    compute_api.image("GET", "/versions/", token=None, expect=200)
    compute_api.image("GET", "/", token=None, expect=300)


def test_no_import_method_is_offered(compute_api: ComputeApi) -> None:
    found = compute_api.image("GET", "/v2/info/import", token=USER, expect=200).json()
    assert found["import-methods"]["value"] == []
    compute_api.image("GET", "/v2/info/import", token=None, expect=401)
