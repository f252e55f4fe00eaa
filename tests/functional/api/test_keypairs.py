"""Key pairs (/os-keypairs) over HTTP, as nova's clients see them at each microversion:
each os-keypairs gate changes the answer exactly at its version, the bodies have the
keys Tempest's response schemas allow and no others, and a user reaches only their own
key pairs."""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Callable
from typing import Any

import pytest
import requests

from moorage.api import microversion as mv
from tests.api_fixtures import ComputeApi
from tests.keys import CERTIFICATE, ED25519, ED25519_FINGERPRINT, RSA_1024

ALICE = "alice:project1"  # noauth2: user alice, a member of project1
BOB = "bob:project1"  # another user of the same project
_names = (f"key-{n}" for n in itertools.count())


def call(api: ComputeApi, method: str, path: str, version: str, *, token: str = ALICE,
         json: Any = None) -> requests.Response:
    """A request as nova's clients make it at ``version`` (no Moorage additions)."""
    return api.request(method, "/v2.1" + path, json=json, token=token,
                       headers={mv.HEADER: f"compute {version}"})


def create(api: ComputeApi, version: str, token: str = ALICE, **fields: Any
           ) -> requests.Response:
    body = {"name": next(_names), "public_key": ED25519, **fields}
    return call(api, "POST", "/os-keypairs", version, token=token,
                json={"keypair": {k: v for k, v in body.items() if v is not None}})


def before(gate: mv.Gate) -> str:
    return f"{gate.version.major}.{gate.version.minor - 1}"


# -- each gate, at the version before it and at its own --------------------------------
Probe = Callable[[ComputeApi, str], Any]


def _create_status_and_fields(api: ComputeApi, version: str) -> Any:
    response = create(api, version)
    return response.status_code, sorted(response.json()["keypair"])


def _delete_status(api: ComputeApi, version: str) -> int:
    name = create(api, version).json()["keypair"]["name"]
    return call(api, "DELETE", f"/os-keypairs/{name}", version).status_code


def _listed_and_shown_fields(api: ComputeApi, version: str) -> Any:
    name = create(api, version).json()["keypair"]["name"]
    listed = call(api, "GET", "/os-keypairs", version).json()["keypairs"][0]["keypair"]
    shown = call(api, "GET", f"/os-keypairs/{name}", version).json()["keypair"]
    return sorted(listed), shown.get("type", "absent")


def _admin_names_the_user(api: ComputeApi, version: str) -> Any:
    name = create(api, version).json()["keypair"]["name"]
    listed = call(api, "GET", "/os-keypairs?user_id=alice", version, token="admin")
    shown = call(api, "GET", f"/os-keypairs/{name}?user_id=alice", version, token="admin")
    made = create(api, version, token="admin", user_id="alice")
    return (name in [k["keypair"]["name"] for k in listed.json()["keypairs"]],
            shown.status_code, made.status_code,
            made.json().get("keypair", {}).get("user_id"))


def _paged(api: ComputeApi, version: str) -> Any:
    for _ in range(3):
        create(api, version)
    body = call(api, "GET", "/os-keypairs?limit=1", version).json()
    return len(body["keypairs"]), "keypairs_links" in body


def _unknown_query(api: ComputeApi, version: str) -> int:
    return call(api, "GET", "/os-keypairs?colour=red", version).status_code


def _generated_and_dotted(api: ComputeApi, version: str) -> Any:
    generated = create(api, version, public_key=None)
    dotted = create(api, version, name=f"alice@example.org-{next(_names)}")
    return (generated.status_code, "private_key" in generated.json().get("keypair", {}),
            dotted.status_code)


GATES: list[tuple[mv.Gate, Probe, Any, Any]] = [
    # gate, probe, what it answers before the gate, and at the gate
    (mv.KEYPAIR_TYPE, _create_status_and_fields,
     (200, ["fingerprint", "name", "public_key", "user_id"]),
     (201, ["fingerprint", "name", "public_key", "type", "user_id"])),
    (mv.KEYPAIR_TYPE, _delete_status, 202, 204),
    (mv.KEYPAIR_TYPE, _listed_and_shown_fields,
     (["fingerprint", "name", "public_key"], "absent"),
     (["fingerprint", "name", "public_key", "type"], "ssh")),
    # Before 2.10 the admin's user_id is ignored (the admin's own, empty, list and a 404)
    # and refused in a create body.
    (mv.KEYPAIR_USER, _admin_names_the_user, (False, 404, 400, None),
     (True, 200, 201, "alice")),
    (mv.KEYPAIR_PAGING, _paged, (3, False), (1, True)),
    (mv.KEYPAIR_STRICT_QUERY, _unknown_query, 200, 400),
    (mv.KEYPAIR_IMPORT_ONLY, _generated_and_dotted, (201, True, 400), (400, False, 201)),
]


