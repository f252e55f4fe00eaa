"""An attacker's input against every route of the three services a client reaches: the
compute API, placement and a compute agent, each a real process (granian), on SQLite
and on PostgreSQL.

For every route and method of each service's own route table:

- a JSON body nested far past ``web.MAX_JSON_DEPTH``, as the whole body and inside
  each key the route's schema expects (a body 1,000 deep was a 500: the validators
  recurse while building their message);
- integers beyond any column (2**63, -2**63 - 1, 10**30) in every path parameter and
  every query parameter, and in every integer field of the route's body;
- control characters (newline, carriage return, ESC, NEL, U+2028) in path segments
  and query values, written to try to forge a log line;
- a microversion in non-ASCII digits, sent as raw UTF-8 bytes.

No answer may be a 5xx; the deep bodies and the microversion are a 400. Each
service's log holds the forged text only escaped: no line of its own, no ESC byte.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
import requests

from moorage.api.launcher import AgentProcess, ComputeApiProcess
from moorage.compute.service import ROUTES as AGENT_ROUTES
from moorage.internal_access import TOKEN_HEADER
from moorage.placement.launcher import PlacementProcess, ServerProcess
from moorage.placement.routes import ROUTES as PLACEMENT_ROUTES
from moorage.web import MAX_JSON_DEPTH
from tests.conftest import _fresh_postgresql

SERVICE_TOKEN = "hostile-service-token"
ADMIN = {"X-Auth-Token": "admin", TOKEN_HEADER: SERVICE_TOKEN}
JSON_ADMIN = {**ADMIN, "Content-Type": "application/json"}
WRITES = ("POST", "PUT", "PATCH")

HUGE = ["9223372036854775808", "-9223372036854775809", "1000000000000000000000000000000"]
HUGE_NUMBERS = [2**63, -(2**63) - 1, 10**30]
# Each starts a new line, or steers a terminal, if written raw.
FORGED = "FORGED request line"
CONTROLS = [f"\n{FORGED}", f"\r{FORGED}", f"\x1b[31m{FORGED}", f"\x85{FORGED}",
            f"\u2028{FORGED}"]


def deep(depth: int) -> str:
    """JSON text nested ``depth`` deep, objects and arrays in turn (no encoder nests
    that far)."""
    opening = "".join('{"k":' if level % 2 == 0 else "[" for level in range(depth))
    closing = "".join("}" if level % 2 == 0 else "]" for level in reversed(range(depth)))
    return opening + "0" + closing


# Where a probe's body holds DEEP's text.
DEEP = "\u2063deep\u2063"
DEEP_TEXT = deep(1000)


@dataclass
class Probe:
    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    body: Any = None

    def data(self) -> str | None:
        if self.body is None:
            return None
        if isinstance(self.body, str):  # JSON text as it stands
            return self.body
        return json.dumps(self.body).replace(json.dumps(DEEP), DEEP_TEXT)

    def describe(self) -> str:
        return f"{self.method} {self.path} {self.query} {(self.data() or '')[:120]}"


MADE_UP = "d0a4b8e2-5c1f-4e9a-9b7d-1c2e3f4a5b6c"


def _fill(template: str, ids: dict[str, str], value: str | None = None) -> str:
    """``template`` with each ``{name}`` replaced by ``value`` (quoted), or by the id of
    what exists (``ids``), or by a made-up one."""
    path = template
    while "{" in path:
        start, end = path.index("{"), path.index("}")
        name = path[start + 1:end]
        found = value if value is not None else ids.get(name, MADE_UP)
        path = path[:start] + quote(found, safe="") + path[end + 1:]
    return path


def _probes(routes: dict[str, list[str]], ids: dict[str, str],
            queries: dict[tuple[str, str], list[str]],
            bodies: dict[tuple[str, str], dict[str, Any]]) -> Iterator[Probe]:
    """Every hostile request for ``routes`` (template -> methods): ``queries`` the query
    parameters each documents, ``bodies`` a body each takes (to nest and inflate)."""
    for template, methods in sorted(routes.items()):
        for method in methods:
            path = _fill(template, ids)
            if "{" in template:
                for value in HUGE + CONTROLS:
                    yield Probe(method, _fill(template, ids, value))
            for name in [*queries.get((template, method), []), "limit", "marker"]:
                for value in HUGE + CONTROLS:
                    yield Probe(method, path, {name: value})
            if method not in WRITES:
                continue
            yield Probe(method, path, body=DEEP_TEXT)
            yield Probe(method, path, body=deep(MAX_JSON_DEPTH + 1))
            sample = bodies.get((template, method), {})
            for key, inner in sample.items():
                yield Probe(method, path, body={**sample, key: DEEP})
                if isinstance(inner, dict):
                    for name in inner:
                        yield Probe(method, path, body={**sample, key: {**inner, name: DEEP}})
                        for number in HUGE_NUMBERS:
                            yield Probe(method, path,
                                        body={**sample, key: {**inner, name: number}})
                else:
                    for number in HUGE_NUMBERS:
                        yield Probe(method, path, body={**sample, key: number})


def _send(session: requests.Session, base: str, probe: Probe) -> requests.Response:
    data = probe.data()
    headers = JSON_ADMIN if data else ADMIN
    return session.request(probe.method, base + probe.path, params=probe.query, data=data,
                           headers=headers, timeout=60)


def _raw_get(url: str, path: str, header: bytes) -> int:
    """A GET with ``header`` sent as raw bytes (no client library sends non-ASCII)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin"
                     b"\r\n" + header + b"\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1])


