"""os-quota-sets, os-quota-class-sets and /limits over HTTP: nova's bodies at each
microversion, updates within nova's bounds, policy."""

from __future__ import annotations

from typing import Any

import pytest

from moorage.api import microversion as mv
from tests.api_fixtures import ComputeApi, just_before, version
from tests.keys import ED25519

PROJECT = "p1"
MEMBER = "alice:p1"
OTHER = "bob:p2"

NETWORK = {"fixed_ips", "floating_ips", "security_groups", "security_group_rules"}
INJECTED = {"injected_files", "injected_file_content_bytes", "injected_file_path_bytes"}
NOW = {"cores", "instances", "key_pairs", "metadata_items", "ram", "server_groups",
       "server_group_members"}
NOVA_DEFAULTS = {"cores": 20, "instances": 10, "key_pairs": 100, "metadata_items": 128,
                 "ram": 51200, "server_groups": 10, "server_group_members": 10,
                 "injected_files": 5, "injected_file_content_bytes": 10240,
                 "injected_file_path_bytes": 255, "fixed_ips": -1, "floating_ips": -1,
                 "security_groups": -1, "security_group_rules": -1}


@pytest.fixture
def api(compute_api: ComputeApi) -> ComputeApi:
    """A compute API at nova's default quotas (the fixture's are unlimited servers)."""
    conf = compute_api.state.conf
    for name in ("instances", "cores", "ram"):
        conf.set_override(name, NOVA_DEFAULTS[name], group="quota")
    return compute_api


@pytest.mark.parametrize(("asked", "keys"), [
    ("2.1", NOW | NETWORK | INJECTED),
    (str(just_before(mv.QUOTA_NO_NETWORK)), NOW | NETWORK | INJECTED),
    ("2.36", NOW | INJECTED),
    ("2.56", NOW | INJECTED),
    ("2.57", NOW),
    ("2.100", NOW),
])
def test_show_and_defaults_are_novas_at_each_version(api: ComputeApi, asked: str,
                                                     keys: set[str]) -> None:
    for path in (f"/v2.1/os-quota-sets/{PROJECT}", f"/v2.1/os-quota-sets/{PROJECT}/defaults"):
        body = api.request("GET", path, token=MEMBER, headers=version(asked),
                           expect=200).json()
        assert body == {"quota_set": {"id": PROJECT, **{k: NOVA_DEFAULTS[k] for k in keys}}}


def test_update_shows_the_limits_without_id_and_delete_restores_defaults(
        api: ComputeApi) -> None:
    updated = api.admin("PUT", f"/v2.1/os-quota-sets/{PROJECT}", json={
        "quota_set": {"cores": 45, "instances": "-1"}}, headers=version("2.57"),
        expect=200).json()["quota_set"]
    assert updated == {**{k: NOVA_DEFAULTS[k] for k in NOW}, "cores": 45, "instances": -1}
    shown = api.request("GET", f"/v2.1/os-quota-sets/{PROJECT}", token=MEMBER).json()
    assert shown["quota_set"]["cores"] == 45
    # Another project keeps the defaults.
    assert api.admin("GET", "/v2.1/os-quota-sets/p2").json()["quota_set"]["cores"] == 20
    api.admin("DELETE", f"/v2.1/os-quota-sets/{PROJECT}", expect=202)
    assert api.admin("GET", f"/v2.1/os-quota-sets/{PROJECT}").json()["quota_set"][
        "cores"] == 20


