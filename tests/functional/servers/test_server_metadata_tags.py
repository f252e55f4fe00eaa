"""A server's metadata and tags through their own routes, as nova's clients use them:
bodies, status codes and errors step by step, the states nova refuses them in, and
concurrent writers that all keep what they wrote."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from moorage.lifecycle.attributes import METADATA_ITEMS_MAX, TAGS_MAX
from tests.functional.servers.conftest import Cloud, fake_host

USER = "user1:project1"  # noauth2: a member of project1
OTHER = "user2:project2"
TAGS_VERSION = "2.26"


@pytest.fixture
def cloud(make_cloud: Any) -> Cloud:
    cloud: Cloud = make_cloud([fake_host("a")])
    return cloud


def _boot(cloud: Cloud, **extra: Any) -> str:
    """One of USER's servers, ACTIVE."""
    response = cloud.call("POST", "/servers", {"server": {
        "name": "vm", "flavorRef": cloud.flavor("small"), "imageRef": cloud.image("raw", "raw"),
        "networks": "none", **extra}}, token=USER)
    assert response.status_code == 202, response.text
    uuid = str(response.json()["server"]["id"])
    assert cloud.wait(uuid)["status"] == "ACTIVE"
    return uuid


def _failed(cloud: Cloud) -> str:
    """One of USER's servers, in ERROR (no host has its vCPUs)."""
    response = cloud.call("POST", "/servers", {"server": {
        "name": "failed", "flavorRef": cloud.flavor("huge", vcpus=4096),
        "imageRef": cloud.image("raw2", "raw"), "networks": "none"}}, token=USER)
    uuid = str(response.json()["server"]["id"])
    assert cloud.wait(uuid)["status"] == "ERROR"
    return uuid


# A story: (method, path below the server, body, status, answer; None: not checked).
METADATA_STORY: list[tuple[str, str, Any, int, Any]] = [
    ("GET", "/metadata", None, 200, {"metadata": {"owner": "ops"}}),
    ("POST", "/metadata", {"metadata": {"tier": "web", "owner": "dev"}}, 200,
     {"metadata": {"owner": "dev", "tier": "web"}}),
    ("GET", "/metadata/tier", None, 200, {"meta": {"tier": "web"}}),
    ("PUT", "/metadata/zone", {"meta": {"zone": "a"}}, 200, {"meta": {"zone": "a"}}),
    ("GET", "/metadata", None, 200,
     {"metadata": {"owner": "dev", "tier": "web", "zone": "a"}}),
    ("PUT", "/metadata", {"metadata": {"only": "this"}}, 200, {"metadata": {"only": "this"}}),
    ("DELETE", "/metadata/only", None, 204, None),
    ("GET", "/metadata", None, 200, {"metadata": {}}),
    # What nova refuses.
    ("GET", "/metadata/only", None, 404, "Metadata item was not found"),
    ("DELETE", "/metadata/only", None, 404, "Metadata item was not found"),
    ("PUT", "/metadata/a", {"meta": {"b": "1"}}, 400, "Request body and URI mismatch"),
    ("PUT", "/metadata/a", {"meta": {"a": "1", "b": "2"}}, 400, "meta"),
    ("POST", "/metadata", {"metadata": {"bad/key": "1"}}, 400, "bad/key"),
    ("POST", "/metadata", {"metadata": {"k": "v" * 256}}, 400, "longer than 255"),
    ("POST", "/metadata", {"metadata": {"k": 1}}, 400, "must be a string"),
    ("POST", "/metadata", {"meta": {"k": "v"}}, 400, "metadata"),
    ("PUT", "/metadata", {"metadata": {f"k{i}": "v" for i in range(METADATA_ITEMS_MAX + 1)}},
     403, f"Maximum number of metadata items exceeds {METADATA_ITEMS_MAX}"),
]


