"""os-services in every microversion's shape, over HTTP: one case per gate, each asking
on both sides of its version and holding the answer to what nova answers there."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from moorage.api import microversion
from moorage.api.handlers.services import AGENT_NOTIFIED
from moorage.api.microversion import Gate, Version
from moorage.lifecycle.states import ServerStatus
from tests.api_fixtures import SERVICE_TOKEN, ComputeApi
from tests.lifecycle_paths import bring

BEAT = {"binary": "nova-compute", "driver": "fake", "agent_url": "http://127.0.0.1:9",
        "supported_instances": [["x86_64", "qemu", "hvm"]], "hypervisor_version": 7002000}
BINARY = "nova-compute"
SHAPE_2_1 = {"id", "binary", "host", "zone", "status", "state", "updated_at",
             "disabled_reason"}


def _beat(api: ComputeApi, host: str = "h1") -> None:
    api.request("PUT", f"/internal/services/{host}", json={**BEAT, "nodes": [host]},
                token=None, headers={"X-Service-Token": SERVICE_TOKEN}, expect=200)


def _at(version: Version | str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


def _before(gate: Gate) -> Version:
    return Version(gate.version.major, gate.version.minor - 1)


def _ask(api: ComputeApi, version: Version, method: str, path: str,
         json: Any = None) -> requests.Response:
    return api.admin(method, "/v2.1" + path, json=json, headers=_at(version))


def _services(api: ComputeApi, version: Version, query: str = "") -> Any:
    return _ask(api, version, "GET", "/os-services" + query)


def _uuid_of(api: ComputeApi, host: str = "h1") -> str:
    [service] = _services(api, microversion.MAX_VERSION, f"?host={host}").json()["services"]
    return str(service["id"])


@pytest.fixture
def api(compute_api: ComputeApi) -> ComputeApi:
    _beat(compute_api, "h1")
    _beat(compute_api, "h2")
    return compute_api


# -- one case per gate: what changes, asked just before the gate and at it ------------

@dataclass(frozen=True)
class GateCase:
    gate: Gate
    ask: Callable[[ComputeApi, Version], Any]  # the request, and what to compare of it
    before: Any
    at: Any


def _first_keys(api: ComputeApi, version: Version) -> Any:
    return set(_services(api, version).json()["services"][0])


def _id_kind(api: ComputeApi, version: Version) -> Any:
    ident = _services(api, version).json()["services"][0]["id"]
    if isinstance(ident, int):
        return int
    return str(uuid.UUID(ident)) == ident and "uuid"


def _legacy_disable(api: ComputeApi, version: Version) -> Any:
    answer = _ask(api, version, "PUT", "/os-services/disable",
                  {"host": "h1", "binary": BINARY})
    return answer.status_code, answer.json()


def _update_by_uuid(api: ComputeApi, version: Version) -> Any:
    answer = _ask(api, version, "PUT", f"/os-services/{_uuid_of(api)}",
                  {"status": "disabled"})
    return answer.status_code, set(answer.json().get("service", answer.json()))


def _delete_by_integer(api: ComputeApi, version: Version) -> Any:
    last = _services(api, Version(2, 1)).json()["services"][-1]
    return _ask(api, version, "DELETE", f"/os-services/{last['id']}").status_code


def _force_down(api: ComputeApi, version: Version) -> Any:
    answer = _ask(api, version, "PUT", "/os-services/force-down",
                  {"host": "h1", "binary": BINARY, "forced_down": True})
    return answer.status_code, answer.json()


def _unknown_query(api: ComputeApi, version: Version) -> Any:
    return _services(api, version, "?host=h1&colour=red").status_code


CASES = [
    GateCase(microversion.SERVICE_FORCED_DOWN, _first_keys, SHAPE_2_1,
             SHAPE_2_1 | {"forced_down"}),
    GateCase(microversion.SERVICE_FORCED_DOWN, _force_down,
             (400, {"badRequest": {"code": 400, "message": (
                 "Additional properties are not allowed ('forced_down' was unexpected); "
                 "allowed: binary, disabled_reason, host.")}}),
             (200, {"service": {"host": "h1", "binary": BINARY, "forced_down": True}})),
    GateCase(microversion.SERVICE_UUIDS, _id_kind, int, "uuid"),
    GateCase(microversion.SERVICE_UUIDS, _legacy_disable,
             (200, {"service": {"host": "h1", "binary": BINARY, "status": "disabled"}}),
             (400, {"badRequest": {"code": 400, "message": (
                 "Additional properties are not allowed ('binary', 'host' were "
                 "unexpected); allowed: disabled_reason, forced_down, status.")}})),
    GateCase(microversion.SERVICE_UUIDS, _update_by_uuid,
             (400, {"badRequest"}), (200, SHAPE_2_1 | {"forced_down"})),
    GateCase(microversion.SERVICE_UUIDS, _delete_by_integer, 204, 400),
    GateCase(microversion.SERVICE_QUERY_STRICT, _unknown_query, 200, 400),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.gate.version}-{c.ask.__name__}")
def test_each_gate_changes_the_answer_at_its_version(api: ComputeApi, case: GateCase
                                                     ) -> None:
    assert case.ask(api, _before(case.gate)) == case.before
    assert case.ask(api, case.gate.version) == case.at


# -- the shapes, whole -----------------------------------------------------------------

def test_the_2_1_shape_and_its_values(api: ComputeApi) -> None:
    [h1] = _services(api, Version(2, 1), "?host=h1").json()["services"]
    assert set(h1) == SHAPE_2_1
    assert (h1["binary"], h1["zone"], h1["status"], h1["state"]) == (
        BINARY, "nova", "enabled", "up")
    assert h1["disabled_reason"] is None and h1["updated_at"].startswith("20")
    # No header is 2.1.
    plain = api.request("GET", "/v2.1/os-services", headers={"OpenStack-API-Version": None})
    assert {s["id"] for s in plain.json()["services"]} == {
        s["id"] for s in _services(api, Version(2, 1)).json()["services"]}


def test_filters_and_zones(api: ComputeApi) -> None:
    """host and binary filter (an empty value filters nothing); a host in an
    availability zone's aggregate is in that zone."""
    newest = microversion.MAX_VERSION
    assert [s["host"] for s in _services(api, newest, "?host=h2").json()["services"]] == ["h2"]
    assert _services(api, newest, f"?binary={BINARY}&host=").json()["services"][0]["host"]
    assert _services(api, newest, "?binary=nova-scheduler").json()["services"] == []
    aggregate = api.admin("POST", "/v2.1/os-aggregates", json={"aggregate": {
        "name": "fast", "availability_zone": "az1"}}, expect=200).json()["aggregate"]
    api.admin("POST", f"/v2.1/os-aggregates/{aggregate['id']}/action",
              json={"add_host": {"host": "h2"}}, expect=200)
    zones = {s["host"]: s["zone"] for s in _services(api, Version(2, 1)).json()["services"]}
    assert zones == {"h1": "nova", "h2": "az1"}