@pytest.mark.parametrize(("gate", "probe", "expected_before", "expected_at"), GATES,
                         ids=[f"{g.version}-{p.__name__}" for g, p, _, _ in GATES])
def test_each_gate_changes_the_answer_at_its_version(
        compute_api: ComputeApi, gate: mv.Gate, probe: Probe, expected_before: Any,
        expected_at: Any) -> None:
    seen_before = probe(compute_api, before(gate))
    seen_at = probe(compute_api, str(gate.version))
    assert (seen_before, seen_at) == (expected_before, expected_at)


# -- the exact bodies (Tempest's response schemas allow these keys and no others) ------
SHOWN = {"public_key", "name", "fingerprint", "user_id", "deleted", "created_at",
         "updated_at", "deleted_at", "id"}


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.10", "2.35", "2.92", "2.100"])
def test_bodies_have_tempests_keys_exactly(compute_api: ComputeApi, version: str) -> None:
    typed = {"type"} if version != "2.1" else set()
    response = create(compute_api, version)
    assert set(response.json()) == {"keypair"}
    keypair = response.json()["keypair"]
    assert set(keypair) == {"fingerprint", "name", "public_key", "user_id"} | typed
    listed = call(compute_api, "GET", "/os-keypairs", version).json()
    assert set(listed) == {"keypairs"}  # a short page has no links
    assert [set(entry) for entry in listed["keypairs"]] == [{"keypair"}]
    assert set(listed["keypairs"][0]["keypair"]) == {"public_key", "name",
                                                     "fingerprint"} | typed
    shown = call(compute_api, "GET", f"/os-keypairs/{keypair['name']}", version).json()
    assert set(shown) == {"keypair"} and set(shown["keypair"]) == SHOWN | typed
    fields = shown["keypair"]
    assert (fields["deleted"], fields["deleted_at"], fields["updated_at"]) == (
        False, None, None)
    assert isinstance(fields["id"], int) and fields["user_id"] == "alice"
    datetime.datetime.strptime(fields["created_at"], "%Y-%m-%dT%H:%M:%S.%f")
    deleted = call(compute_api, "DELETE", f"/os-keypairs/{keypair['name']}", version)
    assert deleted.content == b""


def test_a_generated_private_key_is_answered_once(compute_api: ComputeApi) -> None:
    made = create(compute_api, "2.91", public_key=None, type="x509")
    assert made.status_code == 201, made.text
    keypair = made.json()["keypair"]
    assert set(keypair) == {"fingerprint", "name", "public_key", "user_id", "type",
                            "private_key"}
    assert keypair["public_key"].startswith("-----BEGIN CERTIFICATE-----")
    shown = call(compute_api, "GET", f"/os-keypairs/{keypair['name']}", "2.91").json()
    assert "private_key" not in shown["keypair"]
    assert (shown["keypair"]["public_key"], shown["keypair"]["fingerprint"]) == (
        keypair["public_key"], keypair["fingerprint"])
    # Nothing of the private key is stored.
    with compute_api.state.database.reader() as conn:
        stored = conn.exec_driver_sql("SELECT * FROM keypairs").all()
    assert not any(keypair["private_key"] in str(value) for row in stored for value in row)


def test_an_imported_key_keeps_its_text_and_has_nova_s_fingerprint(
        compute_api: ComputeApi) -> None:
    keypair = create(compute_api, "2.2", name="mine").json()["keypair"]
    assert (keypair["public_key"], keypair["fingerprint"], keypair["type"]) == (
        ED25519, ED25519_FINGERPRINT, "ssh")
    again = create(compute_api, "2.2", name="mine", public_key=RSA_1024)
    assert again.status_code == 409
    assert again.json()["conflictingRequest"]["message"] == "Key pair 'mine' already exists."


