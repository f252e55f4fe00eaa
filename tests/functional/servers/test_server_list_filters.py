"""GET /servers and /servers/detail with nova's filters, sort keys and pages, at the
versions that change them, for users and administrators; and every bad parameter a 400
(or nova's 403) that names it and says what is allowed, never a 500."""

from __future__ import annotations

import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from moorage.api import microversion as mv
from tests.functional.servers.conftest import Cloud, fake_host

USER = "user1:project1"  # noauth2: a member of project1
LATEST = str(mv.MAX_VERSION)

# USER's servers (name -> create fields), and one of the admin's project.
MINE: dict[str, dict[str, Any]] = {
    "web-1": {"tags": ["web", "blue"], "description": "front"},
    "web-2": {"tags": ["web", "red"]},
    "db-1": {"tags": ["db"], "hostname": "database"},
}
ADMINS = "admins-1"


@pytest.fixture
def listed(make_cloud: Any) -> tuple[Cloud, dict[str, str]]:
    """A cloud with USER's servers of MINE (booted in that order), one of the admin's
    on host b, and one of USER's deleted."""
    cloud: Cloud = make_cloud([fake_host("a", memory_mb=65536), fake_host("b")])
    flavor, image = cloud.flavor("small"), cloud.image("raw", "raw")
    uuids: dict[str, str] = {}
    for name, fields in MINE.items():
        response = cloud.call("POST", "/servers", {"server": {
            "name": name, "flavorRef": flavor, "imageRef": image, "networks": "none",
            **fields}}, token=USER)
        assert response.status_code == 202, response.text
        uuids[name] = response.json()["server"]["id"]
        cloud.wait(uuids[name])
    uuids[ADMINS] = cloud.boot_and_wait(flavor, image, name=ADMINS, host="b")["id"]
    gone = cloud.call("POST", "/servers", {"server": {
        "name": "gone", "flavorRef": flavor, "imageRef": image, "networks": "none"}},
        token=USER).json()["server"]["id"]
    cloud.wait(gone)
    assert cloud.call("DELETE", f"/servers/{gone}", token=USER).status_code == 204
    cloud.wait(gone)
    uuids["gone"] = gone
    return cloud, uuids


def _list(cloud: Cloud, query: str, *, token: str | None = USER, version: str = LATEST,
          detail: bool = False) -> Any:
    path = "/servers/detail" if detail else "/servers"
    return cloud.call("GET", f"{path}?{query}", token=token, version=version)


def _names(cloud: Cloud, query: str, **kwargs: Any) -> list[str]:
    response = _list(cloud, query, **kwargs)
    assert response.status_code == 200, (query, response.text)
    return [server["name"] for server in response.json()["servers"]]


