"""The image service's pure parsers: glance's JSON patch and its list query."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from moorage.image import patch, query
from moorage.image.errors import BadRequest, Conflict, Forbidden, ImageError

BASE: dict[str, Any] = {"name": "a", "tags": ["x"], "os_distro": "cirros",
                        "protected": False}


@pytest.mark.parametrize(("changes", "after"), [
    ([{"op": "replace", "path": "/name", "value": "b"}], {**BASE, "name": "b"}),
    ([{"op": "add", "path": "/hw_disk_bus", "value": "scsi"}], {**BASE, "hw_disk_bus": "scsi"}),
    ([{"op": "add", "path": "/os_distro", "value": "fedora"}], {**BASE, "os_distro": "fedora"}),
    ([{"op": "remove", "path": "/os_distro"}],
     {k: v for k, v in BASE.items() if k != "os_distro"}),
    ([{"op": "add", "path": "/a~1b~0c", "value": "v"}], {**BASE, "a/b~c": "v"}),
    ([{"op": "replace", "path": "/tags", "value": []}, {"op": "add", "path": "/k", "value": "1"},
      {"op": "replace", "path": "/k", "value": "2"}], {**BASE, "tags": [], "k": "2"}),
])
def test_patches_apply_in_order(changes: list[dict[str, Any]], after: dict[str, Any]) -> None:
    assert patch.apply(BASE, patch.parse(changes)) == after


@pytest.mark.parametrize(("changes", "error", "message"), [
    ([{"op": "replace", "path": "/status", "value": "active"}], Forbidden, "read-only"),
    ([{"op": "remove", "path": "/deleted"}], Forbidden, "reserved"),
    ([{"op": "add", "path": "/os_glance_x", "value": "1"}], Forbidden, "reserved"),
    ([{"op": "test", "path": "/name", "value": "a"}], BadRequest, "Invalid operation"),
    ([{"op": "add", "path": "name", "value": "a"}], BadRequest, "JSON pointer"),
    ([{"op": "add", "path": "/", "value": "a"}], BadRequest, "nested paths"),
    ([{"op": "add", "path": "/tags/-", "value": "a"}], BadRequest, "nested paths"),
    (["add"], BadRequest, "Invalid change"),
    ({"op": "add"}, BadRequest, "JSON array"),
])
def test_malformed_patches(changes: Any, error: type[ImageError], message: str) -> None:
    with pytest.raises(error, match=message):
        patch.parse(changes)


@pytest.mark.parametrize(("changes", "error", "message"), [
    ([{"op": "replace", "path": "/nope", "value": "x"}], Conflict, "nope does not exist"),
    ([{"op": "remove", "path": "/nope"}], Conflict, "nope does not exist"),
    ([{"op": "remove", "path": "/name"}], Forbidden, "may not be removed"),
])
def test_patches_that_do_not_fit_the_image(changes: list[dict[str, Any]],
                                           error: type[ImageError], message: str) -> None:
    with pytest.raises(error, match=message):
        patch.apply(BASE, patch.parse(changes))


@pytest.mark.parametrize(("older", "rfc6902"), [
    ({"replace": "/name", "value": "b"}, {"op": "replace", "path": "/name", "value": "b"}),
    ({"add": "/k", "value": "1"}, {"op": "add", "path": "/k", "value": "1"}),
    ({"remove": "/os_distro"}, {"op": "remove", "path": "/os_distro"}),
    ({"replace": "/a~1b", "value": "v"}, {"op": "replace", "path": "/a~1b", "value": "v"}),
])
def test_the_v2_0_media_type_reads_the_older_form(older: dict[str, Any],
                                                  rfc6902: dict[str, Any]) -> None:
    """Tempest's client sends v2.0 changes with the operation as the key."""
    assert patch.parse([older], patch.PATCH_V20) == patch.parse([rfc6902], patch.PATCH_V21)


@pytest.mark.parametrize(("media_type", "change", "error", "message"), [
    (patch.PATCH_V20, {"op": "replace", "path": "/name", "value": "b"}, BadRequest,
     "exactly one of add, replace, remove"),
    (patch.PATCH_V20, {"add": "/a", "remove": "/b"}, BadRequest, "exactly one of"),
    (patch.PATCH_V20, {"replace": "name", "value": "b"}, BadRequest, "JSON pointer"),
    (patch.PATCH_V20, {"add": "/os_glance_foo", "value": "bar"}, Forbidden, "reserved"),
    (patch.PATCH_V20, {"replace": "/status", "value": "active"}, Forbidden, "read-only"),
    (patch.PATCH_V20, {"replace": "/name"}, BadRequest, "needs a value"),
    (patch.PATCH_V21, {"replace": "/name", "value": "b"}, BadRequest,
     "Invalid operation None: allowed: add, replace, remove"),
    (patch.PATCH_V21, {"op": "replace", "value": "b"}, BadRequest, "needs a path"),
])
def test_each_media_type_takes_only_its_own_form(media_type: str, change: dict[str, Any],
                                                 error: type[ImageError],
                                                 message: str) -> None:
    with pytest.raises(error, match=message):
        patch.parse([change], media_type)


def test_the_v2_0_media_type_refuses_adding_a_present_property() -> None:
    changes = patch.parse([{"op": "add", "path": "/os_distro", "value": "x"}])
    with pytest.raises(Conflict, match="already present"):
        patch.apply(BASE, changes, strict_add=True)


def _pairs(text: str) -> list[tuple[str, str]]:
    return [(k, v) for k, _, v in (item.partition("=") for item in text.split("&") if item)]


@pytest.mark.parametrize(("text", "expected"), [
    ("", query.ImageQuery()),
    ("name=in:a,b&status=active", query.ImageQuery(among={"name": ("a", "b"),
                                                          "status": ("active",)})),
    ("tag=a&tag=b&os_distro=x", query.ImageQuery(tags=("a", "b"),
                                                 properties={"os_distro": "x"})),
    ("protected=TRUE&os_hidden=false", query.ImageQuery(
        booleans={"protected": True, "os_hidden": False})),
    ("created_at=gte:2026-01-02T03:04:05Z", query.ImageQuery(times=(query.TimeFilter(
        "created_at", "gte", datetime.datetime(2026, 1, 2, 3, 4, 5)),))),
    ("updated_at=lt:2026-01-02T05:04:05+02:00", query.ImageQuery(times=(query.TimeFilter(
        "updated_at", "lt", datetime.datetime(2026, 1, 2, 3, 4, 5)),))),
    ("sort_key=name&sort_key=size&sort_dir=asc", query.ImageQuery(
        sort=(("name", "asc"), ("size", "asc")))),
    ("sort=name:asc,size", query.ImageQuery(sort=(("name", "asc"), ("size", "desc")))),
    ("limit=5000&marker=m", query.ImageQuery(limit=1000, marker="m")),
    ("visibility=all&member_status=all", query.ImageQuery(visibility="all",
                                                          member_status="all")),
    ("size_min=1&size_max=2", query.ImageQuery(size_min=1, size_max=2)),
])
def test_list_queries(text: str, expected: query.ImageQuery) -> None:
    assert query.parse(_pairs(text)) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("sort_key=name&sort_key=size&sort_dir=asc&sort_dir=desc&sort_dir=asc", "one for each"),
    ("sort_key=owner&sort=name:asc", "cannot be used together"),
    ("limit=x", "limit"),
    ("size_max=-1", "size_max"),
    ("os_hidden=1", "os_hidden"),
    ("updated_at=2026-01-01", "OP:TIME"),
])
def test_bad_list_queries(text: str, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        query.parse(_pairs(text))
