"""``[api] auth_strategy = keystone`` for real: placement and the compute API as
processes (``moorage placement serve``, ``moorage api serve``) with keystonemiddleware
in front, validating tokens against an identity endpoint the test runs
(``tests.identity``): no token and a bad token are 401, a member reaches the API as
its project and is held to the policy, an admin gets everything; the internal routes
still want the service token."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from moorage.api.launcher import ComputeApiProcess
from moorage.placement.launcher import PlacementProcess
from tests.identity import IdentityServer

pytest.importorskip("keystonemiddleware")

SERVICE_TOKEN = "keystone-test-service-token"
PLACEMENT_VERSION = {"OpenStack-API-Version": "placement 1.39"}


@dataclass
class KeystoneCloud:
    identity: IdentityServer
    placement: PlacementProcess
    api: ComputeApiProcess


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeystoneCloud]:
    workdir = tmp_path_factory.mktemp("keystone")
    identity = IdentityServer().start()
    keystone = {"api": {"auth_strategy": "keystone"},
                "keystone_authtoken": identity.authtoken_section()}
    placement = PlacementProcess(workdir / "placement", config=keystone)
    # The compute API reaches placement as a service user with a token of its own.
    api = ComputeApiProcess(workdir / "api", placement_url=placement.url, config={
        **keystone, "DEFAULT": {"service_token": SERVICE_TOKEN},
        "placement": {"token": identity.issue("nova", "service", "service")}})
    placement.launch()
    api.launch()
    try:
        placement.wait_ready()
        api.wait_ready()
        yield KeystoneCloud(identity, placement, api)
    finally:
        api.stop()
        placement.stop()
        identity.stop()


def _call(url: str, method: str, path: str, token: str | None, *, json: Any = None,
          headers: dict[str, str] | None = None) -> requests.Response:
    sent = {**({"X-Auth-Token": token} if token is not None else {}), **(headers or {})}
    return requests.request(method, url + path, json=json, headers=sent, timeout=60)


def test_placement_validates_tokens_with_keystone(cloud: KeystoneCloud) -> None:
    url, identity = cloud.placement.url, cloud.identity

    def get(token: str | None) -> requests.Response:
        return _call(url, "GET", "/resource_providers", token, headers=PLACEMENT_VERSION)

    assert get(None).status_code == 401
    assert "www-authenticate" in {k.lower() for k in get(None).headers}
    before = identity.validations()
    assert get("not-a-token").status_code == 401
    assert identity.validations() > before, "the bad token was not asked about"
    member = get(identity.issue("alice", "project-a", "member", "reader"))
    assert member.status_code == 403, member.text
    assert "placement:resource_providers:list" in member.text
    admin = identity.issue("root", "admin-project", "admin")
    assert get(admin).status_code == 200
    created = _call(url, "POST", "/resource_providers", admin, json={"name": "kvm1"},
                    headers=PLACEMENT_VERSION)
    assert created.status_code == 200, created.text
    listed = get(identity.issue("nova", "service", "service")).json()
    assert [p["name"] for p in listed["resource_providers"]] == ["kvm1"]
    # The version document stays public.
    assert _call(url, "GET", "/", None).status_code == 200


def test_the_compute_api_sees_each_token_as_its_project(cloud: KeystoneCloud) -> None:
    url, identity = cloud.api.url, cloud.identity
    assert _call(url, "GET", "/v2.1/servers", None).status_code == 401
    assert _call(url, "GET", "/v2.1/servers", "forged").status_code == 401
    alice = identity.issue("alice", "project-a", "member", "reader")
    bob = identity.issue("bob", "project-b", "member", "reader")
    admin = identity.issue("root", "admin-project", "admin")

    flavor = {"flavor": {"name": "small", "vcpus": 1, "ram": 512, "disk": 1}}
    refused = _call(url, "POST", "/v2.1/flavors", alice, json=flavor)
    assert refused.status_code == 403, refused.text
    flavor_id = _call(url, "POST", "/v2.1/flavors", admin, json=flavor).json()["flavor"]["id"]
    image = _call(url, "POST", "/v2.1/images", alice, json={
        "name": "alices", "disk_format": "raw", "container_format": "bare"}).json()
    assert image["owner"] == "project-a"
    booted = _call(url, "POST", "/v2.1/servers", alice, json={"server": {
        "name": "mine", "flavorRef": flavor_id, "imageRef": image["id"]}})
    assert booted.status_code == 202, booted.text
    server = booted.json()["server"]["id"]

    def listed(token: str, query: str = "") -> list[str]:
        answer = _call(url, "GET", "/v2.1/servers" + query, token)
        assert answer.status_code == 200, answer.text
        return [s["id"] for s in answer.json()["servers"]]

    assert listed(alice) == [server]
    assert listed(bob) == []
    assert _call(url, "GET", f"/v2.1/servers/{server}", bob).status_code == 404
    shown = _call(url, "GET", f"/v2.1/servers/{server}", alice).json()["server"]
    assert (shown["tenant_id"], shown["user_id"]) == ("project-a", "alice")
    assert listed(admin, "?all_tenants=1") == [server]
    assert _call(url, "GET", "/v2.1/os-services", alice).status_code == 403
    assert _call(url, "GET", "/v2.1/os-services", admin).status_code == 200


def test_the_internal_routes_want_the_service_token_not_a_user_token(
        cloud: KeystoneCloud) -> None:
    url, identity = cloud.api.url, cloud.identity
    beat = {"driver": "fake", "nodes": ["h1"], "agent_url": "http://127.0.0.1:9"}
    admin = identity.issue("root", "admin-project", "admin")
    for token in (None, admin):
        refused = _call(url, "PUT", "/internal/services/h1", token, json=beat)
        assert refused.status_code == 401, refused.text
        assert "[DEFAULT] service_token" in refused.json()["unauthorized"]["message"]
    accepted = _call(url, "PUT", "/internal/services/h1", None, json=beat,
                     headers={"X-Service-Token": SERVICE_TOKEN})
    assert accepted.status_code == 200, accepted.text
    hosts = _call(url, "GET", "/v2.1/os-services", admin).json()["services"]
    assert [s["host"] for s in hosts] == ["h1"]


def test_the_identity_endpoint_was_really_asked(cloud: KeystoneCloud) -> None:
    """Both services authenticated as the service user and validated users' tokens
    here (not a shortcut in the services)."""
    asked = set(cloud.identity.requests)
    assert ("POST", "/v3/auth/tokens") in asked
    assert ("GET", "/v3/auth/tokens") in asked
