"""``[api] auth_strategy = keystone`` for real: placement and the compute API as
processes (``moorage placement serve``, ``moorage api serve``) with keystonemiddleware
in front, validating tokens against a real Keystone (``tests.keystone_fixtures``):
each service authenticates as its own service user; no token, a forged one and a
revoked one are 401; a token is its user's project and roles, held to nova's
persona defaults (a reader reads, a member acts, another project sees nothing, the
admin sees all); the internal routes still want the service token; and the real
``openstack`` CLI logs in to Keystone and finds both services in the catalog."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from moorage.api.launcher import ComputeApiProcess
from moorage.placement.launcher import PlacementProcess
from tests.keystone_cloud import KeystoneServices, openstack
from tests.keystone_fixtures import Keystone, Project, User

SERVICE_TOKEN = "keystone-test-service-token"
PLACEMENT_VERSION = {"OpenStack-API-Version": "placement 1.39"}


@dataclass
class KeystoneCloud:
    keystone: Keystone
    placement: PlacementProcess
    api: ComputeApiProcess
    project_a: Project
    project_b: Project
    reader: User       # project-a's
    member: User       # project-a's
    stranger: User     # a member of project-b
    admin: User        # the admin project's

    def token(self, user: User) -> str:
        return self.keystone.token(user)


@pytest.fixture(scope="module")
def cloud(keystone: Keystone,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeystoneCloud]:
    services = KeystoneServices.launch(keystone, tmp_path_factory.mktemp("keystone-cloud"),
                                       service_token=SERVICE_TOKEN)
    try:
        project_a, project_b = keystone.create_project("a"), keystone.create_project("b")
        admin = keystone.create_user("root", keystone.project("admin"), "admin")
        users = dict(reader=keystone.create_user("rita", project_a, "reader"),
                     member=keystone.create_user("alice", project_a, "member"),
                     stranger=keystone.create_user("bob", project_b, "member"))
        yield KeystoneCloud(keystone, services.placement, services.api, project_a,
                            project_b, admin=admin, **users)
    finally:
        services.stop()


def _call(url: str, method: str, path: str, token: str | None, *, json: Any = None,
          headers: dict[str, str] | None = None) -> requests.Response:
    sent = {**({"X-Auth-Token": token} if token is not None else {}), **(headers or {})}
    return requests.request(method, url + path, json=json, headers=sent, timeout=60)


def test_placement_validates_tokens_with_keystone(cloud: KeystoneCloud) -> None:
    url, keystone = cloud.placement.url, cloud.keystone

    def get(token: str | None) -> requests.Response:
        return _call(url, "GET", "/resource_providers", token, headers=PLACEMENT_VERSION)

    refused = get(None)
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == f'Keystone uri="{keystone.v3}"'
    assert get("gAAAAAforged").status_code == 401
    member = get(cloud.token(cloud.member))
    assert member.status_code == 403, member.text
    assert "placement:resource_providers:list" in member.text
    admin = cloud.token(cloud.admin)
    assert get(admin).status_code == 200
    created = _call(url, "POST", "/resource_providers", admin, json={"name": "kvm1"},
                    headers=PLACEMENT_VERSION)
    assert created.status_code == 200, created.text
    listed = get(cloud.token(keystone.service_user("scheduler"))).json()
    assert "kvm1" in [p["name"] for p in listed["resource_providers"]]
    # The version document stays public.
    assert _call(url, "GET", "/", None).status_code == 200


def test_a_revoked_token_is_refused_at_once(cloud: KeystoneCloud) -> None:
    """The services ask Keystone about each token: one Keystone revoked is refused
    by both, the next request after."""
    token = cloud.token(cloud.member)
    assert _call(cloud.api.url, "GET", "/v2.1/servers", token).status_code == 200
    revoked = requests.delete(f"{cloud.keystone.v3}/auth/tokens", timeout=60, headers={
        "X-Auth-Token": token, "X-Subject-Token": token})
    assert revoked.status_code == 204, revoked.text
    assert _call(cloud.api.url, "GET", "/v2.1/servers", token).status_code == 401
    assert _call(cloud.placement.url, "GET", "/usages?project_id=x", token,
                 headers=PLACEMENT_VERSION).status_code == 401


def _flavor(cloud: KeystoneCloud, name: str) -> str:
    """A flavor the admin made (members may not)."""
    flavor = {"flavor": {"name": name, "vcpus": 1, "ram": 512, "disk": 1}}
    made = _call(cloud.api.url, "POST", "/v2.1/flavors", cloud.token(cloud.admin),
                 json=flavor)
    assert made.status_code == 200, made.text
    return str(made.json()["flavor"]["id"])


def _create_body(cloud: KeystoneCloud, token: str, name: str) -> dict[str, Any]:
    """What boots a server in ``token``'s project: a new flavor, an image of its own."""
    image = _call(cloud.api.url, "POST", "/v2.1/images", token, json={
        "name": name, "disk_format": "raw", "container_format": "bare"}).json()
    return {"server": {"name": name, "flavorRef": _flavor(cloud, name),
                       "imageRef": image["id"]}}