def _step(cloud: Cloud, uuid: str, method: str, path: str, body: Any, status: int,
          answer: Any, *, token: str = USER, version: str | None = None) -> None:
    response = cloud.call(method, f"/servers/{uuid}{path}", body, token=token,
                          version=version)
    assert response.status_code == status, (method, path, response.text)
    if isinstance(answer, str):
        assert answer in response.text, (method, path, response.text)
    elif answer is not None:
        assert response.json() == answer, (method, path)


def test_metadata_routes_as_nova_s(cloud: Cloud) -> None:
    uuid = _boot(cloud, metadata={"owner": "ops"})
    for method, path, body, status, answer in METADATA_STORY:
        _step(cloud, uuid, method, path, body, status, answer)
    # The server's body shows what the routes wrote.
    cloud.call("POST", f"/servers/{uuid}/metadata", {"metadata": {"x": "y"}}, token=USER)
    assert cloud.show(uuid)["metadata"] == {"x": "y"}
    # Another project's server is not there for this caller.
    assert cloud.call("GET", f"/servers/{uuid}/metadata", token=OTHER).status_code == 404
    assert cloud.call("POST", f"/servers/{uuid}/metadata", {"metadata": {"a": "b"}},
                      token=OTHER).status_code == 404
    assert cloud.call("GET", "/servers/nope/metadata").status_code == 404


TAGS_STORY: list[tuple[str, str, Any, int, Any]] = [
    ("GET", "/tags", None, 200, {"tags": ["web"]}),
    ("PUT", "/tags/blue", None, 201, None),
    ("PUT", "/tags/blue", None, 204, None),  # it had it
    ("GET", "/tags/blue", None, 204, None),
    ("GET", "/tags/green", None, 404, "has no tag 'green'"),
    ("PUT", "/tags", {"tags": ["a", "b", "a"]}, 200, {"tags": ["a", "b"]}),
    ("GET", "/tags", None, 200, {"tags": ["a", "b"]}),
    ("DELETE", "/tags/a", None, 204, None),
    ("DELETE", "/tags/a", None, 404, "has no tag 'a'"),
    ("DELETE", "/tags", None, 204, None),
    ("GET", "/tags", None, 200, {"tags": []}),
    # What nova refuses.
    ("PUT", "/tags/a,b", None, 400, "Tag 'a,b' is invalid"),
    ("PUT", f"/tags/{'t' * 61}", None, 400, "is invalid"),
    ("PUT", "/tags", {"tags": ["a/b"]}, 400, "tags"),
    ("PUT", "/tags", {"tags": [f"t{i}" for i in range(TAGS_MAX + 1)]}, 400, "tags"),
    ("PUT", "/tags", {"tag": []}, 400, "tags"),
    ("PUT", "/tags", {"tags": [f"t{i}" for i in range(TAGS_MAX)]}, 200, None),
    ("PUT", "/tags/one-more", None, 400, f"per-server limit {TAGS_MAX}"),
]


def test_tag_routes_as_nova_s(cloud: Cloud) -> None:
    uuid = _boot(cloud, tags=["web"])
    for method, path, body, status, answer in TAGS_STORY:
        _step(cloud, uuid, method, path, body, status, answer, version=TAGS_VERSION)
    # nova counts before it looks: a full server refuses even a tag it has.
    full = cloud.call("PUT", f"/servers/{uuid}/tags/t0", token=USER, version="2.26")
    assert full.status_code == 400, full.text
    shown = cloud.call("GET", f"/servers/{uuid}", token=USER, version="2.26").json()
    assert len(shown["server"]["tags"]) == TAGS_MAX
    # Before 2.26 the routes are not there, as in nova.
    for method in ("GET", "DELETE"):
        assert cloud.call(method, f"/servers/{uuid}/tags", token=USER,
                          version="2.25").status_code == 404
    assert cloud.call("PUT", f"/servers/{uuid}/tags/x", token=USER,
                      version="2.25").status_code == 404
    assert cloud.call("PUT", f"/servers/{uuid}/tags", {"colour": "blue"}, token=USER,
                      version="2.25").status_code == 404
    assert cloud.call("GET", f"/servers/{uuid}/tags", token=OTHER,
                      version="2.26").status_code == 404


