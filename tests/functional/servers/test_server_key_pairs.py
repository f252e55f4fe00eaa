"""A server's key pair is one of its creator's own: a create naming a key pair the
caller does not have is refused as nova refuses it, before anything is stored."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.servers.conftest import Cloud, fake_host
from tests.keys import ED25519

ALICE = "alice:project1"  # noauth2: users of one project
BOB = "bob:project1"


@pytest.fixture
def cloud(make_cloud: Any) -> tuple[Cloud, str, str]:
    """A cloud with one host; alice has the key pair "alice-key"."""
    cloud: Cloud = make_cloud([fake_host("a")])
    flavor = cloud.flavor("small")
    image = cloud.image("cirros", "raw")
    made = cloud.call("POST", "/os-keypairs", {"keypair": {
        "name": "alice-key", "public_key": ED25519}}, token=ALICE)
    assert made.status_code == 201, made.text
    return cloud, flavor, image


def _boot(cloud: Cloud, flavor: str, image: str, token: str, key_name: str,
          version: str | None = None) -> Any:
    server = {"name": "vm", "flavorRef": flavor, "imageRef": image, "key_name": key_name}
    if version is None:  # the newest: networks are required (2.37)
        server["networks"] = "none"
    return cloud.call("POST", "/servers", {"server": server}, token=token, version=version)


@pytest.mark.parametrize(("token", "key_name", "version"), [
    (BOB, "alice-key", None),  # another user's, in the same project
    ("admin", "alice-key", None),  # an admin's server takes the admin's own
    (ALICE, "no-such-key", None),
    (BOB, "alice-key", "2.1"),  # at every version
])
def test_a_key_pair_the_caller_does_not_have_is_a_400(
        cloud: tuple[Cloud, str, str], token: str, key_name: str,
        version: str | None) -> None:
    api, flavor, image = cloud
    response = _boot(api, flavor, image, token, key_name, version)
    assert response.status_code == 400, response.text
    assert response.json()["badRequest"]["message"] == "Invalid key_name provided."
    servers = api.call("GET", "/servers?all_tenants=1").json()["servers"]
    assert servers == []


def test_the_callers_own_key_pair_is_taken_and_shown(cloud: tuple[Cloud, str, str]
                                                     ) -> None:
    api, flavor, image = cloud
    response = _boot(api, flavor, image, ALICE, "alice-key")
    assert response.status_code == 202, response.text
    server = api.wait(response.json()["server"]["id"])
    assert (server["status"], server["key_name"]) == ("ACTIVE", "alice-key")