# (query, version, token: None is the admin, the names listed; in order if sorted)
FILTERS: list[tuple[str, str, str | None, list[str]]] = [
    ("", LATEST, USER, ["db-1", "web-2", "web-1"]),
    ("name=^web", LATEST, USER, ["web-2", "web-1"]),
    ("name=1$", LATEST, USER, ["db-1", "web-1"]),
    ("status=ACTIVE", LATEST, USER, ["db-1", "web-2", "web-1"]),
    ("status=PAUSED", LATEST, USER, []),  # nova's status, no server of Moorage's
    ("tags=web", LATEST, USER, ["web-2", "web-1"]),
    ("tags=web,blue", LATEST, USER, ["web-1"]),
    ("tags-any=red,db", LATEST, USER, ["db-1", "web-2"]),
    ("not-tags=web,blue", LATEST, USER, ["db-1", "web-2"]),
    ("not-tags-any=web", LATEST, USER, ["db-1"]),
    ("tags=web", "2.25", USER, ["db-1", "web-2", "web-1"]),  # not a filter yet
    ("ip=10.0.0.1", LATEST, USER, []),  # no server has an address here
    ("ip6=::1", "2.4", USER, ["db-1", "web-2", "web-1"]),  # a user's from 2.5
    ("ip6=::1", "2.5", USER, []),
    ("locked=false", LATEST, USER, ["db-1", "web-2", "web-1"]),
    ("locked=true", LATEST, USER, []),
    ("hostname=data", "2.90", USER, ["db-1"]),
    ("hostname=data", "2.89", USER, ["db-1", "web-2", "web-1"]),  # a user's from 2.90
    ("all_tenants=1&description=fro", "2.89", None, ["web-1"]),  # an admin's filter
    ("description=fro", "2.89", USER, ["db-1", "web-2", "web-1"]),  # dropped for users
    ("vm_state=active", "2.83", USER, ["db-1", "web-2", "web-1"]),
    ("vm_state=error", "2.83", USER, []),
    ("vm_state=error", "2.82", USER, ["db-1", "web-2", "web-1"]),
    ("host=b", "2.74", USER, ["db-1", "web-2", "web-1"]),  # admin-only, dropped
    ("host=b&all_tenants=1&name=^adm", LATEST, None, [ADMINS]),
    ("host=nowhere&all_tenants=1", LATEST, None, []),
    ("all_tenants=1&project_id=project1&name=web-1", LATEST, None, ["web-1"]),
    ("project_id=project1", LATEST, None, [ADMINS]),  # without all_tenants: one's own
    ("all_tenants=1&deleted=true", LATEST, None, ["gone"]),
    ("all_tenants=1&status=DELETED", LATEST, None, ["gone"]),
    ("all_tenants=1&sort_key=display_name&sort_dir=asc", LATEST, None,
     [ADMINS, "db-1", "web-1", "web-2"]),
    ("sort_key=display_name&sort_dir=desc", LATEST, USER, ["web-2", "web-1", "db-1"]),
    ("sort_key=hostname&sort_dir=asc&sort_key=display_name", LATEST, USER,
     ["db-1", "web-1", "web-2"]),
    ("sort_key=id&sort_dir=asc&sort_key=display_name", "2.74", USER,
     ["web-2", "web-1", "db-1"]),  # id ignored, with its direction
    ("sort_key=host", LATEST, None, [ADMINS]),  # without all_tenants: one's own
]


def test_filters_and_orders_as_nova_s(listed: tuple[Cloud, dict[str, str]]) -> None:
    cloud, _ = listed
    for query, version, token, expected in FILTERS:  # one cloud for the table
        found = _names(cloud, query, token=token, version=version)
        if "sort_key" not in query:  # created in the same second: in any order
            found, expected = sorted(found), sorted(expected)
        assert found == expected, (query, version, token)


def test_changes_since_and_before_include_the_deleted(
        listed: tuple[Cloud, dict[str, str]]) -> None:
    cloud, _ = listed
    long_ago = "2000-01-01T00:00:00Z"
    since = _names(cloud, f"changes-since={long_ago}")
    assert set(since) == {"web-1", "web-2", "db-1", "gone"}
    soon = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    assert _names(cloud, f"changes-since={soon}") == []
    assert set(_names(cloud, f"changes-before={soon}", version="2.66")) == set(since)
    assert _names(cloud, f"changes-before={long_ago}", version="2.66") == []
    # Before 2.66 changes-before is no filter of a user's: the usual list.
    assert sorted(_names(cloud, f"changes-before={long_ago}", version="2.65")) == [
        "db-1", "web-1", "web-2"]


def test_pages_follow_servers_links(listed: tuple[Cloud, dict[str, str]]) -> None:
    """A full page links to the next, with the same query and the last id as marker;
    a shorter page ends the walk."""
    cloud, uuids = listed
    for detail in (False, True):
        seen: list[str] = []
        query = "limit=2&sort_key=display_name&sort_dir=asc"
        while True:
            body = _list(cloud, query, detail=detail).json()
            seen += [s["name"] for s in body["servers"]]
            links = body.get("servers_links")
            if not links:
                break
            [link] = links
            assert link["rel"] == "next"
            href = urlsplit(link["href"])
            assert href.path.endswith("/v2.1/servers/detail" if detail else "/v2.1/servers")
            params = parse_qs(href.query)
            assert params["marker"] == [uuids[seen[-1]]]
            assert params["sort_key"] == ["display_name"]
            query = href.query
        assert seen == ["db-1", "web-1", "web-2"]
    assert "servers_links" not in _list(cloud, "limit=5").json()
    assert _list(cloud, "limit=0").json() == {"servers": []}