def test_the_compute_api_holds_each_persona_to_novas_defaults(
        cloud: KeystoneCloud) -> None:
    url = cloud.api.url
    assert _call(url, "GET", "/v2.1/servers", None).status_code == 401
    assert _call(url, "GET", "/v2.1/servers", "forged").status_code == 401
    reader, member = cloud.token(cloud.reader), cloud.token(cloud.member)
    stranger, admin = cloud.token(cloud.stranger), cloud.token(cloud.admin)

    flavor = {"flavor": {"name": "small", "vcpus": 1, "ram": 512, "disk": 1}}
    refused = _call(url, "POST", "/v2.1/flavors", member, json=flavor)
    assert refused.status_code == 403, refused.text
    create = _create_body(cloud, member, "mine")

    # A reader reads, and only reads.
    as_reader = _call(url, "POST", "/v2.1/servers", reader, json=create)
    assert as_reader.status_code == 403, as_reader.text
    assert "os_compute_api:servers:create" in as_reader.text
    booted = _call(url, "POST", "/v2.1/servers", member, json=create)
    assert booted.status_code == 202, booted.text
    server = booted.json()["server"]["id"]

    def listed(token: str, query: str = "") -> list[str]:
        answer = _call(url, "GET", "/v2.1/servers" + query, token)
        assert answer.status_code == 200, answer.text
        return [s["id"] for s in answer.json()["servers"]]

    assert listed(reader) == [server]
    shown = _call(url, "GET", f"/v2.1/servers/{server}", reader)
    assert shown.status_code == 200, shown.text
    assert (shown.json()["server"]["tenant_id"], shown.json()["server"]["user_id"]) == (
        cloud.project_a.id, cloud.member.id)
    renamed = {"server": {"name": "renamed"}}
    path = f"/v2.1/servers/{server}"
    assert _call(url, "PUT", path, reader, json=renamed).status_code == 403
    assert _call(url, "PUT", path, member, json=renamed).status_code == 200
    assert _call(url, "GET", path, reader).json()["server"]["name"] == "renamed"
    assert _call(url, "DELETE", path, reader).status_code == 403

    # Another project's member sees nothing of it.
    assert listed(stranger) == []
    assert _call(url, "GET", f"/v2.1/servers/{server}", stranger).status_code == 404
    assert _call(url, "GET", "/v2.1/servers?all_tenants=1", stranger).status_code == 403

    # The admin sees every project's, and alone administers.
    assert server in listed(admin, "?all_tenants=1")
    assert _call(url, "GET", "/v2.1/os-services", member).status_code == 403
    assert _call(url, "GET", "/v2.1/os-services", admin).status_code == 200


def test_the_internal_routes_want_the_service_token_not_a_user_token(
        cloud: KeystoneCloud) -> None:
    url = cloud.api.url
    beat = {"driver": "fake", "nodes": ["h1"], "agent_url": "http://127.0.0.1:9"}
    admin = cloud.token(cloud.admin)
    for token in (None, admin):
        refused = _call(url, "PUT", "/internal/services/h1", token, json=beat)
        assert refused.status_code == 401, refused.text
        assert "[DEFAULT] service_token" in refused.json()["unauthorized"]["message"]
    accepted = _call(url, "PUT", "/internal/services/h1", None, json=beat,
                     headers={"X-Service-Token": SERVICE_TOKEN})
    assert accepted.status_code == 200, accepted.text
    hosts = _call(url, "GET", "/v2.1/os-services", admin).json()["services"]
    assert [s["host"] for s in hosts] == ["h1"]


def _openstack(cloud: KeystoneCloud, user: User, *args: str) -> Any:
    return openstack(cloud.keystone, user, *args)


def test_the_openstack_cli_logs_in_and_finds_moorage_in_the_catalog(
        cloud: KeystoneCloud) -> None:
    member = cloud.token(cloud.member)
    create = _create_body(cloud, member, "cli")
    booted = _call(cloud.api.url, "POST", "/v2.1/servers", member, json=create)
    assert booted.status_code == 202, booted.text

    flavors = _openstack(cloud, cloud.reader, "flavor", "list")
    assert create["server"]["flavorRef"] in [f["ID"] for f in flavors]
    servers = _openstack(cloud, cloud.member, "server", "list")
    assert booted.json()["server"]["id"] in [s["ID"] for s in servers]
    ours = _call(cloud.api.url, "GET", "/v2.1/servers", member).json()["servers"]
    assert sorted(s["ID"] for s in servers) == sorted(s["id"] for s in ours)

    admin = cloud.token(cloud.admin)
    _call(cloud.placement.url, "POST", "/resource_providers", admin,
          json={"name": "cli-provider"}, headers=PLACEMENT_VERSION)
    providers = _openstack(cloud, cloud.admin, "resource", "provider", "list")
    assert "cli-provider" in [p["name"] for p in providers]
