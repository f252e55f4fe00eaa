"""What every route shares: the version document, microversion negotiation, errors,
routing, request ids, caching headers, body checks and authentication."""

from __future__ import annotations

import http.client
import uuid
from urllib.parse import urlparse

import pytest

from moorage.placement.launcher import PlacementProcess
from tests.conftest import PlacementClient


def test_version_document_needs_no_token(shared_placement: PlacementClient) -> None:
    response = shared_placement.session.get(shared_placement.url + "/")
    assert response.status_code == 200
    assert response.headers["openstack-api-version"] == "placement 1.0"
    assert response.json() == {"versions": [{
        "id": "v1.0", "max_version": "1.39", "min_version": "1.0", "status": "CURRENT",
        "links": [{"rel": "self", "href": ""}]}]}


@pytest.mark.parametrize(("header", "status", "echoed"), [
    (None, 200, "placement 1.0"),
    ("placement 1.17", 200, "placement 1.17"),
    ("placement latest", 200, "placement 1.39"),
    ("compute 2.1, placement 1.5", 200, "placement 1.5"),
    ("compute 2.1", 200, "placement 1.0"),
    ("placement 1.40", 406, None),
    ("placement 0.5", 406, None),
    ("placement 2.0", 406, None),
    ("placement pony.horse", 400, None),
    ("placement 1.2.3", 400, None),
])
def test_microversion_negotiation(
    shared_placement: PlacementClient, header: str | None, status: int, echoed: str | None
) -> None:
    headers = {"openstack-api-version": header} if header else {}
    response = shared_placement.request("GET", "/resource_providers", version="",
                                        headers=headers)
    assert response.status_code == status
    if echoed:
        assert response.headers["openstack-api-version"] == echoed
        assert response.headers["vary"] == "openstack-api-version"
    else:
        assert "Invalid microversion" in response.json()["errors"][0]["detail"]


def test_406_for_unsupported_version_names_the_range(shared_placement: PlacementClient) -> None:
    error = shared_placement.get("/", version="1.99", expect=406).json()["errors"][0]
    assert error["max_version"] == "1.39" and error["min_version"] == "1.0"


def test_unknown_route_is_404_and_wrong_method_405_with_allow(
    shared_placement: PlacementClient,
) -> None:
    shared_placement.get("/nowhere", expect=404)
    shared_placement.get("/resource_providers/", expect=404)
    response = shared_placement.request("PATCH", "/resource_providers", expect=405)
    assert response.headers["allow"] == "GET, POST"
    assert "The method PATCH is not allowed" in response.json()["errors"][0]["detail"]
    # A route newer than the requested microversion does not exist for that client.
    shared_placement.get("/traits", version="1.5", expect=404)
    shared_placement.get("/traits", version="1.6", expect=200)
    shared_placement.delete(f"/resource_providers/{uuid.uuid4()}/inventories", version="1.4",
                            expect=405)


def test_error_body_shape_and_codes(shared_placement: PlacementClient) -> None:
    response = shared_placement.get(f"/resource_providers/{uuid.uuid4()}", version="1.22",
                                    expect=404)
    error = response.json()["errors"][0]
    assert set(error) == {"status", "title", "detail", "request_id"}
    assert error["request_id"] == response.headers["x-openstack-request-id"]
    assert error["request_id"].startswith("req-")
    newer = shared_placement.get(f"/resource_providers/{uuid.uuid4()}", version="1.23",
                                 expect=404).json()["errors"][0]
    assert newer["code"] == "placement.undefined_code"
    assert newer["title"] == "Not Found"


def test_every_response_has_a_distinct_request_id(shared_placement: PlacementClient) -> None:
    ids = {shared_placement.get("/").headers["x-openstack-request-id"] for _ in range(5)}
    assert len(ids) == 5


def test_cache_headers_from_1_15(shared_placement: PlacementClient) -> None:
    old = shared_placement.get("/resource_providers", version="1.14", expect=200)
    assert "last-modified" not in old.headers and "cache-control" not in old.headers
    new = shared_placement.get("/resource_providers", version="1.15", expect=200)
    assert new.headers["cache-control"] == "no-cache"
    assert new.headers["last-modified"].endswith(" GMT")


@pytest.mark.parametrize(("accept", "content_type"), [
    ("application/json", "application/json"),
    ("*/*", "application/json"),
    ("text/html", "text/html"),
    ("text/plain", "text/plain"),
    ("text/html;q=0.5, application/json", "application/json"),
])
def test_errors_follow_the_accept_header(
    shared_placement: PlacementClient, accept: str, content_type: str
) -> None:
    response = shared_placement.get("/nowhere", headers={"accept": accept}, expect=404)
    assert response.headers["content-type"] == content_type
    assert "The resource could not be found." in response.text


def test_406_when_json_is_not_acceptable(shared_placement: PlacementClient) -> None:
    response = shared_placement.get("/resource_providers", headers={"accept": "text/plain"},
                                     expect=406)
    assert "Only application/json is provided" in response.text


def _raw(url: str, method: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[
        int, bytes]:
    parsed = urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    conn.putrequest(method, path)
    for name, value in headers.items():
        conn.putheader(name, value)
    conn.endheaders(body)
    response = conn.getresponse()
    return response.status, response.read()


def test_body_needs_a_content_type_and_json(shared_placement: PlacementClient) -> None:
    base = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}
    status, body = _raw(shared_placement.url, "POST", "/resource_providers", b'{"name": "x"}',
                        {**base, "content-length": "13"})
    assert status == 400 and b"content-type header required" in body
    status, body = _raw(shared_placement.url, "POST", "/resource_providers", b'{"name": "x"}',
                        {**base, "content-length": "13", "content-type": "text/plain"})
    assert status == 415 and b"The media type text/plain is not supported" in body
    status, body = _raw(shared_placement.url, "POST", "/resource_providers", b'{"name": ',
                        {**base, "content-length": "9", "content-type": "application/json"})
    assert status == 400 and b"Malformed JSON" in body
    listed = shared_placement.get("/resource_providers?name=x", expect=200).json()
    assert listed == {"resource_providers": []}


def test_oversize_body_is_413_and_stores_nothing(tmp_path: pytest.TempPathFactory) -> None:
    server = PlacementProcess(tmp_path / "small",  # type: ignore[operator]
                              config={"api": {"max_request_body_size": 2048}}).start()
    try:
        client = PlacementClient(server.url)
        response = client.post("/resource_providers",
                               json={"name": "n" * 3000}, expect=413)
        assert "max_request_body_size" in response.json()["errors"][0]["detail"]
        assert client.get("/resource_providers", expect=200).json()["resource_providers"] == []
    finally:
        server.stop()


def test_noauth2_needs_a_token_and_reads_roles(shared_placement: PlacementClient) -> None:
    no_token = shared_placement.session.get(shared_placement.url + "/resource_providers")
    assert no_token.status_code == 401
    shared_placement.get("/resource_providers", token="alice:proj", expect=403)
    shared_placement.get("/resource_providers", token="alice:proj",
                         headers={"x-roles": "admin"}, expect=200)
    # The admin token loses its role when X-Roles says otherwise.
    shared_placement.get("/resource_providers", headers={"x-roles": "reader"}, expect=403)
    # System-scoped tokens are refused by project-scoped rules.
    shared_placement.get("/resource_providers",
                         headers={"openstack-system-scope": "all", "x-roles": "admin"},
                         expect=403)
