"""The agent's WSGI application called directly: routing, token, errors."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from moorage.compute.agent import ComputeAgent
from moorage.compute.service import MAX_BODY, make_app, token_matches
from moorage.conf import load_config
from moorage.placement.client import PlacementClient
from moorage.placement.launcher import free_port
from moorage.virt.fake import FakeDriver, FakeHost


def _call(token: str | None, method: str, path: str, body: bytes = b"",
          headers: dict[str, str] | None = None) -> tuple[str, dict[str, str], Any]:
    conf = load_config([], [("DEFAULT", "host", "h1")])
    agent = ComputeAgent(conf, FakeDriver(conf, FakeHost(nodes=("h1",))),
                         PlacementClient(f"http://127.0.0.1:{free_port()}"))
    environ: dict[str, Any] = {"REQUEST_METHOD": method, "PATH_INFO": path,
                               "CONTENT_LENGTH": str(len(body)),
                               "wsgi.input": io.BytesIO(body)}
    environ.update({f"HTTP_{k.upper().replace('-', '_')}": v
                    for k, v in (headers or {}).items()})
    seen: dict[str, Any] = {}

    def start_response(status: str, response_headers: list[tuple[str, str]]) -> None:
        seen["status"], seen["headers"] = status, dict(response_headers)

    data = b"".join(make_app(agent, token)(environ, start_response))
    return seen["status"], seen["headers"], json.loads(data) if data else None


def test_the_token_is_checked_when_set() -> None:
    status, _, body = _call("s3cret", "GET", "/")
    assert status == "401 Unauthorized"
    assert body == {"error": {"message": "a valid X-Service-Token header is required"}}
    assert _call("s3cret", "GET", "/", headers={"X-Service-Token": "wrong"})[0].startswith("401")
    status, _, body = _call("s3cret", "GET", "/", headers={"X-Service-Token": "s3cret"})
    assert status == "200 OK" and body["host"] == "h1" and body["nodes"] == ["h1"]


def test_no_token_is_development_mode() -> None:
    assert token_matches(None, None) and token_matches(None, "anything")
    assert not token_matches("a", None) and not token_matches("a", "b")


@pytest.mark.parametrize(("method", "path", "body", "status", "message"), [
    ("GET", "/nowhere", b"", "404 Not Found", "no such resource: /nowhere"),
    ("PATCH", "/guests", b"", "405 Method Not Allowed",
     "PATCH is not allowed on /guests; allowed: GET, POST"),
    ("POST", "/guests", b"", "400 Bad Request", "a JSON body is required"),
    ("POST", "/guests", b"{nope", "400 Bad Request", "the body is not valid JSON"),
    ("POST", "/guests", b"[]", "400 Bad Request", 'the body must be a JSON object'),
    ("PUT", "/service", b'{"disabled": "yes"}', "400 Bad Request",
     'the body must be {"disabled": true|false}'),
    ("POST", "/guests", b" " * (MAX_BODY + 1), "413 Request Entity Too Large",
     f"the limit is {MAX_BODY}"),
])
def test_bad_requests_are_named(method: str, path: str, body: bytes, status: str,
                                message: str) -> None:
    got, headers, answer = _call(None, method, path, body)
    assert got == status
    assert message in answer["error"]["message"]
    assert headers["content-type"] == "application/json"
