"""A minimal Keystone v3 identity endpoint for tests: what keystonemiddleware's
auth_token asks of Keystone, answered over real HTTP.

    GET  /, /v3                 version discovery
    POST /v3/auth/tokens        the service user's password -> a token (X-Subject-Token)
                                with a catalog naming this endpoint as the identity service
    GET  /v3/auth/tokens        validate X-Subject-Token (the caller's X-Auth-Token must be
                                a token this endpoint issued): 200 with the token, or 404

Users' tokens are made by the test (``issue``): a project, a user and roles, as
Keystone would return them. Every request is recorded, so a test can tell that a
token was really validated here.
"""

from __future__ import annotations

import json
import secrets
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EXPIRES = "2099-12-31T23:59:59.000000Z"
ISSUED = "2024-01-01T00:00:00.000000Z"
DOMAIN = {"id": "default", "name": "Default"}


@dataclass(frozen=True)
class Identity:
    """Whom a token stands for."""

    user_id: str
    project_id: str
    roles: tuple[str, ...]


@dataclass
class IdentityServer:
    """The endpoint, on a free port of 127.0.0.1 once started."""

    service_user: str = "moorage"
    service_password: str = "service-secret"
    tokens: dict[str, Identity] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def issue(self, user_id: str, project_id: str, *roles: str) -> str:
        """A new valid token for ``user_id`` in ``project_id`` with ``roles``."""
        token = "tok-" + secrets.token_hex(16)
        self.tokens[token] = Identity(user_id, project_id, roles)
        return token

    def validations(self) -> int:
        """How many token validations were asked of this endpoint."""
        return sum(1 for request in self.requests if request == ("GET", "/v3/auth/tokens"))

    # -- the documents -----------------------------------------------------------------
    def _version(self) -> dict[str, Any]:
        return {"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
                "links": [{"rel": "self", "href": f"{self.url}/v3/"}],
                "media-types": [{"base": "application/json",
                                 "type": "application/vnd.openstack.identity-v3+json"}]}

    def _token_body(self, identity: Identity) -> dict[str, Any]:
        endpoints = [{"id": f"identity-{interface}", "interface": interface,
                      "region": "RegionOne", "region_id": "RegionOne",
                      "url": f"{self.url}/v3"}
                     for interface in ("public", "internal", "admin")]
        return {"token": {
            "methods": ["password"], "expires_at": EXPIRES, "issued_at": ISSUED,
            "audit_ids": [secrets.token_hex(8)],
            "user": {"id": identity.user_id, "name": identity.user_id, "domain": DOMAIN},
            "project": {"id": identity.project_id, "name": identity.project_id,
                        "domain": DOMAIN},
            "roles": [{"id": f"role-{name}", "name": name} for name in identity.roles],
            "catalog": [{"id": "identity", "type": "identity", "name": "keystone",
                         "endpoints": endpoints}],
        }}

    def _authenticate(self, body: Any) -> str | None:
        """The service user's password authentication -> a new token, or None."""
        try:
            user = body["auth"]["identity"]["password"]["user"]
        except (KeyError, TypeError):
            return None
        if (user.get("name") != self.service_user
                or user.get("password") != self.service_password):
            return None
        return self.issue(f"{self.service_user}-id", "service", "service", "admin")

    # -- serving -------------------------------------------------------------------------
    def start(self) -> IdentityServer:
        identity = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: object,
                        headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _not_found(self) -> None:
                self._answer(404, {"error": {"code": 404, "title": "Not Found",
                                             "message": "not found"}})

            def do_GET(self) -> None:
                path = self.path.split("?")[0].rstrip("/")
                identity.requests.append(("GET", path))
                if path == "":
                    self._answer(300, {"versions": {"values": [identity._version()]}})
                elif path == "/v3":
                    self._answer(200, {"version": identity._version()})
                elif path == "/v3/auth/tokens":
                    caller = identity.tokens.get(self.headers.get("X-Auth-Token", ""))
                    if caller is None:
                        self._answer(401, {"error": {"code": 401, "title": "Unauthorized",
                                                     "message": "the caller's token"}})
                        return
                    subject = self.headers.get("X-Subject-Token", "")
                    found = identity.tokens.get(subject)
                    if found is None:
                        self._not_found()
                        return
                    self._answer(200, identity._token_body(found),
                                 {"X-Subject-Token": subject})
                else:
                    self._not_found()

            def do_POST(self) -> None:
                path = self.path.split("?")[0].rstrip("/")
                identity.requests.append(("POST", path))
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"null")
                except ValueError:
                    body = None
                if path != "/v3/auth/tokens":
                    self._not_found()
                    return
                token = identity._authenticate(body)
                if token is None:
                    self._answer(401, {"error": {"code": 401, "title": "Unauthorized",
                                                 "message": "bad credentials"}})
                    return
                self._answer(201, identity._token_body(identity.tokens[token]),
                             {"X-Subject-Token": token})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True,
                         name="identity").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def authtoken_section(self) -> dict[str, object]:
        """The ``[keystone_authtoken]`` options that point a service at this endpoint."""
        return {"www_authenticate_uri": f"{self.url}/v3", "auth_url": f"{self.url}/v3",
                "auth_type": "password", "username": self.service_user,
                "password": self.service_password, "project_name": "service",
                "user_domain_name": "Default", "project_domain_name": "Default",
                # No memcached in the tests: the in-process cache, and a token
                # validated once per test anyway.
                "token_cache_time": -1}
