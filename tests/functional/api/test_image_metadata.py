"""Nova's image metadata proxy (``/v2.1/images/{id}/metadata``, before 2.39): the image
service's properties read and written through the compute API, with glance's rules
and nova's quota, on a real compute API over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api_fixtures import ADMIN, USER, ComputeApi, version

OTHER = "bob:bob-project"
V2_38 = version("2.38")


def image(api: ComputeApi, token: str = USER, **fields: Any) -> str:
    body = {"name": "img", "disk_format": "raw", "container_format": "bare", **fields}
    image_id: str = api.image("POST", "/v2/images", json=body, token=token,
                              expect=201).json()["id"]
    return image_id


def meta(api: ComputeApi, method: str, image_id: str, key: str | None = None, *,
         token: str = USER, json: Any = None, expect: int | None = None,
         at: dict[str, str] = V2_38) -> Any:
    path = f"/v2.1/images/{image_id}/metadata" + (f"/{key}" if key is not None else "")
    answer = api.request(method, path, token=token, json=json, headers=at, expect=expect)
    return answer.json() if answer.content else None


def properties(api: ComputeApi, image_id: str) -> dict[str, Any]:
    """The image as the image service shows it, its attributes left out."""
    shown = api.image("GET", f"/v2/images/{image_id}", expect=200).json()
    core = api.image("GET", "/v2/schemas/image", expect=200).json()["properties"]
    return {k: v for k, v in shown.items() if k not in core}


def test_metadata_is_the_image_services_properties(compute_api: ComputeApi) -> None:
    image_id = image(compute_api, os_distro="cirros")
    assert meta(compute_api, "GET", image_id, expect=200) == {
        "metadata": {"os_distro": "cirros"}}
    # PUT replaces them all and answers with what it was given.
    replaced = meta(compute_api, "PUT", image_id, expect=200,
                    json={"metadata": {"os_version": "1", "hw_disk_bus": "scsi"}})
    assert replaced == {"metadata": {"os_version": "1", "hw_disk_bus": "scsi"}}
    assert properties(compute_api, image_id) == {"os_version": "1", "hw_disk_bus": "scsi"}
    # POST merges and answers with all of them.
    merged = meta(compute_api, "POST", image_id, expect=200,
                  json={"metadata": {"os_version": "2", "architecture": "x86_64"}})
    assert merged == {"metadata": {"os_version": "2", "hw_disk_bus": "scsi",
                                   "architecture": "x86_64"}}
    # One key: show, set, delete.
    assert meta(compute_api, "GET", image_id, "os_version", expect=200) == {
        "meta": {"os_version": "2"}}
    assert meta(compute_api, "PUT", image_id, "os_version", expect=200,
                json={"meta": {"os_version": "3"}}) == {"meta": {"os_version": "3"}}
    assert meta(compute_api, "DELETE", image_id, "hw_disk_bus", expect=204) is None
    assert properties(compute_api, image_id) == {"os_version": "3",
                                                 "architecture": "x86_64"}
    assert meta(compute_api, "GET", image_id, expect=200) == {
        "metadata": {"os_version": "3", "architecture": "x86_64"}}


def test_the_routes_are_gone_from_2_39(compute_api: ComputeApi) -> None:
    image_id = image(compute_api, os_distro="cirros")
    v2_39 = version("2.39")
    meta(compute_api, "GET", image_id, at=v2_39, expect=404)
    meta(compute_api, "GET", image_id, "os_distro", at=v2_39, expect=404)
    meta(compute_api, "DELETE", image_id, "os_distro", at=v2_39, expect=404)
    # Not a 400 for a body the older versions refuse: the route is not there.
    meta(compute_api, "POST", image_id, at=v2_39, json={"metadata": {"a/b": 1}},
         expect=404)
    meta(compute_api, "PUT", image_id, "x", at=v2_39, json={"nothing": 1}, expect=404)
    assert properties(compute_api, image_id) == {"os_distro": "cirros"}


def test_who_may_read_and_write(compute_api: ComputeApi) -> None:
    """Anyone who sees the image reads it; its owner and administrators write it; an
    image the caller cannot see is a 404 whatever it asks."""
    public = image(compute_api, ADMIN, visibility="public", os_distro="cirros")
    assert meta(compute_api, "GET", public, token=OTHER, expect=200) == {
        "metadata": {"os_distro": "cirros"}}
    refused = meta(compute_api, "POST", public, token=OTHER, expect=403,
                   json={"metadata": {"a": "1"}})
    assert "modify_image" in refused["forbidden"]["message"]
    meta(compute_api, "DELETE", public, "os_distro", token=OTHER, expect=403)
    private = image(compute_api, USER, visibility="private", os_distro="cirros")
    meta(compute_api, "GET", private, token=OTHER, expect=404)
    meta(compute_api, "GET", private, "os_distro", token=OTHER, expect=404)
    meta(compute_api, "PUT", private, token=OTHER, json={"metadata": {}}, expect=404)
    meta(compute_api, "POST", private, token=ADMIN, json={"metadata": {"a": "1"}},
         expect=200)
    assert properties(compute_api, private) == {"os_distro": "cirros", "a": "1"}
    assert properties(compute_api, public) == {"os_distro": "cirros"}
    missing = "8d4bb6c3-1a7b-4b0e-9d55-3f1d1b6f0a11"
    assert meta(compute_api, "GET", missing, expect=404)["itemNotFound"]["message"] == (
        "Image not found.")


@pytest.mark.parametrize(("method", "key", "body", "status", "words"), [
    ("POST", None, {"metadata": {"hw_disk_bus": "floppy"}}, 400,
     ["hw_disk_bus", "'floppy'"]),
    ("POST", None, {"metadata": {"trait:CUSTOM_X": "forbidden"}}, 400, ["allowed: required"]),
    ("PUT", None, {"metadata": {"os_glance_x": "1"}}, 403, ["os_glance_x", "reserved"]),
    ("POST", None, {"metadata": {"status": "active"}}, 403, ["status", "read-only"]),
    ("POST", None, {"metadata": {"name": "other"}}, 400, ["'name'", "not a property"]),
    ("POST", None, {"metadata": {"a/b": "1"}}, 400, ["metadata"]),
    ("POST", None, {"metadata": {"a": 1}}, 400, ["metadata"]),
    ("PUT", "a", {"meta": {"b": "1"}}, 400, ["mismatch", "'a'", "'b'"]),
    ("PUT", "a", {"meta": {"a": "1", "b": "2"}}, 400, ["meta"]),
    ("GET", "nope", None, 404, ["'nope'"]),
    ("DELETE", "nope", None, 404, ["'nope'"]),
])
def test_bad_writes_name_what_is_wrong_and_change_nothing(
        compute_api: ComputeApi, method: str, key: str | None, body: Any, status: int,
        words: list[str]) -> None:
    image_id = image(compute_api, os_distro="cirros")
    answer = meta(compute_api, method, image_id, key, json=body, expect=status)
    message = next(iter(answer.values()))["message"]
    assert all(word in message for word in words), message
    assert properties(compute_api, image_id) == {"os_distro": "cirros"}
    assert compute_api.image("GET", f"/v2/images/{image_id}").json()["name"] == "img"


def test_the_metadata_items_quota_counts_every_property(compute_api: ComputeApi) -> None:
    compute_api.admin("PUT", "/v2.1/os-quota-sets/demo-project",
                      json={"quota_set": {"metadata_items": 2}}, expect=200)
    image_id = image(compute_api, os_distro="cirros")
    meta(compute_api, "POST", image_id, json={"metadata": {"a": "1"}}, expect=200)
    refused = meta(compute_api, "PUT", image_id, "b", json={"meta": {"b": "2"}}, expect=403)
    assert refused["forbidden"]["message"].startswith("Image metadata limit exceeded")
    assert "at most 2" in refused["forbidden"]["message"]
    # Replacing them all counts only the new ones.
    meta(compute_api, "PUT", image_id, json={"metadata": {"b": "2", "c": "3"}}, expect=200)
    assert properties(compute_api, image_id) == {"b": "2", "c": "3"}
