"""A sequential keep-alive placement client that times each call until its body is read.

The clock starts before the request is sent and stops once the last byte of the
response body has arrived: JSON encoding happens before, decoding after. A server
that answers ``Connection: close`` (upstream under gunicorn sync) costs a new TCP
connection per call, and that cost is part of its time, as for any real client.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from workload import MICROVERSION

# The connection dropped before a response: the server closed an idle keep-alive
# connection. Nothing was processed, so the call is sent again on a new one.
_STALE_CONNECTION = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    seconds: float

    def json(self) -> Any:
        return json.loads(self.body)

    def problem(self) -> str:
        """A one-line description of an unexpected answer, for the result table."""
        detail = self.body[:300].decode(errors="replace")
        try:
            errors = json.loads(self.body)["errors"]
            detail = str(errors[0].get("detail") or errors[0].get("title") or detail)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            pass
        # webob's error details open with the status's stock sentence: keep what follows.
        paragraphs = [p for p in detail.split("\n\n") if p.strip()]
        text = " ".join((paragraphs[-1] if paragraphs else "").split())[:100]
        return f"HTTP {self.status}: {text}" if text else f"HTTP {self.status}"


class PlacementClient:
    """One HTTP connection to one placement server, used by one thread."""

    def __init__(
        self, base_url: str, *, version: str = MICROVERSION, token: str = "admin",
        timeout: float = 600.0,
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.hostname is None:
            raise ValueError(f"not an http URL: {base_url!r}")
        self._conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        self._prefix = parts.path.rstrip("/")
        self._headers = {
            "Accept": "application/json",
            "OpenStack-API-Version": f"placement {version}",
            "X-Auth-Token": token,
        }

    def call(self, method: str, path: str, body: object = None) -> Reply:
        payload = None if body is None else json.dumps(body).encode()
        headers = dict(self._headers)
        if payload is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            start = time.perf_counter()
            try:
                self._conn.request(method, self._prefix + path, body=payload, headers=headers)
                response = self._conn.getresponse()
                data = response.read()
            except _STALE_CONNECTION:
                self._conn.close()
                if attempt == 2:
                    raise
                continue
            return Reply(response.status, data, time.perf_counter() - start)
        raise AssertionError("unreachable")

    def get(self, path: str) -> Reply:
        return self.call("GET", path)

    def put(self, path: str, body: object) -> Reply:
        return self.call("PUT", path, body)

    def post(self, path: str, body: object) -> Reply:
        return self.call("POST", path, body)

    def close(self) -> None:
        self._conn.close()
