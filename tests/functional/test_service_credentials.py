"""Moorage's services reach placement as nova does: keystoneauth1 with a service user's
password (``[placement] auth_type = password``...), placement's endpoint from Keystone's
catalog, and tokens renewed before they expire, against a real Keystone
(``tests.keystone_fixtures``) whose tokens live TOKEN_LIFE seconds.

Placement and the compute API run as processes behind keystonemiddleware
(``tests.keystone_cloud``); a fake-driver compute agent (``moorage compute run``)
authenticates to placement with its own service user. A server boots before the
tokens the services started with expire and another after: the second needs the
renewed ones. In this process, a client's first token is shown to be refused once
expired while the client carries on, a revoked token is replaced at the 401, the
credentials that cannot work are one line each, and a compute host's image client
(``[glance] auth_type = password``) reads an image across its token's expiry.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from moorage.api.launcher import AgentProcess
from moorage.conf import load_config
from moorage.placement.client import PlacementClient, PlacementError
from moorage.placement.launcher import free_port
from moorage.virt.image_service import ImageService
from tests.keystone_cloud import KeystoneServices
from tests.keystone_fixtures import Keystone, User, running_keystone

# Short enough that a test outlives several; long enough that a boot does not.
TOKEN_LIFE = 12
SERVICE_TOKEN = "credentials-test-service-token"
PLACEMENT_VERSION = {"OpenStack-API-Version": "placement 1.39"}


@pytest.fixture(scope="module")
def short_keystone(keystone_template: Path,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keystone]:
    with running_keystone(keystone_template, tmp_path_factory.mktemp("keystone-short"),
                          token_expiration=TOKEN_LIFE) as server:
        yield server


@dataclass
class Cloud:
    keystone: Keystone
    services: KeystoneServices
    agent: AgentProcess
    admin: User
    scheduler: User  # a service user the tests' own clients log in as


@pytest.fixture(scope="module")
def cloud(short_keystone: Keystone,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    workdir = tmp_path_factory.mktemp("credentials-cloud")
    services = KeystoneServices.launch(short_keystone, workdir, service_token=SERVICE_TOKEN)
    try:
        agent = AgentProcess(workdir / "agent", "kvm-1", placement_url=services.placement.url,
                             api_url=services.api.url, config={
                                 "DEFAULT": {"service_token": SERVICE_TOKEN},
                                 "placement": short_keystone.keystoneauth_section(
                                     short_keystone.service_user("compute"))})
        with agent:
            admin = short_keystone.create_user("ops", short_keystone.project("admin"),
                                               "admin")
            yield Cloud(short_keystone, services, agent, admin,
                        short_keystone.service_user("scheduler"))
    finally:
        services.stop()


def _client(keystone: Keystone, user: User, **options: object) -> PlacementClient:
    section = {**keystone.keystoneauth_section(user), **options}
    conf = load_config([], [("placement", name, value) for name, value in section.items()])
    return PlacementClient.from_conf(conf)


def _token(client: PlacementClient) -> str:
    return client.credentials.headers()["x-auth-token"]


def test_a_client_finds_placement_in_the_catalog_and_renews_its_token(cloud: Cloud) -> None:
    client = _client(cloud.keystone, cloud.scheduler)
    assert client.url == cloud.services.placement.url
    seen: dict[str, float] = {}  # each token the client sent, and when first
    deadline = time.monotonic() + TOKEN_LIFE * 1.5
    while time.monotonic() < deadline:
        client.providers()
        seen.setdefault(_token(client), time.monotonic())
        time.sleep(0.5)
    tokens, first_use = list(seen), list(seen.values())
    assert len(tokens) >= 2, tokens
    # Replaced before it expired (when a third of its life was left), not after a 401.
    assert first_use[1] - first_use[0] < TOKEN_LIFE - 2, first_use
    # The first one really expired: placement refuses it now; the client never sent it
    # that late.
    expired = requests.get(f"{cloud.services.placement.url}/resource_providers",
                           headers={"X-Auth-Token": tokens[0], **PLACEMENT_VERSION},
                           timeout=60)
    assert expired.status_code == 401, expired.text


def test_a_revoked_token_is_replaced_when_placement_refuses_it(cloud: Cloud) -> None:
    client = _client(cloud.keystone, cloud.scheduler)
    client.providers()
    token = _token(client)
    revoked = requests.delete(f"{cloud.keystone.v3}/auth/tokens", timeout=60, headers={
        "X-Auth-Token": token, "X-Subject-Token": token})
    assert revoked.status_code == 204, revoked.text
    client.providers()  # a 401, a new token, and the request once more
    assert _token(client) != token


def test_credentials_that_cannot_work_are_one_line_each(cloud: Cloud) -> None:
    keystone, user = cloud.keystone, cloud.scheduler
    cases: list[tuple[dict[str, Any], str]] = [
        ({"password": "wrong"},
         f"[placement] could not get a token from {keystone.v3}: the credentials were "
         "refused (401)"),
        ({"region_name": "Elsewhere"},
         "[placement]: Keystone's catalog has no endpoint of service type 'placement' "
         "with interface internal or public in region 'Elsewhere'"),
        ({"auth_url": f"http://127.0.0.1:{free_port()}/v3"},
         "[placement] could not get a token from http://127.0.0.1:"),
    ]
    for options, expected in cases:
        with pytest.raises(PlacementError) as raised:
            _client(keystone, user, **options).providers()
        message = str(raised.value)
        assert message.startswith(expected), (options, message)
        assert "\n" not in message


def _admin(cloud: Cloud) -> dict[str, str]:
    return {"X-Auth-Token": cloud.keystone.token(cloud.admin)}


def _boot(cloud: Cloud, flavor: str, image: str, name: str) -> dict[str, Any]:
    api = f"{cloud.services.api.url}/v2.1"
    made = requests.post(f"{api}/servers", headers=_admin(cloud), timeout=60, json={
        "server": {"name": name, "flavorRef": flavor, "imageRef": image}})
    assert made.status_code == 202, made.text
    uuid = made.json()["server"]["id"]
    deadline = time.monotonic() + 60
    while True:
        server: dict[str, Any] = requests.get(f"{api}/servers/{uuid}", headers=_admin(cloud),
                                              timeout=60).json()["server"]
        if server["status"] != "BUILD" or time.monotonic() > deadline:
            return server
        time.sleep(0.2)


def test_the_services_boot_across_the_expiry_of_their_first_tokens(cloud: Cloud) -> None:
    """The compute API (scheduler and claims) and the agent (inventory, traits) each
    reach placement with keystoneauth1: a boot after their first tokens expired needs
    the renewed ones."""
    api = f"{cloud.services.api.url}/v2.1"
    deadline = time.monotonic() + 60
    while "kvm-1" not in [s["host"] for s in requests.get(
            f"{api}/os-services", headers=_admin(cloud), timeout=60).json()["services"]]:
        assert time.monotonic() < deadline, "the agent never registered"
        time.sleep(0.2)
    flavor = requests.post(f"{api}/flavors", headers=_admin(cloud), timeout=60, json={
        "flavor": {"name": "small", "vcpus": 1, "ram": 256, "disk": 1}}).json()["flavor"]
    image = requests.post(f"{api}/images", headers=_admin(cloud), timeout=60, json={
        "name": "img", "disk_format": "raw", "container_format": "bare"}).json()
    before = _boot(cloud, flavor["id"], image["id"], "before")
    assert before["status"] == "ACTIVE", before.get("fault")
    time.sleep(TOKEN_LIFE + 2)  # every token the services held then has expired
    after = _boot(cloud, flavor["id"], image["id"], "after")
    assert after["status"] == "ACTIVE", after.get("fault")
    assert after["OS-EXT-SRV-ATTR:host"] == "kvm-1"
    for server in (before, after):
        gone = requests.delete(f"{api}/servers/{server['id']}", headers=_admin(cloud),
                               timeout=60)
        assert gone.status_code == 204, gone.text


def test_a_host_reads_images_with_a_keystone_token_it_renews(cloud: Cloud) -> None:
    """[glance] auth_type = password: the compute host's image client finds the image
    service in the catalog and reads a record and its data with a token of its own,
    before and after that token's life."""
    api, admin = cloud.services.api.url, _admin(cloud)
    made = requests.post(f"{api}/image/v2/images", headers=admin, timeout=60, json={
        "name": "public", "disk_format": "raw", "container_format": "bare",
        "visibility": "public"}).json()
    data = b"\0" * 4096
    uploaded = requests.put(f"{api}/image/v2/images/{made['id']}/file", data=data, timeout=60,
                            headers={**admin, "Content-Type": "application/octet-stream"})
    assert uploaded.status_code == 204, uploaded.text
    section = cloud.keystone.keystoneauth_section(cloud.keystone.service_user("glance-reader"))
    conf = load_config([], [("glance", name, value) for name, value in section.items()])
    service = ImageService.of(conf)
    assert service is not None and service.servers[0].url == f"{api}/image"
    assert service.record(made["id"]).size == len(data)
    time.sleep(TOKEN_LIFE + 1)  # the first token has expired
    received = bytearray()
    service.download(made["id"], received.extend, received.clear)
    assert bytes(received) == data
