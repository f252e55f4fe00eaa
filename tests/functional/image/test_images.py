"""The image service over HTTP, as glance's clients call it: at /image on a real compute
API (SQLite, a real placement), with noauth2 tokens. Images, their listing, JSON
patches, tags, members, visibility, protection, and data in and out."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.api_fixtures import (
    ADMIN,
    SERVICE_TOKEN,
    USER,
    ComputeApi,
    start_compute_api,
    stop_compute_api,
)

PATCH = {"Content-Type": "application/openstack-images-v2.1-json-patch"}
OCTET = {"Content-Type": "application/octet-stream"}
OTHER = "bob:bob-project"
IMAGE_ID = "8d4bb6c3-1a7b-4b0e-9d55-3f1d1b6f0a11"


def create(api: ComputeApi, token: str = ADMIN, expect: int = 201, **fields: Any
           ) -> dict[str, Any]:
    body = {"name": "img", "disk_format": "raw", "container_format": "bare", **fields}
    answer: dict[str, Any] = api.image("POST", "/v2/images", json=body, token=token,
                                       expect=expect).json()
    return answer


def patch(api: ComputeApi, image_id: str, changes: list[dict[str, Any]],
          token: str = ADMIN, expect: int = 200) -> requests.Response:
    return api.image("PATCH", f"/v2/images/{image_id}", json=changes, headers=PATCH,
                     token=token, expect=expect)


def names(api: ComputeApi, query: str = "", token: str = ADMIN) -> list[str]:
    listed = api.image("GET", f"/v2/images{query}", token=token, expect=200).json()
    return [image["name"] for image in listed["images"]]


@pytest.fixture
def compute_api(tmp_path: Path, shared_placement: Any) -> Iterator[ComputeApi]:
    """A fresh compute API (and its image service) on the module's placement: the
    image service asks placement only to count the hosts an image can boot on."""
    api = start_compute_api(tmp_path / "api", shared_placement.url)
    yield api
    stop_compute_api(api)


def data_files(api: ComputeApi) -> list[str]:
    directory = Path(api.state.conf.image.filesystem_store_datadir)
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


# -- discovery and authentication ---------------------------------------------------

def test_versions_are_public_and_list_v2(compute_api: ComputeApi) -> None:
    for path in ("", "/versions"):
        answer = compute_api.image("GET", path, token=None)
        versions = answer.json()["versions"]
        assert answer.status_code == (300 if path == "" else 200)
        assert [v["status"] for v in versions if v["id"] == "v2.16"] == ["CURRENT"]
        assert {v["id"] for v in versions} >= {"v2.0", "v2.1", "v2.16"}
        assert versions[0]["links"][0]["href"] == compute_api.url + "/image/v2/"


def test_the_images_need_a_token(compute_api: ComputeApi) -> None:
    answer = compute_api.image("GET", "/v2/images", token=None, expect=401)
    assert answer.json()["title"] == "Unauthorized"


def test_the_service_token_is_not_a_user(compute_api: ComputeApi) -> None:
    """The agents' token opens the compute API's internal routes, not the images."""
    for path in ("/v2/images", "/internal/services"):
        compute_api.image("GET", path, token=None, expect=401,
                          headers={"X-Service-Token": SERVICE_TOKEN})


def test_unknown_paths_and_methods(compute_api: ComputeApi) -> None:
    assert compute_api.image("GET", "/v2/nothing", expect=404).json()["code"] == (
        "404 Not Found")
    answer = compute_api.image("PUT", "/v2/images", expect=405)
    assert answer.headers["Allow"] == "GET, POST"


@pytest.mark.parametrize("name", ["image", "images", "member", "members"])
def test_schemas(compute_api: ComputeApi, name: str) -> None:
    schema = compute_api.image("GET", f"/v2/schemas/{name}", expect=200).json()
    assert schema["name"] == name
    if name == "image":
        assert schema["additionalProperties"]["type"] == "string"
        assert "raw" in schema["properties"]["disk_format"]["enum"]


# -- create, show -------------------------------------------------------------------

def test_create_takes_glance_attributes_and_any_string_property(
        compute_api: ComputeApi) -> None:
    made = create(compute_api, id=IMAGE_ID, name="cirros", disk_format="qcow2",
                  min_disk=1, min_ram=64, tags=["b", "a"], protected=False,
                  hw_vif_model="VirtualE1000", os_distro="cirros")
    assert made["id"] == IMAGE_ID
    shown = compute_api.image("GET", f"/v2/images/{IMAGE_ID}", expect=200).json()
    assert shown == made
    assert (shown["status"], shown["visibility"], shown["owner"]) == ("queued", "shared",
                                                                      "admin")
    assert (shown["size"], shown["checksum"], shown["os_hash_value"]) == (None, None, None)
    assert shown["tags"] == ["a", "b"]
    # Properties beside the attributes, as written (the scheduler reads the alias as
    # e1000).
    assert (shown["hw_vif_model"], shown["os_distro"]) == ("VirtualE1000", "cirros")
    assert (shown["self"], shown["file"], shown["schema"]) == (
        f"/v2/images/{IMAGE_ID}", f"/v2/images/{IMAGE_ID}/file", "/v2/schemas/image")


def test_the_compute_api_reads_the_same_image(compute_api: ComputeApi) -> None:
    made = create(compute_api, id=IMAGE_ID, visibility="public", hw_disk_bus="scsi")
    legacy = compute_api.admin("GET", f"/v2.1/images/{made['id']}", expect=200).json()
    assert legacy["properties"] == {"hw_disk_bus": "scsi"}
    compute_api.image("DELETE", f"/v2/images/{made['id']}", expect=204)
    compute_api.admin("GET", f"/v2.1/images/{made['id']}", expect=404)


@pytest.mark.parametrize(("fields", "status", "named"), [
    ({"status": "active"}, 403, "Attribute 'status' is read-only."),
    ({"checksum": "x"}, 403, "Attribute 'checksum' is read-only."),
    ({"deleted": True}, 403, "Attribute 'deleted' is reserved."),
    ({"os_glance_import_task": "x"}, 403, "is reserved"),
    ({"hw_disk_bus": "floppy"}, 400, "Invalid image property hw_disk_bus: 'floppy'"),
    ({"trait:HW_CPU_X86_AVX2": "forbidden"}, 400, "allowed: required"),
    ({"trait:NOT_A_TRAIT": "required"}, 400, "trait:NOT_A_TRAIT"),
    ({"visibility": "everyone"}, 400, "Invalid value for visibility"),
    ({"disk_format": "qcow3"}, 400, "Invalid value for disk_format: 'qcow3'"),
    ({"min_ram": -1}, 400, "Invalid value for min_ram"),
    ({"protected": "yes"}, 400, "Invalid value for protected"),
    ({"os_distro": 7}, 400, "Invalid value for property os_distro"),
    ({"id": "not-a-uuid"}, 400, "Invalid value for id"),
    ({"tags": "a"}, 400, "Invalid value for tags"),
])
def test_create_refuses(compute_api: ComputeApi, fields: dict[str, Any], status: int,
                        named: str) -> None:
    answer = create(compute_api, expect=status, **fields)
    assert named in answer["message"]
    assert names(compute_api) == []


def test_ids_are_never_reused(compute_api: ComputeApi) -> None:
    create(compute_api, id=IMAGE_ID)
    assert "already exists" in create(compute_api, id=IMAGE_ID, expect=409)["message"]
    compute_api.image("DELETE", f"/v2/images/{IMAGE_ID}", expect=204)
    create(compute_api, id=IMAGE_ID, expect=409)


def test_only_admins_publish_or_give_images_away(compute_api: ComputeApi) -> None:
    create(compute_api, token=USER, visibility="public", expect=403)
    create(compute_api, token=USER, owner="someone-else", expect=403)
    mine = create(compute_api, token=USER, visibility="community")
    assert mine["owner"] == "demo-project"
    assert create(compute_api, owner="someone-else")["owner"] == "someone-else"


# -- listing ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory, shared_placement: Any
              ) -> Iterator[ComputeApi]:
    """Five images of different shapes, all the admin's, read by the tests that list
    (which change nothing but their own images)."""
    compute_api = start_compute_api(tmp_path_factory.mktemp("catalogue"),
                                    shared_placement.url)
    create(compute_api, name="alpha", visibility="public", tags=["linux", "small"],
           os_distro="ubuntu")
    create(compute_api, name="beta", visibility="private", disk_format="qcow2",
           tags=["linux"], protected=True)
    create(compute_api, name="gamma", visibility="community", disk_format="iso")
    create(compute_api, name="delta", visibility="public", os_hidden=True)
    made = create(compute_api, name="epsilon", visibility="public")
    compute_api.image("PUT", f"/v2/images/{made['id']}/file", data=b"x" * 100,
                      headers=OCTET, expect=204)
    yield compute_api
    stop_compute_api(compute_api)


@pytest.mark.parametrize(("query", "expected"), [
    ("", {"alpha", "beta", "gamma", "epsilon"}),
    ("?name=alpha", {"alpha"}),
    ("?name=in:alpha,beta,nope", {"alpha", "beta"}),
    ("?status=active", {"epsilon"}),
    ("?status=queued", {"alpha", "beta", "gamma"}),
    ("?visibility=private", {"beta"}),
    ("?visibility=community", {"gamma"}),
    ("?tag=linux", {"alpha", "beta"}),
    ("?tag=linux&tag=small", {"alpha"}),
    ("?disk_format=qcow2", {"beta"}),
    ("?disk_format=in:qcow2,iso", {"beta", "gamma"}),
    ("?container_format=bare&protected=true", {"beta"}),
    ("?protected=false", {"alpha", "gamma", "epsilon"}),
    ("?os_hidden=true", {"delta"}),
    ("?size_min=100&size_max=100", {"epsilon"}),
    ("?size_min=101", set()),
    ("?os_distro=ubuntu", {"alpha"}),
    ("?owner=admin&name=gamma", {"gamma"}),
    ("?created_at=gte:2000-01-01T00:00:00Z", {"alpha", "beta", "gamma", "epsilon"}),
    ("?created_at=lt:2000-01-01T00:00:00Z", set()),
    ("?updated_at=gt:2999-01-01T00:00:00Z", set()),
])
def test_list_filters(catalogue: ComputeApi, query: str, expected: set[str]) -> None:
    assert set(names(catalogue, query)) == expected


@pytest.mark.parametrize(("query", "named"), [
    ("?visibility=everyone", "visibility"),
    ("?protected=maybe", "protected"),
    ("?size_min=-1", "size_min"),
    ("?created_at=after:2000-01-01", "created_at"),
    ("?created_at=gte:yesterday", "created_at"),
    ("?sort_key=colour", "sort key"),
    ("?sort_dir=sideways", "sort direction"),
    ("?sort=name:up", "sort direction"),
    ("?sort=name&sort_key=name", "cannot be used together"),
    ("?limit=-2", "limit"),
    ("?marker=nope", "marker"),
    ("?member_status=maybe", "member_status"),
])
def test_list_refuses(catalogue: ComputeApi, query: str, named: str) -> None:
    answer = catalogue.image("GET", f"/v2/images{query}", expect=400)
    assert named in answer.json()["message"]


def test_list_sorts(catalogue: ComputeApi) -> None:
    assert names(catalogue, "?sort_key=name&sort_dir=asc") == [
        "alpha", "beta", "epsilon", "gamma"]
    assert names(catalogue, "?sort=name:desc") == ["gamma", "epsilon", "beta", "alpha"]
    assert names(catalogue, "?sort=disk_format:asc,name:desc")[:2] == ["gamma", "beta"]
    assert names(catalogue, "?sort_key=disk_format&sort_key=name&sort_dir=desc&sort_dir=asc"
                 ) == ["alpha", "epsilon", "beta", "gamma"]


def test_list_pages_with_next_links(catalogue: ComputeApi) -> None:
    seen: list[str] = []
    path: str | None = "/v2/images?limit=2&sort_key=name&sort_dir=asc"
    while path is not None:
        page = catalogue.image("GET", path, expect=200).json()
        assert len(page["images"]) <= 2
        assert page["first"] == "/v2/images"
        seen.extend(image["name"] for image in page["images"])
        path = page.get("next")
        if path is not None:
            assert "sort_key=name" in path and "limit=2" in path
    assert seen == ["alpha", "beta", "epsilon", "gamma"]


def test_what_a_user_sees(catalogue: ComputeApi) -> None:
    mine = create(catalogue, token=USER, name="mine", visibility="private")
    create(catalogue, token=OTHER, name="bobs", visibility="private")
    assert set(names(catalogue, token=USER)) == {"alpha", "epsilon", "mine"}
    assert set(names(catalogue, "?visibility=community", token=USER)) == {"gamma"}
    assert set(names(catalogue, "?visibility=all", token=USER)) == {
        "alpha", "epsilon", "mine", "gamma"}
    bobs = catalogue.image("GET", "/v2/images?name=bobs", expect=200).json()["images"][0]
    catalogue.image("GET", f"/v2/images/{bobs['id']}", token=USER, expect=404)
    assert "bobs" in names(catalogue)  # the admin sees every image
    for image in (mine, bobs):
        catalogue.image("DELETE", f"/v2/images/{image['id']}", expect=204)


# -- patch --------------------------------------------------------------------------

def test_patch_changes_attributes_properties_and_tags(compute_api: ComputeApi) -> None:
    made = create(compute_api, os_distro="cirros", tags=["old"])
    changed = patch(compute_api, made["id"], [
        {"op": "replace", "path": "/name", "value": "renamed"},
        {"op": "replace", "path": "/min_ram", "value": 256},
        {"op": "add", "path": "/hw_video_model", "value": "virtio"},
        {"op": "add", "path": "/os_distro", "value": "fedora"},
        {"op": "replace", "path": "/tags", "value": ["new", "newer"]},
        {"op": "replace", "path": "/protected", "value": True},
        {"op": "add", "path": "/trait:HW_CPU_X86_AVX2", "value": "required"},
    ]).json()
    assert (changed["name"], changed["min_ram"], changed["protected"]) == ("renamed", 256,
                                                                          True)
    assert (changed["hw_video_model"], changed["os_distro"]) == ("virtio", "fedora")
    assert changed["tags"] == ["new", "newer"]
    removed = patch(compute_api, made["id"], [
        {"op": "remove", "path": "/os_distro"}]).json()
    assert "os_distro" not in removed and removed["hw_video_model"] == "virtio"
    assert compute_api.image("GET", f"/v2/images/{made['id']}").json() == removed


@pytest.mark.parametrize(("changes", "status", "named"), [
    ([{"op": "replace", "path": "/status", "value": "active"}], 403,
     "Attribute 'status' is read-only."),
    ([{"op": "add", "path": "/id", "value": IMAGE_ID}], 403, "read-only"),
    ([{"op": "replace", "path": "/size", "value": 5}], 403, "read-only"),
    ([{"op": "remove", "path": "/name"}], 403, "Property name may not be removed."),
    ([{"op": "replace", "path": "/os_distro", "value": "x"}], 409,
     "Property os_distro does not exist."),
    ([{"op": "remove", "path": "/os_distro"}], 409, "does not exist"),
    ([{"op": "add", "path": "/hw_disk_bus", "value": "floppy"}], 400,
     "Invalid image property hw_disk_bus"),
    ([{"op": "move", "path": "/name", "value": "x"}], 400, "Invalid operation"),
    ([{"op": "add", "path": "/a/b", "value": "x"}], 400, "nested paths"),
    ([{"op": "add", "path": "/name"}], 400, "needs a value"),
    ([{"op": "replace", "path": "/visibility", "value": "public"}], 403, "publicize_image"),
    ({"name": "x"}, 400, "JSON array"),
])
def test_patch_refuses(compute_api: ComputeApi, changes: Any, status: int,
                       named: str) -> None:
    made = create(compute_api, token=USER)
    answer = patch(compute_api, made["id"], changes, token=USER, expect=status)
    assert named in answer.json()["message"]
    assert compute_api.image("GET", f"/v2/images/{made['id']}").json() == made


def test_patch_needs_the_patch_media_type(compute_api: ComputeApi) -> None:
    made = create(compute_api)
    answer = compute_api.image("PATCH", f"/v2/images/{made['id']}", expect=415,
                               json=[{"op": "replace", "path": "/name", "value": "x"}])
    assert "application/openstack-images-v2.1-json-patch" in answer.json()["message"]


def test_only_the_owner_changes_an_image(compute_api: ComputeApi) -> None:
    made = create(compute_api, token=USER, visibility="community")
    patch(compute_api, made["id"], [{"op": "replace", "path": "/name", "value": "x"}],
          token=OTHER, expect=403)
    compute_api.image("DELETE", f"/v2/images/{made['id']}", token=OTHER, expect=403)
    patch(compute_api, made["id"], [{"op": "replace", "path": "/name", "value": "x"}])


# -- tags ---------------------------------------------------------------------------

def test_tags_one_by_one(compute_api: ComputeApi) -> None:
    made = create(compute_api, tags=["a"])
    compute_api.image("PUT", f"/v2/images/{made['id']}/tags/b", expect=204)
    compute_api.image("PUT", f"/v2/images/{made['id']}/tags/b", expect=204)
    assert compute_api.image("GET", f"/v2/images/{made['id']}").json()["tags"] == ["a", "b"]
    compute_api.image("DELETE", f"/v2/images/{made['id']}/tags/a", expect=204)
    compute_api.image("DELETE", f"/v2/images/{made['id']}/tags/a", expect=404)
    assert compute_api.image("GET", f"/v2/images/{made['id']}").json()["tags"] == ["b"]


# -- members ------------------------------------------------------------------------

def test_members_of_a_shared_image(compute_api: ComputeApi) -> None:
    made = create(compute_api, token=USER, name="shared", visibility="shared")
    path = f"/v2/images/{made['id']}/members"
    compute_api.image("GET", f"/v2/images/{made['id']}", token=OTHER, expect=404)
    member = compute_api.image("POST", path, token=USER, json={"member": "bob-project"},
                               expect=200).json()
    assert (member["member_id"], member["status"], member["image_id"]) == (
        "bob-project", "pending", made["id"])
    compute_api.image("POST", path, token=USER, json={"member": "bob-project"}, expect=409)
    # A member sees the image, lists it once it accepts, and sees only itself.
    compute_api.image("GET", f"/v2/images/{made['id']}", token=OTHER, expect=200)
    assert names(compute_api, token=OTHER) == []
    assert names(compute_api, "?member_status=pending&visibility=shared",
                 token=OTHER) == ["shared"]
    compute_api.image("POST", path, token=OTHER, json={"member": "bob-project"}, expect=403)
    compute_api.image("PUT", f"{path}/bob-project", token=USER, json={"status": "accepted"},
                      expect=403)
    compute_api.image("PUT", f"{path}/bob-project", token=OTHER, json={"status": "maybe"},
                      expect=400)
    accepted = compute_api.image("PUT", f"{path}/bob-project", token=OTHER,
                                 json={"status": "accepted"}, expect=200).json()
    assert accepted["status"] == "accepted"
    assert names(compute_api, token=OTHER) == ["shared"]
    compute_api.image("POST", path, token=USER, json={"member": "carol-project"})
    owner_view = compute_api.image("GET", path, token=USER, expect=200).json()
    assert [m["member_id"] for m in owner_view["members"]] == ["bob-project",
                                                               "carol-project"]
    member_view = compute_api.image("GET", path, token=OTHER, expect=200).json()
    assert [m["member_id"] for m in member_view["members"]] == ["bob-project"]
    compute_api.image("GET", f"{path}/carol-project", token=OTHER, expect=404)
    compute_api.image("GET", f"{path}/bob-project", token=OTHER, expect=200)
    compute_api.image("DELETE", f"{path}/bob-project", token=USER, expect=204)
    compute_api.image("GET", f"/v2/images/{made['id']}", token=OTHER, expect=404)


def test_only_shared_images_have_members(compute_api: ComputeApi) -> None:
    made = create(compute_api, visibility="private")
    answer = compute_api.image("POST", f"/v2/images/{made['id']}/members",
                               json={"member": "bob-project"}, expect=403)
    assert "Only shared images have members" in answer.json()["message"]


# -- protection and deletion --------------------------------------------------------

def test_a_protected_image_is_not_deleted(compute_api: ComputeApi) -> None:
    made = create(compute_api, protected=True)
    answer = compute_api.image("DELETE", f"/v2/images/{made['id']}", expect=403)
    assert "is protected" in answer.json()["message"]
    patch(compute_api, made["id"], [{"op": "replace", "path": "/protected", "value": False}])
    compute_api.image("DELETE", f"/v2/images/{made['id']}", expect=204)
    answer = compute_api.image("GET", f"/v2/images/{made['id']}", expect=404)
    assert answer.json()["message"] == f"No image found with ID {made['id']}"


# -- data ---------------------------------------------------------------------------

def test_upload_and_download(compute_api: ComputeApi) -> None:
    data = bytes(range(256)) * 1000
    made = create(compute_api)
    file = f"/v2/images/{made['id']}/file"
    compute_api.image("GET", file, expect=204)
    compute_api.image("PUT", file, data=data, headers=OCTET, expect=204)
    shown = compute_api.image("GET", f"/v2/images/{made['id']}").json()
    assert (shown["status"], shown["size"], shown["virtual_size"]) == ("active", len(data),
                                                                       len(data))
    assert shown["checksum"] == hashlib.md5(data).hexdigest()
    assert (shown["os_hash_algo"], shown["os_hash_value"]) == (
        "sha512", hashlib.sha512(data).hexdigest())
    got = compute_api.image("GET", file, expect=200)
    assert got.content == data
    assert got.headers["Content-MD5"] == shown["checksum"]
    assert got.headers["Content-Type"] == "application/octet-stream"
    answer = compute_api.image("PUT", file, data=b"again", headers=OCTET, expect=409)
    assert "from active to saving" in answer.json()["message"]
    assert data_files(compute_api) == [made["id"]]
    compute_api.image("DELETE", f"/v2/images/{made['id']}", expect=204)
    assert data_files(compute_api) == []


def test_a_chunked_upload(compute_api: ComputeApi) -> None:
    made = create(compute_api)

    def chunks() -> Iterator[bytes]:
        yield from (b"a" * 1000, b"b" * 5000, b"c")

    compute_api.image("PUT", f"/v2/images/{made['id']}/file", data=chunks(),
                      headers=OCTET, expect=204)
    got = compute_api.image("GET", f"/v2/images/{made['id']}/file", expect=200).content
    assert got == b"a" * 1000 + b"b" * 5000 + b"c"


def test_upload_needs_formats_and_octets(compute_api: ComputeApi) -> None:
    made = create(compute_api, disk_format=None, container_format=None)
    answer = compute_api.image("PUT", f"/v2/images/{made['id']}/file", data=b"x",
                               headers=OCTET, expect=400)
    assert "disk_format, container_format must be set" in answer.json()["message"]
    made = create(compute_api)
    compute_api.image("PUT", f"/v2/images/{made['id']}/file", data=b"x",
                      headers={"Content-Type": "text/plain"}, expect=415)


def test_only_the_owner_uploads(compute_api: ComputeApi) -> None:
    made = create(compute_api, token=USER, visibility="community")
    compute_api.image("PUT", f"/v2/images/{made['id']}/file", data=b"x", token=OTHER,
                      headers=OCTET, expect=403)


def _qemu_img(directory: Path, *args: str) -> None:
    subprocess.run(["qemu-img", *args], check=True, capture_output=True, cwd=directory)


@pytest.mark.parametrize(("build", "declared", "named"), [
    (["create", "-f", "qcow2", "img", "1M"], "raw", "is qcow2, not the disk_format raw"),
    (["create", "-f", "raw", "img", "1M"], "qcow2", "is raw, not the disk_format qcow2"),
    (["create", "-f", "qcow2", "-b", "base.raw", "-F", "raw", "img"], "qcow2",
     "has a backing file"),
    (["create", "-f", "qcow2", "-o", "data_file=data.raw", "img", "1M"], "qcow2",
     "has an external data file"),
    (["create", "-f", "vmdk", "-o", "subformat=monolithicFlat", "img", "1M"], "vmdk",
     "is raw, not the disk_format vmdk"),
])
def test_refused_data_leaves_nothing(compute_api: ComputeApi, tmp_path: Path,
                                     build: list[str], declared: str, named: str) -> None:
    _qemu_img(tmp_path, "create", "-f", "raw", "base.raw", "1M")
    _qemu_img(tmp_path, *build)
    made = create(compute_api, disk_format=declared)
    answer = compute_api.image("PUT", f"/v2/images/{made['id']}/file",
                               data=(tmp_path / "img").read_bytes(), headers=OCTET,
                               expect=400)
    assert named in answer.json()["message"]
    shown = compute_api.image("GET", f"/v2/images/{made['id']}").json()
    assert (shown["status"], shown["size"], shown["checksum"]) == ("queued", None, None)
    assert data_files(compute_api) == []


def test_a_qcow2_upload_reads_its_virtual_size(compute_api: ComputeApi,
                                               tmp_path: Path) -> None:
    _qemu_img(tmp_path, "create", "-f", "qcow2", "img", "64M")
    made = create(compute_api, disk_format="qcow2")
    compute_api.image("PUT", f"/v2/images/{made['id']}/file",
                      data=(tmp_path / "img").read_bytes(), headers=OCTET, expect=204)
    shown = compute_api.image("GET", f"/v2/images/{made['id']}").json()
    assert (shown["status"], shown["virtual_size"]) == ("active", 64 << 20)


@pytest.fixture
def small_api(tmp_path: Path, shared_placement: Any) -> Iterator[ComputeApi]:
    """A compute API whose image service takes 1000 bytes at most."""
    api = start_compute_api(tmp_path / "small", shared_placement.url,
                            config={"image": {"max_size": 1000}})
    yield api
    stop_compute_api(api)


def test_max_size(small_api: ComputeApi) -> None:
    made = create(small_api)
    file = f"/v2/images/{made['id']}/file"
    answer = small_api.image("PUT", file, data=b"x" * 1001, headers=OCTET, expect=413)
    assert "1000 bytes ([image] max_size)" in answer.json()["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: refused while it arrives
        for _ in range(20):
            yield b"y" * 100

    small_api.image("PUT", file, data=chunks(), headers=OCTET, expect=413)
    assert small_api.image("GET", f"/v2/images/{made['id']}").json()["status"] == "queued"
    assert data_files(small_api) == []
    small_api.image("PUT", file, data=b"x" * 1000, headers=OCTET, expect=204)
    assert small_api.image("GET", f"/v2/images/{made['id']}").json()["size"] == 1000


# -- nova's image proxy (GET /v2.1/images before 2.36) -----------------------------

NOVA_2_35 = {"OpenStack-API-Version": "compute 2.35", "Moorage-Additions": "0"}
NOVA_2_36 = {"OpenStack-API-Version": "compute 2.36", "Moorage-Additions": "0"}


def test_the_proxy_shows_the_image_services_images_as_nova(compute_api: ComputeApi) -> None:
    made = create(compute_api, name="cirros", visibility="public", min_ram=64,
                  os_distro="cirros")
    compute_api.image("PUT", f"/v2/images/{made['id']}/file", data=b"z" * 10,
                      headers=OCTET, expect=204)
    queued = create(compute_api, name="empty", visibility="public")
    index = compute_api.admin("GET", "/v2.1/images", headers=NOVA_2_35, expect=200).json()
    assert [set(i) for i in index["images"]] == [{"id", "name", "links"}] * 2
    # Newest first; created in the same second, they are in id order.
    assert {i["name"] for i in index["images"]} == {"empty", "cirros"}
    cirros = next(i for i in index["images"] if i["name"] == "cirros")
    links = {link["rel"]: link["href"] for link in cirros["links"]}
    assert links == {
        "self": f"{compute_api.url}/v2.1/images/{made['id']}",
        "bookmark": f"{compute_api.url}/images/{made['id']}",
        "alternate": f"{compute_api.url}/image/images/{made['id']}"}
    shown = compute_api.admin("GET", f"/v2.1/images/{made['id']}", headers=NOVA_2_35,
                              expect=200).json()["image"]
    assert {k: shown[k] for k in ("status", "progress", "minRam", "minDisk", "metadata",
                                  "OS-EXT-IMG-SIZE:size")} == {
        "status": "ACTIVE", "progress": 100, "minRam": 64, "minDisk": 0,
        "metadata": {"os_distro": "cirros"}, "OS-EXT-IMG-SIZE:size": 10}
    assert shown["created"].endswith("Z") and "server" not in shown
    detail = compute_api.admin("GET", "/v2.1/images/detail?status=SAVING",
                               headers=NOVA_2_35, expect=200).json()["images"]
    assert [(i["id"], i["status"], i["progress"]) for i in detail] == [
        (queued["id"], "SAVING", 25)]
    assert [i["name"] for i in compute_api.admin(
        "GET", "/v2.1/images/detail?minRam=32", headers=NOVA_2_35).json()["images"]] == [
        "cirros"]
    paged = compute_api.admin("GET", "/v2.1/images?limit=1", headers=NOVA_2_35).json()
    assert "marker=" in paged["images_links"][0]["href"]


def test_the_proxy_follows_the_image_services_visibility(compute_api: ComputeApi) -> None:
    private = create(compute_api, name="admins", visibility="private")
    compute_api.user("GET", f"/v2.1/images/{private['id']}", headers=NOVA_2_35, expect=404)
    assert compute_api.user("GET", "/v2.1/images", headers=NOVA_2_35).json()["images"] == []


@pytest.mark.parametrize("path", ["/v2.1/images", "/v2.1/images/detail",
                                  f"/v2.1/images/{IMAGE_ID}"])
def test_the_proxy_is_gone_from_2_36(compute_api: ComputeApi, path: str) -> None:
    create(compute_api, id=IMAGE_ID, visibility="public")
    compute_api.admin("GET", path, headers=NOVA_2_35, expect=200)
    compute_api.admin("GET", path, headers=NOVA_2_36, expect=404)


def test_moorage_additions_keep_moorages_view(compute_api: ComputeApi) -> None:
    made = create(compute_api, visibility="public", hw_disk_bus="scsi")
    shown = compute_api.admin("GET", f"/v2.1/images/{made['id']}", expect=200).json()
    assert (shown["visibility"], shown["properties"], shown["status"]) == (
        "public", {"hw_disk_bus": "scsi"}, "queued")


def test_the_legacy_delete_is_the_image_services(compute_api: ComputeApi) -> None:
    """DELETE /v2.1/images/{id} refuses a protected image, removes the data, and the id
    stays taken."""
    made = create(compute_api, protected=True)
    compute_api.image("PUT", f"/v2/images/{made['id']}/file", data=b"d", headers=OCTET,
                      expect=204)
    compute_api.admin("DELETE", f"/v2.1/images/{made['id']}", expect=403)
    patch(compute_api, made["id"], [{"op": "replace", "path": "/protected", "value": False}])
    compute_api.admin("DELETE", f"/v2.1/images/{made['id']}", expect=204)
    compute_api.image("GET", f"/v2/images/{made['id']}", expect=404)
    assert data_files(compute_api) == []
    create(compute_api, id=made["id"], expect=409)
