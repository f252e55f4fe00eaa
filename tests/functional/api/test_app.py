"""The application's frame: authentication, routing errors, the public documents."""

from __future__ import annotations

from moorage.api import microversion
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


def test_a_trailing_slash_is_part_of_the_path_as_in_nova(compute_api: ComputeApi) -> None:
    """nova's router matches paths exactly: ``/flavors/`` is no route (Tempest checks
    that ``/os-simple-tenant-usage/`` is a 404), the version document answers both."""
    response = compute_api.admin("GET", "/v2.1/flavors/", expect=404)
    assert response.headers["x-openstack-request-id"].startswith("req-")
    compute_api.admin("GET", "/v2.1/os-simple-tenant-usage/", expect=404)
    compute_api.admin("GET", "/v2.1/flavors", expect=200)
    assert compute_api.request("GET", "/v2.1/", token=None, expect=200).json()["version"]


def test_servers_routes_are_served(compute_api: ComputeApi) -> None:
    assert compute_api.user("GET", "/v2.1/servers", expect=200).json() == {"servers": []}
    compute_api.user("GET", "/v2.1/servers/detail", expect=200)
    compute_api.admin("GET", "/v2.1/os-migrations", expect=200)


def test_the_version_documents_name_the_microversion_range(compute_api: ComputeApi) -> None:
    version = compute_api.request("GET", "/v2.1", token=None, expect=200).json()["version"]
    assert (version["min_version"], version["version"]) == (
        str(microversion.MIN_VERSION), str(microversion.MAX_VERSION))
    document = compute_api.request("GET", "/openapi.json", token=None, expect=200).json()
    changes = document["x-openstack-microversions"]["changes"]
    assert {"version": "2.55", "resource": "flavors",
            "change": microversion.FLAVOR_DESCRIPTION.change} in changes


def test_answers_name_their_microversion(compute_api: ComputeApi) -> None:
    asked = {"OpenStack-API-Version": "compute 2.60"}
    response = compute_api.admin("GET", "/v2.1/flavors", headers=asked, expect=200)
    assert response.headers["OpenStack-API-Version"] == "compute 2.60"
    assert response.headers["X-OpenStack-Nova-API-Version"] == "2.60"
    assert "OpenStack-API-Version" in response.headers["Vary"]
    assert "X-OpenStack-Nova-API-Version" in response.headers["Vary"]
    # No header: 2.1, said so; the legacy header alone is read; latest is the maximum.
    response = compute_api.admin("GET", "/v2.1/flavors", headers={
        "OpenStack-API-Version": None}, expect=200)
    assert response.headers["OpenStack-API-Version"] == "compute 2.1"
    response = compute_api.admin("GET", "/v2.1/flavors", headers={
        "OpenStack-API-Version": None, "X-OpenStack-Nova-API-Version": "2.33"}, expect=200)
    assert response.headers["X-OpenStack-Nova-API-Version"] == "2.33"
    response = compute_api.admin("GET", "/v2.1/flavors", headers={
        "OpenStack-API-Version": "compute latest"}, expect=200)
    assert response.headers["X-OpenStack-Nova-API-Version"] == str(microversion.MAX_VERSION)
    # Errors below /v2.1 name it too; the documents outside it do not.
    response = compute_api.admin("GET", "/v2.1/flavors/nothing", headers=asked, expect=404)
    assert response.headers["OpenStack-API-Version"] == "compute 2.60"
    assert "OpenStack-API-Version" not in compute_api.request("GET", "/", token=None).headers


def test_a_bad_microversion_is_nova_s_400_or_406(compute_api: ComputeApi) -> None:
    body = compute_api.admin("GET", "/v2.1/flavors", headers={
        "OpenStack-API-Version": "compute 2.x"}, expect=400).json()
    assert "2.x is of invalid format" in body["badRequest"]["message"]
    # Sent empty (or beyond ASCII, which Granian hands over empty): not "no header".
    body = compute_api.admin("GET", "/v2.1/flavors", headers={
        "OpenStack-API-Version": ""}, expect=400).json()
    assert "empty or not ASCII" in body["badRequest"]["message"]
    too_new = f"2.{microversion.MAX_VERSION.minor + 1}"
    body = compute_api.admin("GET", "/v2.1/flavors", headers={
        "X-OpenStack-Nova-API-Version": too_new, "OpenStack-API-Version": None},
        expect=406).json()
    assert body["computeFault"]["message"] == (
        f"Version {too_new} is not supported by the API. Minimum is 2.1 and maximum is "
        f"{microversion.MAX_VERSION}.")