def test_the_actions_before_2_53(api: ComputeApi) -> None:
    version = Version(2, 52)
    reason = _ask(api, version, "PUT", "/os-services/disable-log-reason",
                  {"host": "h1", "binary": BINARY, "disabled_reason": "maintenance"})
    assert reason.json() == {"service": {"host": "h1", "binary": BINARY,
                                         "status": "disabled",
                                         "disabled_reason": "maintenance"}}
    [h1] = _services(api, version, "?host=h1").json()["services"]
    assert (h1["status"], h1["disabled_reason"]) == ("disabled", "maintenance")
    enabled = _ask(api, version, "PUT", "/os-services/enable",
                   {"host": "h1", "binary": BINARY})
    assert enabled.json() == {"service": {"host": "h1", "binary": BINARY,
                                          "status": "enabled"}}
    [h1] = _services(api, version, "?host=h1").json()["services"]
    assert (h1["status"], h1["disabled_reason"]) == ("enabled", None)
    refusals = [
        ("disable-log-reason", {"host": "h1", "binary": BINARY}, 400,
         "Missing disabled reason field"),
        ("force-down", {"host": "h1", "binary": BINARY}, 400, "Missing forced_down field"),
        ("reboot", {"host": "h1", "binary": BINARY}, 404, "Unknown action"),
        ("disable", {"host": "h9", "binary": BINARY}, 404,
         "Could not find binary nova-compute on host h9."),
        ("disable", {"host": "h1"}, 400, "'binary' is a required property"),
        ("disable", {"host": "h 1", "binary": BINARY}, 400, "'host'"),
        ("disable", {"host": "h1", "binary": BINARY, "status": "disabled"}, 400,
         "'status' was unexpected"),
    ]
    for action, body, status, words in refusals:
        answer = _ask(api, version, "PUT", f"/os-services/{action}", body)
        assert answer.status_code == status, (action, body, answer.text)
        assert words in answer.text, (action, body, answer.text)