@dataclass
class Services:
    placement: PlacementProcess
    api: ComputeApiProcess
    agent: AgentProcess
    ids: dict[str, str]


def _seed(api: str) -> dict[str, str]:
    """A flavor, an image, an aggregate and a server: the ids of the paths that reach
    past "not found"."""
    def call(method: str, path: str, body: Any) -> Any:
        response = requests.request(method, api + path, json=body, headers=ADMIN,
                                    timeout=60)
        assert response.status_code < 300, (path, response.text)
        return response.json()

    call("POST", "/v2.1/flavors", {"flavor": {"name": "f", "id": "hostile", "ram": 512,
                                              "vcpus": 1, "disk": 1}})
    image = call("POST", "/v2.1/images", {"name": "i", "disk_format": "raw",
                                          "container_format": "bare"})["id"]
    aggregate = call("POST", "/v2.1/os-aggregates",
                     {"aggregate": {"name": "a"}})["aggregate"]["id"]
    server = call("POST", "/v2.1/servers", {"server": {
        "name": "s", "flavorRef": "hostile", "imageRef": image}})["server"]["id"]
    return {"flavor_id": "hostile", "image_id": image, "aggregate_id": str(aggregate),
            "server_id": server, "uuid": server, "id": server}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def services(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    workdir = tmp_path_factory.mktemp(f"hostile-{request.param}")
    with ExitStack() as stack:
        databases: list[str | None] = [None, None]
        if request.param == "postgresql":
            databases = [stack.enter_context(_fresh_postgresql(request)) for _ in range(2)]
        placement = PlacementProcess(workdir / "placement", database_url=databases[0])
        stack.callback(placement.stop)
        placement.start()
        api = ComputeApiProcess(workdir / "api", placement_url=placement.url,
                                database_url=databases[1],
                                config={"DEFAULT": {"service_token": SERVICE_TOKEN}})
        stack.callback(api.stop)
        api.start()
        agent = AgentProcess(workdir / "agent", "hostile-host", placement_url=placement.url,
                             api_url=api.url,
                             config={"DEFAULT": {"service_token": SERVICE_TOKEN}})
        stack.callback(agent.stop)
        agent.start()
        yield Services(placement, api, agent, _seed(api.url))


def _assert_no_5xx(base: str, probes: Iterator[Probe]) -> int:
    failures: list[str] = []
    sent = 0
    with requests.Session() as session:
        for probe in probes:
            response = _send(session, base, probe)
            sent += 1
            # A host's uptime is a 501 by design where the driver cannot tell.
            by_design = response.status_code == 501 and probe.path.endswith("/uptime")
            if response.status_code >= 500 and not by_design:
                failures.append(f"{response.status_code} {probe.describe()}: "
                                f"{response.text[:200]}")
    assert failures == [], f"{len(failures)} of {sent}:\n" + "\n".join(failures[:20])
    return sent


def _assert_log_not_forged(process: ServerProcess) -> None:
    log = process.log_path.read_bytes()
    assert b"\x1b" not in log
    assert b"\xc2\x85" not in log and "\u2028".encode() not in log
    lines = log.decode(errors="replace").splitlines()
    forged = [line for line in lines if line.lstrip("\r").startswith(FORGED)]
    assert forged == [], forged[:5]
    # Not vacuous: the hostile paths reached the log, escaped.
    assert "\\n" + FORGED in log.decode(errors="replace")


def _api_routes(api: str) -> tuple[dict[str, list[str]], dict[tuple[str, str], list[str]],
                                   dict[tuple[str, str], dict[str, Any]]]:
    document = requests.get(api + "/openapi.json", timeout=30).json()
    routes: dict[str, list[str]] = {}
    queries: dict[tuple[str, str], list[str]] = {}
    bodies: dict[tuple[str, str], dict[str, Any]] = {}
    for template, operations in document["paths"].items():
        for method, operation in operations.items():
            method = method.upper()
            routes.setdefault(template, []).append(method)
            queries[(template, method)] = [p["name"] for p in operation.get("parameters", ())
                                           if p["in"] == "query"]
            schema = (operation.get("requestBody", {}).get("content", {})
                      .get("application/json", {}).get("schema", {}))
            bodies[(template, method)] = {
                key: {name: "x" for name in inner.get("properties", {})}
                if isinstance(inner, dict) and inner.get("type") == "object" else "x"
                for key, inner in schema.get("properties", {}).items()}
    return routes, queries, bodies


def test_the_compute_api(services: Services) -> None:
    routes, queries, bodies = _api_routes(services.api.url)
    sent = _assert_no_5xx(services.api.url, _probes(routes, services.ids, queries, bodies))
    assert sent > 3000, sent
    deep_create = requests.post(services.api.url + "/v2.1/servers", headers=JSON_ADMIN,
                                data=f'{{"server": {deep(MAX_JSON_DEPTH + 1)}}}', timeout=30)
    assert deep_create.status_code == 400, deep_create.text
    assert "nested more than" in deep_create.json()["badRequest"]["message"]
    # Arabic-Indic three, as raw UTF-8: never read as "no version" (2.1).
    assert _raw_get(services.api.url, "/v2.1/flavors",
                    "OpenStack-API-Version: compute 2.\u0663".encode()) == 400
    _assert_log_not_forged(services.api)


def test_placement(services: Services) -> None:
    routes = {template: sorted(methods) for template, methods in PLACEMENT_ROUTES.items()
              if template}
    sample = {"name": "x", "uuid": "x", "total": 1, "generation": 0,
              "resource_provider_generation": 0, "consumer_generation": None,
              "allocations": {}, "inventories": {}, "traits": [], "aggregates": []}
    bodies = {(template, method): sample for template, methods in routes.items()
              for method in methods if method in WRITES}
    queries = {(template, method): ["resources", "required", "member_of", "in_tree",
                                    "uuid", "name"]
               for template, methods in routes.items() for method in methods}
    ids = {**services.ids, "uuid": services.ids["server_id"],
           "consumer_uuid": services.ids["server_id"], "name": "VCPU"}
    sent = _assert_no_5xx(services.placement.url, _probes(routes, ids, queries, bodies))
    assert sent > 2000, sent
    deep_put = requests.post(services.placement.url + "/resource_providers",
                             headers={**JSON_ADMIN, "OpenStack-API-Version": "placement latest"},
                             data=f'{{"name": {deep(MAX_JSON_DEPTH + 1)}}}', timeout=30)
    assert deep_put.status_code == 400, deep_put.text
    assert "nested more than" in deep_put.json()["errors"][0]["detail"]
    assert _raw_get(services.placement.url, "/resource_providers",
                    "OpenStack-API-Version: placement 1.\u0663".encode()) == 400
    _assert_log_not_forged(services.placement)


def test_a_compute_agent(services: Services) -> None:
    routes = {template: sorted(methods) for template, methods in AGENT_ROUTES.items()}
    guest = {"uuid": services.ids["server_id"], "name": "x", "node": "hostile-host",
             "flavor": {"vcpus": 1}, "image": {"id": "x"}, "allocations": {}}
    bodies = {("/guests", "POST"): {"guest": guest, **guest},
              ("/guests/{uuid}/power", "POST"): {"action": "stop"},
              ("/service", "PUT"): {"disabled": True, "disabled_reason": "x"}}
    ids = {"uuid": services.ids["server_id"]}
    sent = _assert_no_5xx(services.agent.url, _probes(routes, ids, {}, bodies))
    assert sent > 200, sent
    spawned = requests.post(services.agent.url + "/guests", headers=JSON_ADMIN,
                            data=deep(MAX_JSON_DEPTH + 1), timeout=30)
    assert spawned.status_code == 400, spawned.text
    assert "nested more than" in spawned.text
    _assert_log_not_forged(services.agent)
