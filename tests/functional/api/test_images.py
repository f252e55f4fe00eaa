"""Images as metadata: validated properties with upstream's aliases, visibility."""

from __future__ import annotations

from tests.api_fixtures import ComputeApi

IMAGE = {"id": "11111111-2222-3333-4444-555555555555", "name": "cirros",
         "disk_format": "qcow2", "container_format": "bare"}
URL = f"/v2.1/images/{IMAGE['id']}"


def test_create_canonicalizes_properties(compute_api: ComputeApi) -> None:
    body = {**IMAGE, "properties": {"hw_vif_model": "VirtualE1000",
                                    "hw_architecture": "amd64",
                                    "trait:CUSTOM_LICENSED": "required",
                                    "os_distro": "cirros"}}
    response = compute_api.admin("POST", "/v2.1/images", json=body, expect=201)
    image = response.json()
    assert response.headers["location"].endswith(URL)
    assert image["properties"] == {"hw_vif_model": "e1000", "hw_architecture": "x86_64",
                                   "trait:CUSTOM_LICENSED": "required",
                                   "os_distro": "cirros"}
    assert image["visibility"] == "public"
    assert compute_api.user("GET", URL, expect=200).json()["disk_format"] == "qcow2"
    listed = compute_api.user("GET", "/v2.1/images", expect=200).json()["images"]
    assert [i["id"] for i in listed] == [IMAGE["id"]]


def test_bad_images_are_400_naming_property_and_allowed(compute_api: ComputeApi) -> None:
    cases = [
        ({"disk_format": "qcow3"}, ["disk_format", "qcow2", "vmdk"]),
        ({"container_format": "zip"}, ["container_format", "bare"]),
        ({"properties": {"hw_vif_model": "fast"}}, ["hw_vif_model", "e1000", "virtio"]),
        ({"properties": {"hw_disk_bus": "nvme"}}, ["hw_disk_bus", "sata"]),
        ({"properties": {"hw_video_model": "3dfx"}}, ["hw_video_model", "qxl"]),
        ({"properties": {"trait:NOT_A_TRAIT": "required"}}, ["trait:NOT_A_TRAIT"]),
        ({"properties": {"trait:CUSTOM_X": "forbidden"}}, ["allowed: required"]),
        ({"visibility": "everyone"}, ["visibility", "public, private"]),
        ({"name": None}, ["'name'"]),
    ]
    for fields, words in cases:
        body = compute_api.admin("POST", "/v2.1/images", json={**IMAGE, **fields},
                                 expect=400).json()
        message = body["badRequest"]["message"]
        assert all(w in message for w in words), (fields, message)
    compute_api.admin("GET", URL, expect=404)
    assert compute_api.admin("GET", "/v2.1/images").json()["images"] == []


def test_patch_merges_and_removes_properties(compute_api: ComputeApi) -> None:
    compute_api.admin("POST", "/v2.1/images",
                      json={**IMAGE, "properties": {"hw_disk_bus": "scsi", "a": "1"}},
                      expect=201)
    patched = compute_api.admin(
        "PATCH", URL, json={"name": "cirros-2", "properties": {"hw_disk_bus": "sata",
                                                               "a": None}},
        expect=200).json()
    assert patched["name"] == "cirros-2"
    assert patched["properties"] == {"hw_disk_bus": "sata"}
    bad = compute_api.admin("PATCH", URL, json={"properties": {"hw_disk_bus": "floppy"}},
                            expect=400).json()
    assert "hw_disk_bus" in bad["badRequest"]["message"]
    assert compute_api.admin("GET", URL).json()["properties"] == {"hw_disk_bus": "sata"}
    compute_api.admin("DELETE", URL, expect=204)
    compute_api.admin("GET", URL, expect=404)


def test_private_images_belong_to_their_project(compute_api: ComputeApi) -> None:
    mine = compute_api.user("POST", "/v2.1/images", json=IMAGE, expect=201).json()
    assert (mine["visibility"], mine["owner"]) == ("private", "demo-project")
    compute_api.request("GET", URL, token="other:other-project", expect=404)
    compute_api.request("DELETE", URL, token="other:other-project", expect=404)
    compute_api.user("PATCH", URL, json={"visibility": "public"}, expect=403)
    compute_api.admin("GET", URL, expect=200)
    compute_api.user("DELETE", URL, expect=204)


def test_duplicate_image_id_is_409(compute_api: ComputeApi) -> None:
    compute_api.admin("POST", "/v2.1/images", json=IMAGE, expect=201)
    compute_api.admin("POST", "/v2.1/images", json=IMAGE, expect=409)
