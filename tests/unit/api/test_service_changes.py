"""The pure parts of os-services: the shape of a service by version, the bodies each era
takes, and what each action changes and answers."""

from __future__ import annotations

import datetime

import pytest

from moorage.api.availability_zones import host_zones
from moorage.api.errors import ApiError, BadRequest, NotFound
from moorage.api.handlers.path_ids import integer_id, uuid_id
from moorage.api.handlers.service_changes import (
    ServiceAction,
    action_answer,
    action_request,
    change_of,
    check_body,
)
from moorage.api.handlers.service_views import service_view, zone_of_host
from moorage.api.microversion import Version
from moorage.api.storage.services import OperatorChange, ServiceRecord
from moorage.jsonvalue import JSONValue
from moorage.scheduler.types import Aggregate

SERVICE = ServiceRecord(id=4, uuid="9d0c3b1e-2f4a-4c5d-8e6f-7a8b9c0d1e2f", host="h1",
                        binary="nova-compute", driver="fake", nodes=["h1"],
                        agent_url=None, updated_at=datetime.datetime(2026, 2, 3, 4, 5, 6))
HOST = {"host": "h1", "binary": "nova-compute"}


@pytest.mark.parametrize(("version", "ident", "forced_down"), [
    ("2.1", 4, False), ("2.10", 4, False), ("2.11", 4, True), ("2.52", 4, True),
    ("2.53", SERVICE.uuid, True), ("2.100", SERVICE.uuid, True),
])
def test_a_service_by_version(version: str, ident: object, forced_down: bool) -> None:
    view = service_view(SERVICE, up=True, zone="nova", version=Version.of(version))
    assert view["id"] == ident
    assert ("forced_down" in view) is forced_down
    assert view["updated_at"] == "2026-02-03T04:05:06"


def test_zones_of_hosts() -> None:
    zones = host_zones([Aggregate("u1", "a", frozenset({"h1", "h2"}), {}, "az2"),
                        Aggregate("u2", "b", frozenset({"h1"}), {"availability_zone": "az1"}),
                        Aggregate("u3", "c", frozenset({"h3"}), {})])
    assert [zone_of_host(zones, h) for h in ("h1", "h2", "h3")] == ["az1,az2", "az2", "nova"]


@pytest.mark.parametrize(("version", "body", "words"), [
    ("2.1", {**HOST, "forced_down": True}, "'forced_down' was unexpected"),
    ("2.11", {"host": "h1"}, "'binary' is a required property"),
    ("2.52", {**HOST, "status": "enabled"}, "'status' was unexpected"),
    ("2.53", HOST, "'binary', 'host' were unexpected"),
    ("2.53", {"status": "off"}, "allowed: enabled, disabled"),
])
def test_each_era_refuses_the_others_bodies(version: str, body: dict[str, JSONValue],
                                            words: str) -> None:
    with pytest.raises(BadRequest) as refused:
        check_body(body, Version.of(version))
    assert words in refused.value.message


@pytest.mark.parametrize(("name", "body", "change", "answer"), [
    ("enable", HOST, OperatorChange(disabled=False), {**HOST, "status": "enabled"}),
    ("disable", {**HOST, "disabled_reason": "ignored"}, OperatorChange(disabled=True),
     {**HOST, "status": "disabled"}),
    ("disable-log-reason", {**HOST, "disabled_reason": "r"},
     OperatorChange(disabled=True, disabled_reason="r"),
     {**HOST, "status": "disabled", "disabled_reason": "r"}),
    ("force-down", {**HOST, "forced_down": "yes"}, OperatorChange(forced_down=True),
     {**HOST, "forced_down": True}),
])
def test_actions_before_2_53(name: str, body: dict[str, JSONValue], change: OperatorChange,
                             answer: dict[str, JSONValue]) -> None:
    request = action_request(name, body, Version(2, 52))
    assert (request.action, request.change) == (ServiceAction(name), change)
    assert action_answer(request) == answer


@pytest.mark.parametrize(("name", "version", "body", "error", "words"), [
    ("force-down", "2.10", HOST, NotFound, "Unknown action"),
    ("frobnicate", "2.52", HOST, NotFound, "Unknown action"),
    ("disable-log-reason", "2.1", HOST, BadRequest, "Missing disabled reason field"),
    ("force-down", "2.11", HOST, BadRequest, "Missing forced_down field"),
])
def test_action_refusals(name: str, version: str, body: dict[str, JSONValue],
                         error: type[ApiError], words: str) -> None:
    with pytest.raises(error, match=words):
        action_request(name, body, Version.of(version))


def test_the_2_53_change() -> None:
    assert change_of({"status": "disabled", "disabled_reason": "r", "forced_down": "0"}) == \
        OperatorChange(disabled=True, disabled_reason="r", forced_down=False)
    assert change_of({"status": "enabled"}) == OperatorChange(disabled=False)
    for body, words in [({}, "No updates were requested"),
                        ({"disabled_reason": "r"}, "only allowed with status 'disabled'"),
                        ({"status": "enabled", "disabled_reason": "r"}, "only allowed")]:
        with pytest.raises(BadRequest, match=words):
            change_of(body)


@pytest.mark.parametrize(("text", "integer", "uuid"), [
    ("7", 7, None), (" 7", 7, None), ("-1", -1, None), ("³", None, None), ("٣", None, None),
    ("h1", None, None),
    ("9D0C3B1E2F4A4C5D8E6F7A8B9C0D1E2F", None, "9d0c3b1e-2f4a-4c5d-8e6f-7a8b9c0d1e2f"),
    ("{9d0c3b1e-2f4a-4c5d-8e6f-7a8b9c0d1e2f}", None, "9d0c3b1e-2f4a-4c5d-8e6f-7a8b9c0d1e2f"),
])
def test_path_ids(text: str, integer: int | None, uuid: str | None) -> None:
    assert (integer_id(text), uuid_id(text)) == (integer, uuid)
