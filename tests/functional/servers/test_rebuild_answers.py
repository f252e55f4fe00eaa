"""What a rebuild changes and answers, as nova's (Tempest's server action tests hold
Moorage to them), and the actions nova has where Moorage has no such concept: the
security groups kept as names, restore and forceDelete of a server never soft-deleted."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.functional.servers.conftest import Cloud, fake_host


@pytest.fixture
def cloud(make_cloud: Any) -> Cloud:
    cloud: Cloud = make_cloud([fake_host("h1", memory_mb=16384)])
    return cloud


def _booted(cloud: Cloud) -> dict[str, Any]:
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"),
                                 metadata={"old": "1"})
    assert server["status"] == "ACTIVE", server.get("fault")
    return server


def test_a_rebuild_applies_its_body_and_answers_the_new_image(cloud: Cloud) -> None:
    server = _booted(cloud)
    made = cloud.call("POST", "/os-keypairs", {"keypair": {"name": "k2"}}, version="2.57")
    assert made.status_code == 201, made.text
    new_image = cloud.image("other", "raw")
    user_data = base64.b64encode(b"#!/bin/sh\n").decode()
    answer = cloud.call("POST", f"/servers/{server['id']}/action", {"rebuild": {
        "imageRef": new_image, "name": "renamed", "metadata": {"new": "2"},
        "accessIPv6": "0000:0000:0000:0000:0000:babe:220.12.22.2", "key_name": "k2",
        "user_data": user_data, "description": "rebuilt", "adminPass": "s3cret"}},
        version="2.57")
    assert answer.status_code == 202, answer.text
    shown = answer.json()["server"]
    assert shown["image"]["id"] == new_image  # before the rebuild has run, as nova
    assert (shown["name"], shown["metadata"], shown["accessIPv6"]) == (
        "renamed", {"new": "2"}, "::babe:dc0c:1602")
    assert (shown["key_name"], shown["user_data"], shown["description"],
            shown["adminPass"]) == ("k2", user_data, "rebuilt", "s3cret")
    # nova's shorter body below 2.75: none of what GET adds.
    assert not {"OS-EXT-STS:vm_state", "security_groups", "OS-EXT-AZ:availability_zone",
                "OS-EXT-SRV-ATTR:host", "OS-EXT-SRV-ATTR:user_data"} & set(shown)
    rebuilt = cloud.wait(server["id"])
    assert (rebuilt["status"], rebuilt["image"]["id"], rebuilt["name"]) == (
        "ACTIVE", new_image, "renamed")
    # From 2.75 the answer is the whole server, its groups included.
    answer = cloud.call("POST", f"/servers/{server['id']}/action",
                        {"rebuild": {"imageRef": new_image}}, version="2.75")
    assert answer.status_code == 202, answer.text
    assert {"OS-EXT-STS:vm_state", "server_groups"} <= set(answer.json()["server"])
    assert "key_name" not in cloud.call(
        "PUT", f"/servers/{server['id']}", {"server": {"name": "n2"}},
        version="2.74").json()["server"]
    cloud.wait(server["id"])


def test_a_stopped_server_is_rebuilt_and_stays_stopped(cloud: Cloud) -> None:
    server = _booted(cloud)
    assert cloud.action(server["id"], {"os-stop": None}).status_code == 202
    assert cloud.wait(server["id"])["status"] == "SHUTOFF"
    new_image = cloud.image("other", "raw")
    answer = cloud.action(server["id"], {"rebuild": {"imageRef": new_image}})
    assert answer.status_code == 202, answer.text
    rebuilt = cloud.wait(server["id"])
    assert (rebuilt["status"], rebuilt["image"]["id"]) == ("SHUTOFF", new_image)
    driver = cloud.agents["h1"].agent.driver
    assert server["id"] in cloud.guests("h1") and not driver.running(server["id"])


def test_security_groups_are_names_the_actions_change(cloud: Cloud) -> None:
    server = _booted(cloud)
    assert cloud.show(server["id"])["security_groups"] == [{"name": "default"}]
    assert cloud.action(server["id"], {"addSecurityGroup": {"name": "web"}}
                        ).status_code == 202
    assert cloud.show(server["id"])["security_groups"] == [{"name": "default"},
                                                           {"name": "web"}]
    missing = cloud.action(server["id"], {"removeSecurityGroup": {"name": "db"}})
    assert missing.status_code == 404 and "db not associated" in missing.text
    for name in ("default", "web"):
        assert cloud.action(server["id"], {"removeSecurityGroup": {"name": name}}
                            ).status_code == 202
    assert "security_groups" not in cloud.show(server["id"])  # nova: no key for none
    blank = cloud.action(server["id"], {"addSecurityGroup": {"name": " "}})
    assert blank.status_code == 400, blank.text


def test_restore_and_force_delete_are_nova_s_409(cloud: Cloud) -> None:
    server = _booted(cloud)
    for action in ("restore", "forceDelete"):
        answer = cloud.action(server["id"], {action: None})
        assert answer.status_code == 409, answer.text
        assert f"Cannot '{action}' instance {server['id']} while it is in vm_state " \
               "active" in answer.json()["conflictingRequest"]["message"]
    assert cloud.show(server["id"])["status"] == "ACTIVE"


@pytest.mark.parametrize(("field", "value"), [
    ("metadata", "not-an-object"), ("name", 5), ("accessIPv4", "nope"),
    ("OS-DCF:diskConfig", "SOMETIMES"), ("key_name", ""), ("preserve_ephemeral", "maybe")])
def test_a_rebuild_body_nova_refuses_is_a_400_naming_the_field(
        cloud: Cloud, field: str, value: Any) -> None:
    server = _booted(cloud)
    answer = cloud.action(server["id"], {"rebuild": {
        "imageRef": server["image"]["id"], field: value}})
    assert answer.status_code == 400, answer.text
    assert field in answer.json()["badRequest"]["message"]
    assert cloud.show(server["id"])["status"] == "ACTIVE"  # nothing was started


def test_a_rebuild_s_metadata_counts_against_the_quota(cloud: Cloud) -> None:
    server = _booted(cloud)
    project = server["tenant_id"]
    cloud.ok("PUT", f"/os-quota-sets/{project}", {"quota_set": {"metadata_items": 1}})
    answer = cloud.action(server["id"], {"rebuild": {
        "imageRef": server["image"]["id"], "metadata": {"a": "1", "b": "2"}}})
    assert answer.status_code == 403, answer.text
    assert "metadata" in answer.json()["forbidden"]["message"].lower()
    assert cloud.show(server["id"])["metadata"] == {"old": "1"}
