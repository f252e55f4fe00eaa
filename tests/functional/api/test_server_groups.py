"""Server groups (/os-server-groups) over HTTP, as nova's clients see them at each
microversion: each os-server-groups gate changes the answer exactly at its version, the
bodies have the keys nova's response schemas allow and no others, bad input is a 400
naming the field, and a project reaches only its own groups."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import requests

from moorage.api import microversion as mv
from tests.api_fixtures import ComputeApi, GateCase, just_before

ALICE = "alice:project1"  # noauth2: user alice, a member of project1
CAROL = "carol:project2"  # a user of another project
_names = (f"group-{n}" for n in itertools.count())


def call(api: ComputeApi, method: str, path: str, version: object, *, token: str = ALICE,
         json: Any = None) -> requests.Response:
    """A request as nova's clients make it at ``version`` (no Moorage additions)."""
    return api.request(method, "/v2.1" + path, json=json, token=token,
                       headers={mv.HEADER: f"compute {version}"})


def create(api: ComputeApi, version: object, policy: str = "anti-affinity",
           token: str = ALICE, **fields: Any) -> requests.Response:
    """A create in the shape of ``version``: ``policies`` before 2.64, ``policy`` from."""
    body: dict[str, Any] = {"name": next(_names)}
    if mv.Version.of(str(version)) >= mv.SERVER_GROUP_POLICY_RULES.version:
        body["policy"] = policy
    else:
        body["policies"] = [policy]
    body.update(fields)
    return call(api, "POST", "/os-server-groups", version, token=token,
                json={"server_group": body})


def made(api: ComputeApi, version: object, **kwargs: Any) -> dict[str, Any]:
    response = create(api, version, **kwargs)
    assert response.status_code == 200, response.text
    return dict(response.json()["server_group"])


# -- each gate, at the version before it and at its own --------------------------------
def _owner_shown(api: ComputeApi, version: mv.Version) -> Any:
    group = made(api, version)
    shown = call(api, "GET", f"/os-server-groups/{group['id']}", version).json()
    return group.get("project_id", "absent"), shown["server_group"].get("user_id", "absent")


def _soft_policy(api: ComputeApi, version: mv.Version) -> int:
    return create(api, version, policy="soft-anti-affinity").status_code


def _policy_and_rules(api: ComputeApi, version: mv.Version) -> Any:
    return sorted(made(api, version))


def _unknown_query(api: ComputeApi, version: mv.Version) -> int:
    return call(api, "GET", "/os-server-groups?colour=red", version).status_code


CASES = [
    GateCase(mv.SERVER_GROUP_OWNER, "project_id and user_id", _owner_shown,
             ("absent", "absent"), ("project1", "alice")),
    GateCase(mv.SERVER_GROUP_SOFT_POLICIES, "a soft policy", _soft_policy, 400, 200),
    GateCase(mv.SERVER_GROUP_POLICY_RULES, "policy and rules", _policy_and_rules,
             ["id", "members", "metadata", "name", "policies", "project_id", "user_id"],
             ["id", "members", "name", "policy", "project_id", "rules", "user_id"]),
    GateCase(mv.SERVER_GROUP_STRICT_QUERY, "an unknown query parameter", _unknown_query,
             200, 400),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.gate.version}-{c.what}")
def test_the_answer_changes_exactly_at_the_gate(compute_api: ComputeApi,
                                                case: GateCase) -> None:
    assert (case.observe(compute_api, just_before(case.gate)),
            case.observe(compute_api, case.gate.version)) == (case.before, case.at)


def test_every_server_group_gate_has_a_case() -> None:
    gates = {g for g in mv.GATES if g.resource == "os-server-groups"}
    assert gates == {case.gate for case in CASES}


# -- the exact bodies ---------------------------------------------------------------------
@pytest.mark.parametrize(("version", "keys"), [
    ("2.1", {"id", "name", "policies", "members", "metadata"}),
    ("2.13", {"id", "name", "policies", "members", "metadata", "project_id", "user_id"}),
    ("2.15", {"id", "name", "policies", "members", "metadata", "project_id", "user_id"}),
    ("2.64", {"id", "name", "policy", "rules", "members", "project_id", "user_id"}),
    ("2.100", {"id", "name", "policy", "rules", "members", "project_id", "user_id"}),
])
def test_bodies_have_novas_keys_exactly(compute_api: ComputeApi, version: str,
                                        keys: set[str]) -> None:
    group = made(compute_api, version, policy="affinity")
    assert set(group) == keys
    assert group["members"] == []
    if "policies" in group:
        assert (group["policies"], group["metadata"]) == (["affinity"], {})
    else:
        assert (group["policy"], group["rules"]) == ("affinity", {})
    shown = call(compute_api, "GET", f"/os-server-groups/{group['id']}", version).json()
    assert shown == {"server_group": group}
    listed = call(compute_api, "GET", "/os-server-groups", version).json()
    assert set(listed) == {"server_groups"} and group in listed["server_groups"]
    deleted = call(compute_api, "DELETE", f"/os-server-groups/{group['id']}", version)
    assert (deleted.status_code, deleted.content) == (204, b"")
    gone = call(compute_api, "GET", f"/os-server-groups/{group['id']}", version)
    assert gone.status_code == 404
    assert gone.json()["itemNotFound"]["message"] == (
        f"Instance group {group['id']} could not be found.")