def test_a_new_tag_answers_201_with_its_location(cloud: Cloud) -> None:
    uuid = _boot(cloud)
    response = cloud.call("PUT", f"/servers/{uuid}/tags/new%20tag", token=USER,
                          version="2.26")
    assert response.status_code == 201, response.text
    assert response.headers["Location"].endswith(f"/servers/{uuid}/tags/new%20tag")
    assert cloud.call("GET", f"/servers/{uuid}/tags", token=USER,
                      version="2.26").json() == {"tags": ["new tag"]}
    again = cloud.call("PUT", f"/servers/{uuid}/tags/new%20tag", token=USER, version="2.26")
    assert again.status_code == 204
    assert again.headers["Location"] == response.headers["Location"]


# (method, path, body): every write of metadata and tags, refused in ERROR.
WRITES: list[tuple[str, str, Any]] = [
    ("POST", "/metadata", {"metadata": {"a": "b"}}),
    ("PUT", "/metadata", {"metadata": {"a": "b"}}),
    ("PUT", "/metadata/a", {"meta": {"a": "b"}}),
    ("PUT", "/tags", {"tags": ["a"]}),
    ("PUT", "/tags/a", None),
    ("DELETE", "/tags", None),
]


def test_writes_are_refused_where_nova_refuses_them(cloud: Cloud) -> None:
    """nova takes metadata and tags from an active (paused, suspended, stopped) server:
    one in ERROR gets a 409 naming the state; reads still answer."""
    uuid = _failed(cloud)
    for method, path, body in WRITES:
        response = cloud.call(method, f"/servers/{uuid}{path}", body, token=USER,
                              version="2.26")
        assert response.status_code == 409, (method, path, response.text)
        assert "while it is in vm_state error" in response.text
    assert cloud.call("GET", f"/servers/{uuid}/metadata", token=USER).json() == {
        "metadata": {}}
    assert cloud.call("GET", f"/servers/{uuid}/tags", token=USER,
                      version="2.26").json() == {"tags": []}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_concurrent_writers_keep_every_key_and_tag(make_cloud: Any, backend: str,
                                                  request: pytest.FixtureRequest) -> None:
    """Writers of different keys (and tags) of one server at once: each keeps what it
    wrote, none is lost to another's read-modify-write."""
    url = request.getfixturevalue("postgresql_url") if backend == "postgresql" else None
    cloud: Cloud = make_cloud([fake_host("a")], database_url=url)
    uuid = _boot(cloud)
    writers, rounds = 8, 4
    failures: list[str] = []

    def write(worker: int) -> None:
        for round_ in range(rounds):
            key = f"w{worker}-{round_}"
            for method, path, body in (
                    ("POST", "/metadata", {"metadata": {key: str(round_)}}),
                    ("PUT", f"/tags/{key}", None)):
                response = cloud.call(method, f"/servers/{uuid}{path}", body, token=USER,
                                      version="2.26")
                if response.status_code not in (200, 201):
                    failures.append(f"{method} {path}: {response.status_code} "
                                    f"{response.text}")

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    expected = {f"w{w}-{r}" for w in range(writers) for r in range(rounds)}
    metadata = cloud.call("GET", f"/servers/{uuid}/metadata", token=USER).json()["metadata"]
    assert set(metadata) == expected
    tags = cloud.call("GET", f"/servers/{uuid}/tags", token=USER, version="2.26").json()
    assert set(tags["tags"]) == expected
    # The list's tag filter reads the same tags (their rows kept in step).
    found = cloud.call("GET", "/servers?tags=w0-0,w7-3", token=USER, version="2.26").json()
    assert [s["id"] for s in found["servers"]] == [uuid]