def test_a_users_limits_override_the_projects_and_stay_below_them(api: ComputeApi) -> None:
    api.admin("PUT", f"/v2.1/os-quota-sets/{PROJECT}", json={
        "quota_set": {"key_pairs": 50}}, expect=200)
    mine = api.admin("PUT", f"/v2.1/os-quota-sets/{PROJECT}?user_id=alice", json={
        "quota_set": {"key_pairs": 3}}, expect=200).json()["quota_set"]
    assert mine["key_pairs"] == 3
    assert api.admin("GET", f"/v2.1/os-quota-sets/{PROJECT}?user_id=alice").json()[
        "quota_set"]["key_pairs"] == 3
    assert api.admin("GET", f"/v2.1/os-quota-sets/{PROJECT}?user_id=bob").json()[
        "quota_set"]["key_pairs"] == 50
    too_high = api.admin("PUT", f"/v2.1/os-quota-sets/{PROJECT}?user_id=alice", json={
        "quota_set": {"key_pairs": 51}}, expect=400).json()
    assert too_high["badRequest"]["message"] == (
        "Quota limit 51 for key_pairs must be less than or equal to 50.")
    api.admin("DELETE", f"/v2.1/os-quota-sets/{PROJECT}?user_id=alice", expect=202)
    assert api.admin("GET", f"/v2.1/os-quota-sets/{PROJECT}?user_id=alice").json()[
        "quota_set"]["key_pairs"] == 50


def test_detail_counts_key_pairs_per_user(api: ComputeApi) -> None:
    api.request("POST", "/v2.1/os-keypairs", token=MEMBER, json={"keypair": {
        "name": "k", "public_key": ED25519}}, expect=201)
    detail = api.request("GET", f"/v2.1/os-quota-sets/{PROJECT}/detail?user_id=alice",
                         token=MEMBER, headers=version("2.57"), expect=200).json()
    assert detail["quota_set"]["key_pairs"] == {"limit": 100, "in_use": 1, "reserved": 0}
    assert detail["quota_set"]["instances"] == {"limit": 10, "in_use": 0, "reserved": 0}
    assert set(detail["quota_set"]) == NOW | {"id"}
    project = api.request("GET", f"/v2.1/os-quota-sets/{PROJECT}/detail", token=MEMBER,
                          expect=200).json()
    assert project["quota_set"]["key_pairs"]["in_use"] == 0  # a user's resource


def test_limit_below_usage_is_refused_unless_forced(api: ComputeApi) -> None:
    for name in ("a", "b"):
        api.request("POST", "/v2.1/os-keypairs", token=MEMBER, json={"keypair": {
            "name": name, "public_key": ED25519}}, expect=201)
    refused = api.admin("PUT", f"/v2.1/os-quota-sets/{PROJECT}?user_id=alice", json={
        "quota_set": {"key_pairs": 1}}, expect=400).json()
    assert refused["badRequest"]["message"] == (
        "Quota limit 1 for key_pairs must be greater than or equal to already used and "
        "reserved 2.")
    api.admin("PUT", f"/v2.1/os-quota-sets/{PROJECT}?user_id=alice", json={
        "quota_set": {"key_pairs": 1, "force": True}}, expect=200)


@pytest.mark.parametrize(("body", "asked"), [
    ({"quota_set": {"fixed_ips": 5}}, "2.36"),  # gone at 2.36
    ({"quota_set": {"injected_files": 5}}, "2.57"),  # gone at 2.57
    ({"quota_set": {"cores": -2}}, "2.1"),
    ({"quota_set": {"cores": "many"}}, "2.1"),
    ({"quota_set": {"no_such": 1}}, "2.1"),
])
def test_bad_updates_are_400s(api: ComputeApi, body: dict[str, Any], asked: str) -> None:
    api.admin("PUT", f"/v2.1/os-quota-sets/{PROJECT}", json=body, headers=version(asked),
              expect=400)


def test_policy_members_read_their_own_admins_write(api: ComputeApi) -> None:
    api.request("GET", f"/v2.1/os-quota-sets/{PROJECT}", token=OTHER, expect=403)
    api.request("GET", f"/v2.1/os-quota-sets/{PROJECT}/detail", token=OTHER, expect=403)
    api.request("GET", f"/v2.1/os-quota-sets/{PROJECT}/defaults", token=OTHER, expect=200)
    api.request("PUT", f"/v2.1/os-quota-sets/{PROJECT}", token=MEMBER, json={
        "quota_set": {"cores": 1}}, expect=403)
    api.request("DELETE", f"/v2.1/os-quota-sets/{PROJECT}", token=MEMBER, expect=403)
    api.request("GET", "/v2.1/limits?tenant_id=p2", token=MEMBER, expect=403)