# (query, version, token, status, what the message says)
REFUSED: list[tuple[str, str, str | None, int, str]] = [
    ("sort_key=colour", LATEST, USER, 400, "sort_key"),
    ("sort_key=id", LATEST, USER, 400, "'id' is not a sort key; allowed: "),
    ("sort_key=locked", "2.72", USER, 200, ""),  # ignored before 2.73
    ("sort_dir=up", LATEST, USER, 400, "sort_dir"),
    ("sort_key=display_name&sort_dir=asc&sort_dir=desc", LATEST, USER, 400,
     "Sort direction size exceeds sort key size"),
    ("sort_key=host", LATEST, USER, 403, "Only administrators can sort servers by host"),
    ("limit=-1", LATEST, USER, 400, "limit"),
    ("limit=two", LATEST, USER, 400, "limit"),
    ("marker=no-such-server", LATEST, USER, 400, "marker [no-such-server] not found"),
    ("changes-since=yesterday", LATEST, USER, 400, "changes-since"),
    ("changes-before=yesterday", LATEST, USER, 400, "changes-before"),
    ("changes-since=2026-01-02T00:00:00Z&changes-before=2026-01-01T00:00:00Z", LATEST,
     USER, 400, "changes-since must be less than or equal to changes-before"),
    ("status=SLEEPY", LATEST, USER, 400, "Invalid status value 'SLEEPY'"),
    ("status=SLEEPY", "2.37", USER, 200, ""),  # an empty list before 2.38
    ("status=DELETED", LATEST, USER, 403, "Only administrators may list deleted"),
    ("name=[", LATEST, USER, 400, "name"),
    ("locked=maybe", LATEST, USER, 400, "locked"),
    ("all_tenants=maybe", LATEST, USER, 400, "all_tenants"),
    ("all_tenants=1", LATEST, USER, 403, "get_all_tenants"),
    ("colour=blue", LATEST, USER, 400, "'colour' was unexpected"),
    ("colour=blue", "2.74", USER, 200, ""),  # dropped before 2.75
    ("metadata=x", LATEST, None, 400, "Invalid filter field: metadata."),
    ("metadata=x", LATEST, USER, 200, ""),  # dropped for users
]


def test_bad_parameters_are_refused_naming_them(
        listed: tuple[Cloud, dict[str, str]]) -> None:
    cloud, _ = listed
    for query, version, token, status, message in REFUSED:
        for detail in (False, True):
            response = _list(cloud, query, token=token, version=version, detail=detail)
            assert response.status_code == status, (query, version, response.text)
            assert message in response.text, (query, version, response.text)
    assert _names(cloud, "status=SLEEPY", version="2.37") == []


def test_on_postgresql(make_cloud: Any, postgresql_url: str) -> None:
    """Regular expressions, JSON fields and tags in PostgreSQL's SQL."""
    cloud: Cloud = make_cloud([fake_host("a")], database_url=postgresql_url)
    flavor, image = cloud.flavor("small"), cloud.image("raw", "raw")
    for name, fields in MINE.items():
        uuid = cloud.boot(flavor, image, name=name, **fields)
        cloud.wait(uuid)
    assert _names(cloud, "name=^web&tags=web&not-tags-any=red", token=None) == ["web-1"]
    assert _names(cloud, "hostname=^data", token=None) == ["db-1"]
    assert _names(cloud, "sort_key=hostname&sort_dir=asc&limit=1", token=None) == ["db-1"]
    refused = _list(cloud, "name=(?P<x>a)", token=None)
    assert refused.status_code == 400, refused.text