def test_the_update_from_2_53(api: ComputeApi) -> None:
    version = Version(2, 53)
    url = f"/os-services/{_uuid_of(api)}"
    both = _ask(api, version, "PUT", url, {"status": "disabled", "disabled_reason": "x",
                                          "forced_down": True}).json()["service"]
    assert (both["status"], both["disabled_reason"], both["forced_down"], both["state"]) == (
        "disabled", "x", True, "down")
    # Any spelling of the uuid names the service.
    upper = _ask(api, version, "PUT", url.upper().replace("/OS-SERVICES/", "/os-services/"),
                 {"status": "enabled", "forced_down": False})
    assert upper.status_code == 200, upper.text
    refusals = [
        (url, {}, 400, "No updates were requested"),
        (url, {"status": "enabled", "disabled_reason": "x"}, 400,
         "disabled_reason is only allowed with status 'disabled'"),
        (url, {"forced_down": "maybe"}, 400, "'forced_down'"),
        ("/os-services/1", {"status": "enabled"}, 400, "Invalid uuid 1"),
        (f"/os-services/{uuid.uuid4()}", {"status": "enabled"}, 404, "could not be found"),
    ]
    for path, body, status, words in refusals:
        answer = _ask(api, version, "PUT", path, body)
        assert answer.status_code == status, (path, body, answer.text)
        assert words in answer.text, (path, body, answer.text)


def test_the_agent_is_told_in_every_era(api: ComputeApi) -> None:
    """A change of status is told to the agent at once; the header says it was."""

    class Agents:
        calls: list[tuple[str, bool]] = []

        def set_disabled(self, host: str, disabled: bool) -> None:
            self.calls.append((host, disabled))

    api.state.agents = Agents()  # type: ignore[assignment]
    legacy = _ask(api, Version(2, 1), "PUT", "/os-services/disable",
                  {"host": "h1", "binary": BINARY})
    assert legacy.headers[AGENT_NOTIFIED] == "true"
    newest = _ask(api, microversion.MAX_VERSION, "PUT", f"/os-services/{_uuid_of(api)}",
                  {"status": "enabled"})
    assert newest.headers[AGENT_NOTIFIED] == "true"
    assert Agents.calls == [("h1", True), ("h1", False)]


def test_delete_in_both_eras(api: ComputeApi) -> None:
    [h1] = _services(api, Version(2, 52), "?host=h1").json()["services"]
    for path, version, status in [
            ("/os-services/h1", Version(2, 52), 400),  # not an integer
            ("/os-services/2147483648", Version(2, 52), 404),
            (f"/os-services/{uuid.uuid4()}", Version(2, 53), 404),
            (f"/os-services/{h1['id']}", Version(2, 52), 204)]:
        assert _ask(api, version, "DELETE", path).status_code == status, (path, version)
    assert [s["host"] for s in _services(api, Version(2, 1)).json()["services"]] == ["h2"]
    # A service whose host runs servers stays, as nova keeps it.
    bring(api.state.database, str(uuid.uuid4()), (ServerStatus.ACTIVE, None), host="h2")
    refused = _ask(api, Version(2, 53), "DELETE", f"/os-services/{_uuid_of(api, 'h2')}")
    assert refused.status_code == 409, refused.text
    assert "hosting instances" in refused.json()["conflictingRequest"]["message"]


def test_users_are_refused_in_every_era(api: ComputeApi) -> None:
    for version, method, path, body in [
            (Version(2, 1), "GET", "/os-services", None),
            (Version(2, 1), "PUT", "/os-services/disable", {"host": "h1", "binary": BINARY}),
            (Version(2, 1), "DELETE", "/os-services/1", None),
            (Version(2, 53), "PUT", f"/os-services/{_uuid_of(api)}", {"status": "enabled"})]:
        answer = api.user(method, "/v2.1" + path, json=body, headers=_at(version))
        assert answer.status_code == 403, (version, method, path, answer.text)