def test_strict_query_from_2_75(api: ComputeApi) -> None:
    api.admin("GET", f"/v2.1/os-quota-sets/{PROJECT}?foo=1", headers=version("2.74"),
              expect=200)
    api.admin("GET", f"/v2.1/os-quota-sets/{PROJECT}?foo=1", headers=version("2.75"),
              expect=400)


def test_quota_class_default_sets_the_defaults(api: ComputeApi) -> None:
    shown = api.admin("GET", "/v2.1/os-quota-class-sets/default", headers=version("2.57"),
                      expect=200).json()
    assert shown == {"quota_class_set": {"id": "default",
                                         **{k: NOVA_DEFAULTS[k] for k in NOW}}}
    old = api.admin("GET", "/v2.1/os-quota-class-sets/default", headers=version("2.1"),
                    expect=200).json()["quota_class_set"]
    assert "server_groups" not in old and old["fixed_ips"] == -1
    api.admin("PUT", "/v2.1/os-quota-class-sets/default", json={
        "quota_class_set": {"instances": 3}}, expect=200)
    assert api.request("GET", f"/v2.1/os-quota-sets/{PROJECT}/defaults", token=MEMBER
                       ).json()["quota_set"]["instances"] == 3
    assert api.request("GET", "/v2.1/limits", token=MEMBER).json()["limits"]["absolute"][
        "maxTotalInstances"] == 3
    api.request("GET", "/v2.1/os-quota-class-sets/default", token=MEMBER, expect=403)


LIMITS_2_1 = {
    "maxImageMeta": 128, "maxPersonality": 5, "maxPersonalitySize": 10240,
    "maxSecurityGroupRules": -1, "maxSecurityGroups": -1, "maxServerMeta": 128,
    "maxTotalCores": 20, "maxTotalFloatingIps": -1, "maxTotalInstances": 10,
    "maxTotalKeypairs": 100, "maxTotalRAMSize": 51200, "maxServerGroups": 10,
    "maxServerGroupMembers": 10, "totalCoresUsed": 0, "totalInstancesUsed": 0,
    "totalRAMUsed": 0, "totalSecurityGroupsUsed": 0, "totalFloatingIpsUsed": 0,
    "totalServerGroupsUsed": 0}
_GONE_2_36 = {"maxSecurityGroupRules", "maxSecurityGroups", "maxTotalFloatingIps",
              "totalSecurityGroupsUsed", "totalFloatingIpsUsed"}


@pytest.mark.parametrize(("asked", "gone"), [
    ("2.1", set()),
    ("2.36", _GONE_2_36),
    ("2.39", _GONE_2_36 | {"maxImageMeta"}),
    ("2.57", _GONE_2_36 | {"maxImageMeta", "maxPersonality", "maxPersonalitySize"}),
])
def test_limits_are_novas_at_each_version(api: ComputeApi, asked: str,
                                          gone: set[str]) -> None:
    body = api.request("GET", "/v2.1/limits", token=MEMBER, headers=version(asked),
                       expect=200).json()
    assert body == {"limits": {"rate": [], "absolute": {
        k: v for k, v in LIMITS_2_1.items() if k not in gone}}}


def test_limits_of_another_project_for_admins(api: ComputeApi) -> None:
    api.admin("PUT", "/v2.1/os-quota-sets/p2", json={"quota_set": {"cores": 7}}, expect=200)
    absolute = api.admin("GET", "/v2.1/limits?tenant_id=p2").json()["limits"]["absolute"]
    assert absolute["maxTotalCores"] == 7
