"""The application's frame: authentication, routing errors, the public documents."""

from __future__ import annotations

from tests.api_fixtures import ComputeApi


def test_public_documents_need_no_token(compute_api: ComputeApi) -> None:
    versions = compute_api.request("GET", "/", token=None, expect=200).json()
    assert versions["versions"][0]["id"] == "v2.1"
    compute_api.request("GET", "/v2.1", token=None, expect=200)
    document = compute_api.request("GET", "/openapi.json", token=None, expect=200).json()
    assert document["openapi"].startswith("3.")
    assert "/v2.1/os-aggregates/{aggregate_id}/action" in document["paths"]


def test_user_routes_need_a_token(compute_api: ComputeApi) -> None:
    body = compute_api.request("GET", "/v2.1/flavors", token=None, expect=401).json()
    assert body["unauthorized"]["code"] == 401


def test_unknown_path_and_wrong_method(compute_api: ComputeApi) -> None:
    body = compute_api.admin("GET", "/v2.1/nothing-here", expect=404).json()
    assert body["itemNotFound"]["code"] == 404
    response = compute_api.admin("PATCH", "/v2.1/flavors", expect=405)
    assert response.headers["allow"] == "GET, POST"
    assert "allowed: GET, POST" in response.json()["badMethod"]["message"]


def test_bodies_must_be_json_objects(compute_api: ComputeApi) -> None:
    for data in ("[]", "{bad", ""):
        response = compute_api.admin("POST", "/v2.1/flavors", data=data,
                                     headers={"content-type": "application/json"})
        assert response.status_code == 400, data
        assert "badRequest" in response.json()
    response = compute_api.admin("POST", "/v2.1/flavors", data="x",
                                 headers={"content-type": "text/plain"})
    assert response.status_code == 415


def test_trailing_slash_and_request_ids(compute_api: ComputeApi) -> None:
    response = compute_api.admin("GET", "/v2.1/flavors/", expect=200)
    assert response.headers["x-openstack-request-id"].startswith("req-")


def test_servers_routes_are_served(compute_api: ComputeApi) -> None:
    assert compute_api.user("GET", "/v2.1/servers", expect=200).json() == {"servers": []}
    compute_api.user("GET", "/v2.1/servers/detail", expect=200)
    compute_api.admin("GET", "/v2.1/os-migrations", expect=200)
