"""A server's actions and events (os-instance-actions) over real HTTP: each accepted
request is an action under the request id its answer carried, each conductor step an
event, and the bodies are nova's at each microversion, key by key."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
import requests

from moorage.api import microversion as mv
from moorage.api.microversion import Version
from moorage.lifecycle.actions import Event
from tests.api_fixtures import just_before
from tests.functional.servers.conftest import Cloud, fake_host

ALICE = "alice:project-a"  # noauth2: a member of project-a
BOB = "bob:project-b"
VMXNET3 = "COMPUTE_NET_VIF_MODEL_VMXNET3"
ACTION_KEYS = {"action", "instance_uuid", "request_id", "user_id", "project_id",
               "start_time", "message"}
EVENT_KEYS = {"event", "start_time", "finish_time", "result"}


def _request_id(response: requests.Response) -> str:
    assert response.status_code < 300, response.text
    found = response.headers["x-openstack-request-id"]
    assert found.startswith("req-")
    return found


def _actions(cloud: Cloud, uuid: str, query: str = "", *, version: str = "2.100",
             token: str | None = None) -> list[dict[str, Any]]:
    response = cloud.call("GET", f"/servers/{uuid}/os-instance-actions{query}",
                          token=token, version=version)
    assert response.status_code == 200, response.text
    return list(response.json()["instanceActions"])


def _action(cloud: Cloud, uuid: str, request_id: str, *, version: str = "2.100",
            token: str | None = None) -> dict[str, Any]:
    response = cloud.call("GET", f"/servers/{uuid}/os-instance-actions/{request_id}",
                          token=token, version=version)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"instanceAction"}
    return dict(body["instanceAction"])


def _host_id(project: str, host: str) -> str:
    return hashlib.sha224((project + host).encode()).hexdigest()


def _boot(cloud: Cloud, flavor: str, image: str, token: str | None = None) -> tuple[str, str]:
    response = cloud.call("POST", "/servers", {"server": {
        "name": "vm", "flavorRef": flavor, "imageRef": image, "networks": "none"}},
        token=token)
    return response.json()["server"]["id"], _request_id(response)


def test_create_resize_confirm_delete_leave_their_actions(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([fake_host("a", memory_mb=65536), fake_host("b")])
    small, image = cloud.flavor("small"), cloud.image("raw", "raw")
    uuid, created = _boot(cloud, small, image)
    assert cloud.wait(uuid)["OS-EXT-SRV-ATTR:host"] == "a"
    resized = _request_id(cloud.action(uuid, {"resize": {"flavorRef": cloud.flavor(
        "bigger", vcpus=2)}}))
    assert cloud.wait(uuid)["status"] == "VERIFY_RESIZE"
    confirmed = _request_id(cloud.action(uuid, {"confirmResize": None}))
    assert cloud.wait(uuid)["status"] == "ACTIVE"
    deleted = _request_id(cloud.call("DELETE", f"/servers/{uuid}"))
    assert cloud.wait(uuid)["status"] == "DELETED"

    # Newest first, each under the request id its answer carried; readable once the
    # server is deleted (2.21), and not before 2.21.
    listed = _actions(cloud, uuid)
    assert [(a["action"], a["request_id"]) for a in listed] == [
        ("delete", deleted), ("confirmResize", confirmed), ("resize", resized),
        ("create", created)]
    assert {(a["instance_uuid"], a["user_id"], a["project_id"], a["message"])
            for a in listed} == {(uuid, "admin", "admin", None)}
    assert cloud.call("GET", f"/servers/{uuid}/os-instance-actions",
                      version="2.20").status_code == 404
    assert _actions(cloud, uuid, version="2.21")

    # Each step an event, newest first, on the host it ran on.
    def steps(request_id: str) -> list[tuple[str, str, str]]:
        events = _action(cloud, uuid, request_id)["events"]
        assert all(e["finish_time"] is not None for e in events), events
        assert all(e["hostId"] == _host_id("admin", e["host"]) for e in events)
        assert all(e["details"] is None and e["traceback"] is None for e in events)
        return [(e["event"], e["result"], e["host"]) for e in events]

    conductor = str(cloud.state.conf.host)
    assert steps(created) == [(Event.BUILD_AND_RUN, "Success", "a"),
                              (Event.SCHEDULE_AND_BUILD, "Success", conductor)]
    assert steps(resized) == [(Event.PREP_RESIZE, "Success", "b"),
                              (Event.MIGRATE_SERVER, "Success", conductor)]
    assert steps(confirmed) == [(Event.CONFIRM_RESIZE, "Success", "a")]
    assert steps(deleted) == [(Event.TERMINATE, "Success", "b")]


def test_a_failed_build_is_an_error(make_cloud: Any) -> None:
    """Every host refuses the spawn: each attempt is an Error event saying why, and the
    action's message is "Error"; what failed (details, host, traceback) only for the
    admin. No host at all: the scheduling step is the Error."""
    cloud: Cloud = make_cloud([fake_host("refuser-a", unsupported=[VMXNET3]),
                               fake_host("refuser-b", unsupported=[VMXNET3])],
                              scheduler={"max_attempts": 2})
    flavor = cloud.flavor("small")
    image = cloud.image("vmx", "raw", {"hw_vif_model": "vmxnet3"})
    uuid, created = _boot(cloud, flavor, image, token=ALICE)
    assert cloud.wait(uuid)["status"] == "ERROR"
    action = _action(cloud, uuid, created)
    assert action["message"] == "Error"
    events = action["events"]
    assert [(e["event"], e["result"]) for e in events] == [
        (Event.BUILD_AND_RUN, "Error"), (Event.BUILD_AND_RUN, "Error"),
        (Event.SCHEDULE_AND_BUILD, "Success")]
    assert sorted(e["host"] for e in events[:2]) == ["refuser-a", "refuser-b"]
    assert all("UnsupportedHardware" in e["details"] for e in events[:2]), events
    # The owner: events (2.51), hashed hosts (2.62), no details, host or traceback.
    owned = _action(cloud, uuid, created, token=ALICE)
    assert owned["message"] == "Error"
    assert [set(e) for e in owned["events"]] == [EVENT_KEYS | {"hostId"}] * 3
    assert {e["hostId"] for e in owned["events"][:2]} == {
        _host_id("project-a", "refuser-a"), _host_id("project-a", "refuser-b")}

    hungry = cloud.flavor("hungry", ram=10**6)
    uuid, created = _boot(cloud, hungry, image, token=ALICE)
    assert cloud.wait(uuid)["status"] == "ERROR"
    action = _action(cloud, uuid, created)
    assert action["message"] == "Error"
    (event,) = action["events"]
    assert (event["event"], event["result"]) == (Event.SCHEDULE_AND_BUILD, "Error")
    assert event["details"].startswith("No valid host was found.")


# (version, as admin) -> the keys of an action, and of its events (None: no events).
SHAPES = [
    ("2.1", True, ACTION_KEYS, EVENT_KEYS | {"traceback"}),
    ("2.1", False, ACTION_KEYS, None),
    ("2.21", False, ACTION_KEYS, None),
    ("2.51", True, ACTION_KEYS, EVENT_KEYS | {"traceback"}),
    ("2.51", False, ACTION_KEYS, EVENT_KEYS),
    ("2.58", True, ACTION_KEYS | {"updated_at"}, EVENT_KEYS | {"traceback"}),
    ("2.58", False, ACTION_KEYS | {"updated_at"}, EVENT_KEYS),
    ("2.62", True, ACTION_KEYS | {"updated_at"}, EVENT_KEYS | {"traceback", "host",
                                                               "hostId"}),
    ("2.62", False, ACTION_KEYS | {"updated_at"}, EVENT_KEYS | {"hostId"}),
    ("2.84", True, ACTION_KEYS | {"updated_at"}, EVENT_KEYS | {"traceback", "host",
                                                               "hostId", "details"}),
    ("2.84", False, ACTION_KEYS | {"updated_at"}, EVENT_KEYS | {"hostId"}),
]


@pytest.fixture
def booted(make_cloud: Any) -> tuple[Cloud, str, str]:
    cloud: Cloud = make_cloud([fake_host("a")])
    uuid, created = _boot(cloud, cloud.flavor("small"), cloud.image("raw", "raw"),
                          token=ALICE)
    assert cloud.wait(uuid)["status"] == "ACTIVE"
    return cloud, uuid, created


def test_bodies_have_novas_keys_at_each_version(booted: tuple[Cloud, str, str]) -> None:
    cloud, uuid, created = booted
    for version, admin, action_keys, event_keys in SHAPES:
        token = None if admin else ALICE
        case = (version, admin)
        response = cloud.call("GET", f"/servers/{uuid}/os-instance-actions", token=token,
                              version=version)
        assert set(response.json()) == {"instanceActions"}, case  # a short page: no links
        (listed,) = response.json()["instanceActions"]
        assert set(listed) == action_keys, case
        shown = _action(cloud, uuid, created, version=version, token=token)
        assert set(shown) - {"events"} == action_keys, case
        if event_keys is None:
            assert "events" not in shown, case
            continue
        assert [set(e) for e in shown["events"]] == [event_keys] * 2, case
        assert (shown["action"], shown["user_id"], shown["project_id"]) == (
            "create", "alice", "project-a")
        if "hostId" in event_keys:
            assert shown["events"][0]["hostId"] == _host_id("project-a", "a")


def test_paging_and_changes_since(booted: tuple[Cloud, str, str]) -> None:
    cloud, uuid, created = booted
    image = cloud.show(uuid)["image"]["id"]
    rebuilt = []
    for _ in range(3):
        rebuilt.append(_request_id(cloud.action(uuid, {"rebuild": {"imageRef": image}})))
        assert cloud.wait(uuid)["status"] == "ACTIVE"
    newest_first = [*reversed(rebuilt), created]
    every = _actions(cloud, uuid, version="2.58")
    assert [a["request_id"] for a in every] == newest_first

    response = cloud.call("GET", f"/servers/{uuid}/os-instance-actions?limit=2",
                          version="2.58")
    first = response.json()
    assert [a["request_id"] for a in first["instanceActions"]] == newest_first[:2]
    (link,) = first["links"]
    assert link["rel"] == "next" and f"marker={newest_first[1]}" in link["href"]
    assert "limit=2" in link["href"]
    rest = _actions(cloud, uuid, f"?limit=2&marker={newest_first[1]}", version="2.58")
    assert [a["request_id"] for a in rest] == newest_first[2:]
    assert _actions(cloud, uuid, "?limit=0", version="2.58") == []

    # changes-since: at or after an action's last change (its events' ends).
    since = every[1]["updated_at"]
    assert [a["request_id"] for a in _actions(cloud, uuid, f"?changes-since={since}",
                                              version="2.58")] == newest_first[:2]
    before = every[2]["updated_at"]
    assert [a["request_id"] for a in _actions(cloud, uuid, f"?changes-before={before}",
                                              version="2.66")] == newest_first[2:]

    for query, version, words in (
            ("?marker=req-nope", "2.58", "Marker req-nope could not be found."),
            ("?limit=-1", "2.58", "limit"),
            ("?colour=blue", "2.58", "colour"),
            (f"?changes-before={before}", "2.65", "changes-before"),
            ("?changes-since=yesterday", "2.58", "changes-since"),
            (f"?changes-since={since}&changes-before={before}", "2.66",
             "changes-since must be less than or equal to changes-before")):
        response = cloud.call("GET", f"/servers/{uuid}/os-instance-actions{query}",
                              version=version)
        assert response.status_code == 400, (query, response.text)
        assert words in response.json()["badRequest"]["message"], (query, response.text)
    # Before 2.58 the list is not paged, and nova's schema lets anything through.
    assert len(_actions(cloud, uuid, "?limit=1&colour=blue", version="2.57")) == 4


def test_another_project_sees_nothing(booted: tuple[Cloud, str, str]) -> None:
    cloud, uuid, created = booted
    for path in (f"/servers/{uuid}/os-instance-actions",
                 f"/servers/{uuid}/os-instance-actions/{created}"):
        response = cloud.call("GET", path, token=BOB)
        assert response.status_code == 404, response.text
        assert response.json()["itemNotFound"]["message"] == (
            f"Instance {uuid} could not be found.")
    missing = cloud.call("GET", f"/servers/{uuid}/os-instance-actions/req-nope",
                         token=ALICE)
    assert missing.status_code == 404
    assert missing.json()["itemNotFound"]["message"] == "Action req-nope not found"


def test_on_postgresql(make_cloud: Any, postgresql_url: str) -> None:
    """The same statements on PostgreSQL (driver SQL): a build and a delete."""
    cloud: Cloud = make_cloud([fake_host("a")], database_url=postgresql_url)
    uuid, created = _boot(cloud, cloud.flavor("small"), cloud.image("raw", "raw"))
    assert cloud.wait(uuid)["status"] == "ACTIVE"
    deleted = _request_id(cloud.call("DELETE", f"/servers/{uuid}"))
    assert cloud.wait(uuid)["status"] == "DELETED"
    assert [a["request_id"] for a in _actions(cloud, uuid)] == [deleted, created]
    events = _action(cloud, uuid, created)["events"]
    assert [(e["event"], e["result"], e["host"]) for e in events] == [
        (Event.BUILD_AND_RUN, "Success", "a"),
        (Event.SCHEDULE_AND_BUILD, "Success", str(cloud.state.conf.host))]


# What a case reads of the cloud at a version (GateCase's, for a servers cloud).
Observe = Callable[[Cloud, Version], object]


class GateCase(NamedTuple):
    """What ``observe`` sees just before ``gate`` and at it."""

    gate: mv.Gate
    what: str
    observe: Observe
    before: object
    at: object


def _show_keys(uuid: str, request_id: str, token: str | None = None) -> Observe:
    """The keys of the action's first event; None when it shows no events."""
    def observe(cloud: Cloud, at: Version) -> object:
        shown = _action(cloud, uuid, request_id, version=str(at), token=token)
        return sorted(shown["events"][0]) if "events" in shown else None
    return observe


