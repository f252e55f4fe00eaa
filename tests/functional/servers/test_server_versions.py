"""A server's body, and the bodies a create or update takes, microversion by
microversion: each gate of moorage.api.microversion that concerns servers changes the
answer exactly at its version, and Moorage's additions appear only when asked for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from moorage.api import microversion as mv
from tests.functional.servers.conftest import Cloud, fake_host
from tests.keys import ED25519

USER = "user1:project1"  # noauth2: a member of project1
HINTS = {"same_host": [], "query": "[\">=\", \"$free_ram_mb\", 1]"}
CERTIFICATE = "0b5d2c72-12cc-4ba6-a8d7-3ff5cc1d8cb8"


@pytest.fixture
def booted(make_cloud: Any) -> tuple[Cloud, str, str]:
    """A cloud, and one user's server booted with every descriptive field, ACTIVE."""
    cloud: Cloud = make_cloud([fake_host("a")])
    flavor = cloud.flavor("small", extra_specs={"hw:cpu_policy": "shared"})
    image = cloud.image("cirros", "raw", properties={"hw_disk_bus": "virtio"})
    keypair = cloud.call("POST", "/os-keypairs", {"keypair": {
        "name": "mykey", "public_key": ED25519}}, token=USER)
    assert keypair.status_code == 201, keypair.text
    response = cloud.call("POST", "/servers", {
        "server": {"name": "Web Server_1", "flavorRef": flavor, "imageRef": image,
                   "networks": "none", "description": "the front", "tags": ["web", "blue"],
                   "metadata": {"owner": "ops"}, "key_name": "mykey",
                   "accessIPv4": "192.0.2.10", "OS-DCF:diskConfig": "AUTO",
                   "trusted_image_certificates": [CERTIFICATE],
                   "user_data": "IyEvYmluL3NoCg=="},
        "os:scheduler_hints": HINTS}, token=USER)
    assert response.status_code == 202, response.text
    server = response.json()["server"]
    assert server["OS-DCF:diskConfig"] == "AUTO"
    assert server["security_groups"] == [{"name": "default"}]
    assert server["adminPass"]
    assert cloud.wait(server["id"])["status"] == "ACTIVE"
    return cloud, server["id"], flavor


def _show(cloud: Cloud, uuid: str, version: str, token: str | None = None
          ) -> dict[str, Any]:
    response = cloud.call("GET", f"/servers/{uuid}", token=token, version=version)
    assert response.status_code == 200, response.text
    assert response.headers["OpenStack-API-Version"] == f"compute {version}"
    return dict(response.json()["server"])


Check = Callable[[dict[str, Any]], Any]

# gate -> (token: None is the admin, what the body shows before, and from, the gate)
GATES: list[tuple[mv.Gate, str | None, Check]] = [
    (mv.SERVER_EXTENDED_ATTRIBUTES, None,
     lambda s: (s.get("OS-EXT-SRV-ATTR:hostname"), s.get("OS-EXT-SRV-ATTR:user_data"))),
    (mv.SERVER_LOCKED, USER, lambda s: s.get("locked", "absent")),
    (mv.SERVER_HOST_STATUS, None, lambda s: s.get("host_status", "absent")),
    (mv.SERVER_DESCRIPTION, USER, lambda s: s.get("description", "absent")),
    (mv.SERVER_TAGS, USER, lambda s: s.get("tags", "absent")),
    (mv.SERVER_FLAVOR_EMBEDDED, USER, lambda s: sorted(s["flavor"])),
    (mv.SERVER_TRUSTED_CERTS, USER, lambda s: s.get("trusted_image_certificates", "absent")),
    (mv.SERVER_GROUPS_SHOWN, USER, lambda s: s.get("server_groups", "absent")),
    (mv.SERVER_LOCKED_REASON, USER, lambda s: "locked_reason" in s),
    (mv.SERVER_HOSTNAME, USER, lambda s: s.get("OS-EXT-SRV-ATTR:hostname", "absent")),
    (mv.SERVER_PINNED_ZONE, USER, lambda s: "pinned_availability_zone" in s),
    (mv.SERVER_IMAGE_PROPERTIES, USER, lambda s: s["image"].get("properties", "absent")),
    (mv.SERVER_SCHEDULER_HINTS, USER, lambda s: s.get("scheduler_hints", "absent")),
]
EXPECTED: dict[mv.Gate, tuple[Any, Any]] = {
    mv.SERVER_EXTENDED_ATTRIBUTES: ((None, None), ("web-server-1", "IyEvYmluL3NoCg==")),
    mv.SERVER_LOCKED: ("absent", False),
    mv.SERVER_HOST_STATUS: ("absent", "UP"),
    mv.SERVER_DESCRIPTION: ("absent", "the front"),
    mv.SERVER_TAGS: ("absent", ["web", "blue"]),
    mv.SERVER_FLAVOR_EMBEDDED: (["id", "links"], ["disk", "ephemeral", "extra_specs",
                                                  "original_name", "ram", "swap", "vcpus"]),
    mv.SERVER_TRUSTED_CERTS: ("absent", [CERTIFICATE]),
    mv.SERVER_GROUPS_SHOWN: ("absent", []),
    mv.SERVER_LOCKED_REASON: (False, True),
    mv.SERVER_HOSTNAME: ("absent", "web-server-1"),
    mv.SERVER_PINNED_ZONE: (False, True),
    mv.SERVER_IMAGE_PROPERTIES: ("absent", {"hw_disk_bus": "virtio"}),
    mv.SERVER_SCHEDULER_HINTS: ("absent", HINTS),
}


