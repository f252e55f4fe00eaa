"""A fleet's heartbeat keeps each request under the body size it is given, whatever the
size of its hosts' reports: the large example's first beat (2,000 hosts reported in full,
about a kilobyte each) was 2 MB, which the compute API refused with 413, so the example
could not start."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from moorage.compute.registration import MAX_BEAT_BODY, FleetHeartbeat
from moorage.conf import load_config
from moorage.web import ThreadedServer


@dataclass
class _Agent:
    disabled: bool = False


@dataclass
class _Reporter:
    """A host's side of the beat with a report of about ``size`` bytes."""

    name: str
    size: int
    agent: _Agent = field(default_factory=_Agent)
    destroy_pending: bool = False

    def report(self) -> dict[str, Any]:
        return {"driver": "fake", "nodes": [self.name], "refused": {self.name: [
            f"COMPUTE_TRAIT_{i:04d}" for i in range(self.size // 24)]}}


class _Api:
    """Stands in for the compute API's ``PUT /internal/services``: records each body,
    refuses one over ``limit`` bytes as the API does (413), knows every host."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.bodies: list[bytes] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        self.bodies.append(body)
        if len(body) > self.limit:
            start_response("413 Request Entity Too Large",
                           [("Content-Type", "application/json")])
            return [b'{"overLimit": {"code": 413}}']
        hosts = [s["host"] for s in json.loads(body)["services"]]
        hosts += json.loads(body)["alive"]
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps({"services": {h: {"disabled": False} for h in hosts}}).encode()]


@pytest.fixture
def api() -> Iterator[tuple[_Api, str]]:
    app = _Api(limit=64 * 1024)
    server = ThreadedServer(app, "127.0.0.1", 0).start()
    yield app, server.url
    server.stop()


def test_a_first_beat_of_large_reports_is_sent_in_parts_under_the_limit(
        api: tuple[_Api, str]) -> None:
    app, url = api
    reporters = {f"host-{i:04d}": _Reporter(f"host-{i:04d}", 1000) for i in range(300)}
    beat = FleetHeartbeat(reporters, url, token=None, interval=1, timeout=10,  # type: ignore[arg-type]
                          max_body=32 * 1024)
    assert beat.beat().problem is None
    assert len(app.bodies) > 1
    assert all(len(body) <= 32 * 1024 for body in app.bodies), [len(b) for b in app.bodies]
    reported = [s["host"] for body in app.bodies for s in json.loads(body)["services"]]
    assert sorted(reported) == sorted(reporters)
    # Reported once, the hosts go as names only: one small request.
    app.bodies.clear()
    assert beat.beat().problem is None
    [body] = app.bodies
    assert sorted(json.loads(body)["alive"]) == sorted(reporters)
    assert json.loads(body)["services"] == []


def test_the_host_count_still_bounds_a_part(api: tuple[_Api, str]) -> None:
    app, url = api
    reporters = {f"h{i}": _Reporter(f"h{i}", 30) for i in range(25)}
    beat = FleetHeartbeat(reporters, url, token=None, interval=1, timeout=10,  # type: ignore[arg-type]
                          chunk=10)
    assert beat.beat().problem is None
    assert [len(json.loads(b)["services"]) for b in app.bodies] == [10, 10, 5]


def test_the_default_part_fits_the_compute_apis_default_limit() -> None:
    # A part may overshoot its estimate by a little (the JSON's punctuation).
    assert int(load_config([], []).api.max_request_body_size) > MAX_BEAT_BODY * 1.5