def _listing(uuid: str, query: str = "") -> Observe:
    """The status of the list, and the keys of its first action."""
    def observe(cloud: Cloud, at: Version) -> object:
        response = cloud.call("GET", f"/servers/{uuid}/os-instance-actions{query}",
                              version=str(at))
        if response.status_code != 200:
            return response.status_code
        return [sorted(a) for a in response.json()["instanceActions"]]
    return observe


def test_the_answers_change_exactly_at_the_gates(booted: tuple[Cloud, str, str]) -> None:
    cloud, uuid, created = booted
    gone, _ = _boot(cloud, cloud.flavor("other"), cloud.image("raw2", "raw"))
    cloud.wait(gone)
    cloud.call("DELETE", f"/servers/{gone}")
    assert cloud.wait(gone)["status"] == "DELETED"
    listed = sorted(ACTION_KEYS)
    paged = sorted(ACTION_KEYS | {"updated_at"})
    cases = [
        GateCase(mv.ACTIONS_OF_DELETED, "a deleted server's actions",
                 lambda cloud, at: _listing(gone)(cloud, at) == 404, True, False),
        GateCase(mv.ACTION_EVENTS_SHOWN, "events for the owner",
                 _show_keys(uuid, created, ALICE), None, sorted(EVENT_KEYS)),
        GateCase(mv.ACTION_PAGING, "updated_at", _listing(uuid), [listed], [paged]),
        GateCase(mv.ACTION_PAGING, "an unknown parameter", _listing(uuid, "?colour=red"),
                 [listed], 400),
        GateCase(mv.ACTION_EVENT_HOSTS, "host and hostId", _show_keys(uuid, created),
                 sorted(EVENT_KEYS | {"traceback"}),
                 sorted(EVENT_KEYS | {"traceback", "host", "hostId"})),
        GateCase(mv.ACTION_CHANGES_BEFORE, "changes-before",
                 _listing(uuid, "?changes-before=2000-01-01T00:00:00Z"), 400, []),
        GateCase(mv.ACTION_EVENT_DETAILS, "details", _show_keys(uuid, created),
                 sorted(EVENT_KEYS | {"traceback", "host", "hostId"}),
                 sorted(EVENT_KEYS | {"traceback", "host", "hostId", "details"})),
    ]
    assert {g for g in mv.GATES if g.resource == "os-instance-actions"} == {
        case.gate for case in cases}
    seen = [(case.what, case.observe(cloud, just_before(case.gate)),
             case.observe(cloud, case.gate.version)) for case in cases]
    assert seen == [(case.what, case.before, case.at) for case in cases]