def test_each_server_gate_changes_the_body_at_its_version(
        booted: tuple[Cloud, str, str]) -> None:
    cloud, uuid, _ = booted
    for gate, token, check in GATES:  # one server for the table: a boot per case is slow
        before = mv.Version(gate.version.major, gate.version.minor - 1)
        expected_before, expected_from = EXPECTED[gate]
        assert check(_show(cloud, uuid, str(before), token)) == expected_before, gate
        assert check(_show(cloud, uuid, str(gate.version), token)) == expected_from, gate


def test_the_table_covers_every_gate_of_the_server_body() -> None:
    shown = {gate for gate, _, _ in GATES}
    body_only = {mv.SERVER_NETWORKS_REQUIRED, mv.SERVER_CREATE_TAGS, mv.SERVER_NO_PERSONALITY,
                 mv.SERVER_CREATE_HOST, mv.SERVER_HOSTNAME_FQDN, mv.SERVER_CONSISTENT_BODIES,
                 # the rebuild's body and answer (tests/functional/servers/
                 # test_rebuild_answers.py), not the shown server's
                 mv.REBUILD_KEY_NAME, mv.REBUILD_USER_DATA}
    servers = {gate for gate in mv.GATES if gate.resource == "servers"}
    assert servers - body_only == shown


def test_the_2_1_body_is_nova_s(booted: tuple[Cloud, str, str]) -> None:
    cloud, uuid, flavor = booted
    server = _show(cloud, uuid, "2.1", USER)
    assert server["flavor"]["id"] == flavor
    assert server["metadata"] == {"owner": "ops"}
    assert (server["key_name"], server["accessIPv4"], server["accessIPv6"]) == (
        "mykey", "192.0.2.10", "")
    assert server["OS-DCF:diskConfig"] == "AUTO"
    assert server["OS-EXT-STS:vm_state"] == "active"
    assert server["OS-EXT-STS:power_state"] == 1
    assert len(server["hostId"]) == 56  # a hash, not the host's name
    assert "OS-EXT-SRV-ATTR:host" not in server  # a user's view
    assert "moorage:scheduling" not in server
    admin = _show(cloud, uuid, "2.1")
    assert admin["OS-EXT-SRV-ATTR:host"] == "a"
    assert admin["hostId"] == server["hostId"]


def test_moorage_additions_only_when_asked(booted: tuple[Cloud, str, str]) -> None:
    cloud, uuid, _ = booted
    plain = cloud.call("GET", f"/servers/{uuid}", version=str(mv.MAX_VERSION)).json()
    assert "moorage:scheduling" not in plain["server"]
    asked = cloud.call("GET", f"/servers/{uuid}").json()  # the cloud's client asks
    assert asked["server"]["moorage:scheduling"]["attempts"][0]["host"] == "a"
    listed = cloud.call("GET", "/servers/detail?all_tenants=1",
                        version="2.1").json()["servers"]
    assert listed and all("moorage:scheduling" not in s for s in listed)


@pytest.mark.parametrize(("version", "field", "value"), [
    ("2.18", "description", "x"),
    ("2.51", "tags", ["a"]),
    ("2.62", "trusted_image_certificates", [CERTIFICATE]),
    ("2.73", "host", "a"),
    ("2.89", "hostname", "web"),
    ("2.57", "personality", [{"path": "/etc/motd", "contents": "aGk="}]),
    ("2.90", "hostname", "web.example.org"),  # a name with dots only from 2.94
])
def test_a_field_the_version_does_not_take_is_400_naming_it(
        booted: tuple[Cloud, str, str], version: str, field: str, value: Any) -> None:
    cloud, _, flavor = booted
    body = {"name": "vm", "flavorRef": flavor, "imageRef": "", field: value}
    if mv.Version.of(version) >= mv.SERVER_NETWORKS_REQUIRED.version:
        body["networks"] = "none"
    response = cloud.call("POST", "/servers", {"server": body}, version=version)
    assert response.status_code == 400, response.text
    assert field in response.json()["badRequest"]["message"]