def test_anti_affinity_takes_max_server_per_host_from_2_64(compute_api: ComputeApi) -> None:
    group = made(compute_api, "2.64", rules={"max_server_per_host": 3})
    assert (group["policy"], group["rules"]) == ("anti-affinity", {"max_server_per_host": 3})
    as_text = made(compute_api, "2.64", rules={"max_server_per_host": "2"})
    assert as_text["rules"] == {"max_server_per_host": 2}
    assert made(compute_api, "2.64", rules={})["rules"] == {}


@pytest.mark.parametrize(("version", "body", "words"), [
    ("2.64", {"policy": "affinity", "rules": {"max_server_per_host": 2}},
     ["'rules'", "only anti-affinity"]),
    ("2.64", {"policy": "soft-anti-affinity", "rules": {"max_server_per_host": 2}},
     ["'rules'", "only anti-affinity"]),
    ("2.64", {"policy": "anti-affinity", "rules": {"max_server_per_host": 0}},
     ["max_server_per_host"]),
    ("2.64", {"policy": "anti-affinity", "rules": {"max_server_per_host": -1}},
     ["max_server_per_host"]),
    ("2.64", {"policy": "anti-affinity", "rules": {"colour": 1}}, ["colour"]),
    ("2.64", {"policy": "clustered"}, ["policy", "anti-affinity"]),
    ("2.64", {"policies": ["affinity"]}, ["policies"]),
    ("2.63", {"policy": "affinity"}, ["policy"]),
    ("2.1", {"policies": ["affinity", "anti-affinity"]}, ["policies"]),
    ("2.1", {"policies": []}, ["policies"]),
    ("2.14", {"policies": ["soft-affinity"]}, ["policies", "soft-affinity"]),
    ("2.1", {"policies": ["affinity"], "rules": {}}, ["rules"]),
])
def test_bad_input_is_a_400_naming_the_field(compute_api: ComputeApi, version: str,
                                             body: dict[str, Any], words: list[str]) -> None:
    response = call(compute_api, "POST", "/os-server-groups", version,
                    json={"server_group": {"name": "g", **body}})
    assert response.status_code == 400, response.text
    message = response.json()["badRequest"]["message"]
    for word in words:
        assert word in message, message
    assert call(compute_api, "GET", "/os-server-groups", version).json() == {
        "server_groups": []}


def test_a_name_is_required(compute_api: ComputeApi) -> None:
    response = call(compute_api, "POST", "/os-server-groups", "2.64",
                    json={"server_group": {"policy": "affinity"}})
    assert response.status_code == 400
    assert "name" in response.json()["badRequest"]["message"]


def test_a_project_reaches_only_its_own_groups(compute_api: ComputeApi) -> None:
    mine = made(compute_api, "2.64")
    theirs = made(compute_api, "2.64", token=CAROL)
    listed = call(compute_api, "GET", "/os-server-groups", "2.64").json()["server_groups"]
    assert [g["id"] for g in listed] == [mine["id"]]
    # all_projects is an admin's; a user asking for it gets their own, as in nova.
    asked = call(compute_api, "GET", "/os-server-groups?all_projects=1", "2.64").json()
    assert [g["id"] for g in asked["server_groups"]] == [mine["id"]]
    for method in ("GET", "DELETE"):
        response = call(compute_api, method, f"/os-server-groups/{theirs['id']}", "2.64")
        assert response.status_code == 404, (method, response.text)
    admin = call(compute_api, "GET", "/os-server-groups?all_projects=True", "2.64",
                 token="admin").json()["server_groups"]
    assert {g["id"] for g in admin} == {mine["id"], theirs["id"]}
    assert call(compute_api, "GET", f"/os-server-groups/{theirs['id']}", "2.64",
                token="admin").status_code == 200
    # The admin's own list is the admin's project's: neither.
    assert call(compute_api, "GET", "/os-server-groups", "2.64",
                token="admin").json()["server_groups"] == []


def test_limit_and_offset_cut_the_list(compute_api: ComputeApi) -> None:
    ids = [made(compute_api, "2.64")["id"] for _ in range(4)]

    def listed(query: str) -> list[str]:
        response = call(compute_api, "GET", f"/os-server-groups{query}", "2.64")
        assert response.status_code == 200, response.text
        return [g["id"] for g in response.json()["server_groups"]]

    assert listed("") == ids
    assert listed("?limit=2") == ids[:2]
    assert listed("?offset=1&limit=2") == ids[1:3]
    assert listed("?offset=3") == ids[3:]
    assert listed("?limit=0") == ids  # nova's: 0 is the largest page
    assert listed("?offset=99999999999999999999999") == []
    for query, name in (("?limit=-1", "limit"), ("?offset=x", "offset")):
        response = call(compute_api, "GET", f"/os-server-groups{query}", "2.64")
        assert response.status_code == 400, query
        assert name in response.json()["badRequest"]["message"]