@pytest.mark.parametrize(("public_key", "kind", "words"), [
    ("ssh-rsa not-base64", "ssh", ["Keypair data is invalid", "not an OpenSSH public key"]),
    ("hello world", "ssh", ["Keypair data is invalid", "Unsupported key type"]),
    ("hello", "ssh", ["not an OpenSSH public key", "Invalid line format"]),
    (ED25519.replace("AAAAC3", "AAAAD3"), "ssh", ["not an OpenSSH public key"]),
    (ED25519, "x509", ["failed to generate X509 fingerprint"]),
    (CERTIFICATE, "ssh", ["failed to generate fingerprint"]),
])
def test_a_public_key_that_is_not_a_key_is_a_400_naming_the_problem(
        compute_api: ComputeApi, public_key: str, kind: str, words: list[str]) -> None:
    response = create(compute_api, "2.2", public_key=public_key, type=kind)
    assert response.status_code == 400, response.text
    message = response.json()["badRequest"]["message"]
    for word in words:
        assert word in message, message
    assert call(compute_api, "GET", "/os-keypairs", "2.2").json()["keypairs"] == []


@pytest.mark.parametrize(("name", "version", "status"), [
    ("with space", "2.1", 200), ("under_score-dash", "2.1", 200),
    (" leading", "2.1", 400), ("trailing ", "2.1", 400), ("a/b", "2.1", 400),
    ("caf\u00e9", "2.1", 400), ("", "2.1", 400), ("x" * 256, "2.1", 400),
    ("a.b@c", "2.91", 400), ("a.b@c", "2.92", 201), ("a:b", "2.92", 400),
])
def test_names_are_validated_as_nova_validates_them(compute_api: ComputeApi, name: str,
                                                    version: str, status: int) -> None:
    response = create(compute_api, version, name=name)
    assert response.status_code == status, response.text


# -- a user's own --------------------------------------------------------------------
def test_another_users_key_pair_is_not_found(compute_api: ComputeApi) -> None:
    create(compute_api, "2.10", name="shared-name")
    for method in ("GET", "DELETE"):
        response = call(compute_api, method, "/os-keypairs/shared-name", "2.10", token=BOB)
        assert response.status_code == 404, response.text
        assert response.json()["itemNotFound"]["message"] == (
            "Keypair shared-name not found for user bob")
    assert call(compute_api, "GET", "/os-keypairs", "2.10", token=BOB).json() == {
        "keypairs": []}
    # Names are per user: bob may have his own of the same name.
    assert create(compute_api, "2.10", token=BOB, name="shared-name").status_code == 201
    # A user may not name another (policy: admin or the user), nor act for them.
    for path in ("/os-keypairs?user_id=alice", "/os-keypairs/shared-name?user_id=alice"):
        assert call(compute_api, "GET", path, "2.10", token=BOB).status_code == 403
    assert create(compute_api, "2.10", token=BOB, user_id="alice").status_code == 403
    # Naming themselves is fine; an admin may name anyone.
    assert call(compute_api, "GET", "/os-keypairs?user_id=bob", "2.10",
                token=BOB).status_code == 200
    shown = call(compute_api, "GET", "/os-keypairs/shared-name?user_id=alice", "2.10",
                 token="admin")
    assert shown.json()["keypair"]["user_id"] == "alice"
    assert call(compute_api, "DELETE", "/os-keypairs/shared-name?user_id=alice", "2.10",
                token="admin").status_code == 204
    assert call(compute_api, "GET", "/os-keypairs/shared-name", "2.10",
                token=BOB).status_code == 200


# -- paging (2.35) -------------------------------------------------------------------
def test_pages_follow_the_next_links_by_name(compute_api: ComputeApi) -> None:
    names = ["e", "a", "d", "b", "c"]
    for name in names:
        create(compute_api, "2.35", name=name)
    seen: list[str] = []
    path = "/os-keypairs?limit=2"
    while True:
        body = call(compute_api, "GET", path, "2.35").json()
        seen += [entry["keypair"]["name"] for entry in body["keypairs"]]
        if "keypairs_links" not in body:
            break
        link = body["keypairs_links"]
        assert [entry["rel"] for entry in link] == ["next"]
        path = link[0]["href"].split("/v2.1", 1)[1]
        assert "limit=2" in path and f"marker={seen[-1]}" in path
    assert seen == sorted(names)
    after = call(compute_api, "GET", "/os-keypairs?marker=b", "2.35").json()["keypairs"]
    assert [entry["keypair"]["name"] for entry in after] == ["c", "d", "e"]


@pytest.mark.parametrize(("query", "words"), [
    ("limit=-1", "limit"), ("limit=two", "limit"), ("marker=nothing", "Marker nothing"),
])
def test_bad_paging_is_a_400(compute_api: ComputeApi, query: str, words: str) -> None:
    create(compute_api, "2.35")
    response = call(compute_api, "GET", f"/os-keypairs?{query}", "2.35")
    assert response.status_code == 400, response.text
    assert words in response.json()["badRequest"]["message"]