def test_networks_are_required_from_2_37(booted: tuple[Cloud, str, str]) -> None:
    cloud, _, flavor = booted
    body = {"server": {"name": "vm", "flavorRef": flavor, "imageRef": "nope"}}
    refused = cloud.call("POST", "/servers", body, version="2.37")
    assert refused.status_code == 400
    assert "'networks' is a required property" in refused.json()["badRequest"]["message"]
    # Before 2.37 the body passes the schema (and is refused for its image only).
    older = cloud.call("POST", "/servers", body, version="2.36")
    assert older.json()["badRequest"]["message"] == "Image nope could not be found."


def test_bad_user_data_and_reservation_ids(booted: tuple[Cloud, str, str]) -> None:
    cloud, _, flavor = booted
    image = cloud.image("plain", "raw")
    body = {"name": "vm", "flavorRef": flavor, "imageRef": image, "networks": "none"}
    refused = cloud.call("POST", "/servers", {"server": {**body, "user_data": "not base64!"}})
    assert "user_data must be base64" in refused.json()["badRequest"]["message"]
    answered = cloud.call("POST", "/servers", {"server": {
        **body, "return_reservation_id": True}})
    assert answered.status_code == 202, answered.text
    reservation = answered.json()["reservation_id"]
    assert reservation.startswith("r-")
    found = [s for s in cloud.ok("GET", "/servers/detail")["servers"]
             if s.get("OS-EXT-SRV-ATTR:reservation_id") == reservation]
    assert len(found) == 1
    cloud.wait(found[0]["id"])


def test_update_renames_and_describes_as_the_version_allows(
        booted: tuple[Cloud, str, str]) -> None:
    cloud, _, flavor = booted
    image = cloud.image("updated", "raw")
    uuid = cloud.boot(flavor, image, name="before")
    cloud.wait(uuid)
    refused = cloud.call("PUT", f"/servers/{uuid}", {"server": {"description": "d"}},
                         version="2.18")
    assert refused.status_code == 400
    assert "description" in refused.json()["badRequest"]["message"]
    answer = cloud.call("PUT", f"/servers/{uuid}", {"server": {
        "name": "after", "description": "d", "accessIPv6": "2001:db8::1"}}, version="2.19")
    assert answer.status_code == 200, answer.text
    server = answer.json()["server"]
    assert (server["name"], server["description"], server["accessIPv6"]) == (
        "after", "d", "2001:db8::1")
    assert "server_groups" not in server  # the whole (shown) server only from 2.75
    later = cloud.call("PUT", f"/servers/{uuid}", {"server": {"hostname": "renamed"}},
                       version="2.90").json()["server"]
    assert later["OS-EXT-SRV-ATTR:hostname"] == "renamed"
    assert later["server_groups"] == []
    assert _show(cloud, uuid, "2.90")["name"] == "after"
    bad = cloud.call("PUT", f"/servers/{uuid}", {"server": {"accessIPv4": "not-an-ip"}})
    assert bad.status_code == 400
    assert "accessIPv4" in bad.json()["badRequest"]["message"]
    assert cloud.call("PUT", f"/servers/{uuid}", {"server": {"name": "x"}},
                      token="other:project2").status_code == 404


def test_zone_colon_host_forces_a_host_for_admins_only(
        booted: tuple[Cloud, str, str]) -> None:
    cloud, _, flavor = booted
    image = cloud.image("forced", "raw")
    body = {"name": "vm", "flavorRef": flavor, "imageRef": image, "networks": "none",
            "availability_zone": ":a"}
    denied = cloud.call("POST", "/servers", {"server": body}, token=USER)
    assert denied.status_code == 403, denied.text
    missing = cloud.call("POST", "/servers", {"server": {**body, "availability_zone": ":b"}})
    assert "Compute host b could not be found." in missing.json()["badRequest"]["message"]
    forced = cloud.call("POST", "/servers", {"server": body})
    assert forced.status_code == 202, forced.text
    assert cloud.wait(forced.json()["server"]["id"])["OS-EXT-SRV-ATTR:host"] == "a"
