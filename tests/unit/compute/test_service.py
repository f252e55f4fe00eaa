"""The agent's WSGI application called directly: routing, token, errors."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from moorage.compute.agent import ComputeAgent
from moorage.compute.service import MAX_BODY, make_app
from moorage.conf import load_config
from moorage.internal_access import InternalAccess
from moorage.placement.client import PlacementClient
from moorage.placement.launcher import free_port
from moorage.virt.fake import FakeDriver, FakeHost


def _call(access: InternalAccess, method: str, path: str, body: bytes = b"",
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

    data = b"".join(make_app(agent, access)(environ, start_response))
    return seen["status"], seen["headers"], json.loads(data) if data else None


GUARDED = InternalAccess("s3cret")
# The bad requests below are about the body, not the token: the development flag.
OPEN = InternalAccess(None, anonymous_writes=True)


def test_the_token_is_checked_when_set() -> None:
    status, _, body = _call(GUARDED, "GET", "/")
    assert status == "401 Unauthorized"
    assert body == {"error": {"message": "a valid X-Service-Token header is required "
                                         "([DEFAULT] service_token)"}}
    assert _call(GUARDED, "GET", "/", headers={"X-Service-Token": "wrong"})[0].startswith("401")
    status, _, body = _call(GUARDED, "GET", "/", headers={"X-Service-Token": "s3cret"})
    assert status == "200 OK" and body["host"] == "h1" and body["nodes"] == ["h1"]


def test_without_a_token_writes_are_refused_reads_answered() -> None:
    closed = InternalAccess(None)
    status, _, body = _call(closed, "PUT", "/service", b'{"disabled": true}')
    assert status == "401 Unauthorized"
    assert body["error"]["message"].startswith("anonymous PUT refused")
    assert _call(closed, "GET", "/guests")[0] == "200 OK"
    assert _call(OPEN, "PUT", "/service", b'{"disabled": true}')[0] == "200 OK"


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
    got, headers, answer = _call(OPEN, method, path, body)
    assert got == status
    assert message in answer["error"]["message"]
    assert headers["content-type"] == "application/json"
