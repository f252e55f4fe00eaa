"""Every placement route under random input, over HTTP against a real placement process:
methods and paths from the route table with odd ids (non-ASCII digits, NUL, very long,
uuids of what exists and of what does not), random query strings, JSON bodies shaped
like placement's and not, microversions from 1.0 to beyond 1.39. No answer is a 5xx,
and every 4xx carries placement's error document. On SQLite, and on PostgreSQL (which
refuses NUL characters and integers beyond its columns) where the tests have one.

Bounded: a fixed number of examples, derandomized (the same requests every run)."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moorage.placement.routes import ROUTES
from tests.conftest import PlacementClient

EXAMPLES = 4000

# What the seeded data is called: paths pick these half of the time, so that handlers
# reach past "not found" into the data layer.
PROVIDER = "0a6f3e1c-2b7d-4c59-8e41-5f0d9c3b7a12"
CHILD = "1b7e4f2d-3c8e-4d6a-9f52-6e1a0d4c8b23"
CONSUMER = "2c8f5a3e-4d9f-4e7b-8a63-7f2b1e5d9c34"
AGGREGATE = "3d9a6b4f-5e0a-4f8c-9b74-8a3c2f6e0d45"

ODD_IDS = ["³", "٣", "1²", "\x00", "a\x00b", "x" * 300, "0" * 64, " ", "..", "%", "é",
           "VCPU", "CUSTOM_FUZZ", "HW_CPU_X86_AVX", "CUSTOM_", "custom_lower", "-1",
           "99999999999999999999", str(uuid.UUID(int=0)), "🙂", "a/b", "a;b", "a?b"]
KNOWN_IDS = [PROVIDER, CHILD, CONSUMER, AGGREGATE, "VCPU", "MEMORY_MB", "DISK_GB",
             "CUSTOM_FUZZ", "CUSTOM_FUZZ_TRAIT", "HW_CPU_X86_AVX"]

QUERY_NAMES = ["resources", "required", "member_of", "in_tree", "limit", "name", "uuid",
               "project_id", "user_id", "consumer_type", "group_policy", "root_required",
               "same_subtree", "resources1", "required1", "member_of1", "in_tree1",
               "resources_A", "required_A", "associated", "show_explanation", "x"]
QUERY_VALUES = ["VCPU:1", "VCPU:1,MEMORY_MB:512", "VCPU:-1", "VCPU:٣", "VCPU:99999999999",
                "CUSTOM_FUZZ:1", "NOPE:1", "HW_CPU_X86_AVX", "!HW_CPU_X86_AVX",
                "in:HW_CPU_X86_AVX,CUSTOM_FUZZ_TRAIT", "startswith:CUSTOM", f"in:{AGGREGATE}",
                AGGREGATE, PROVIDER, "none", "isolate", "true", "false", "0", "1", "-1",
                "³", "", "a\x00b", "x" * 300, "!in:CUSTOM_FUZZ_TRAIT", "_A,_B", "2.5"]

BODY_KEYS = ["name", "uuid", "parent_provider_uuid", "resource_provider_generation",
             "inventories", "total", "reserved", "min_unit", "max_unit", "step_size",
             "allocation_ratio", "allocations", "resources", "project_id", "user_id",
             "consumer_generation", "consumer_type", "traits", "aggregates", "mappings",
             "generation", "resource_class", "resource_providers"]

MICROVERSIONS = [None, "1.0", "1.2", "1.10", "1.14", "1.17", "1.20", "1.23", "1.26", "1.28",
                 "1.30", "1.33", "1.34", "1.36", "1.37", "1.38", "1.39", "latest"]
BAD_MICROVERSIONS = ["1.40", "2.0", "1.٣", "abc", ""]
METHODS = ["GET", "PUT", "POST", "DELETE", "PATCH"]
TEMPLATES = sorted(t for t in ROUTES if t)


@dataclass
class Probe:
    """One generated request, as sent."""

    method: str
    path: str
    query: list[tuple[str, str]] = field(default_factory=list)
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        shown = self.body[:300] if self.body is not None else None
        return (f"{self.method} {self.path}?{urlencode(self.query)} headers={self.headers} "
                f"body={shown!r}")


ids = st.one_of(st.sampled_from(KNOWN_IDS), st.sampled_from(ODD_IDS),
                st.uuids().map(str), st.text(max_size=40))
# The seeded names of each path parameter, by the route's first segment.
RESOURCE_CLASSES = ["VCPU", "MEMORY_MB", "CUSTOM_FUZZ"]
TRAITS = ["HW_CPU_X86_AVX", "CUSTOM_FUZZ_TRAIT"]
SEEDED: dict[tuple[str, str], list[str]] = {
    ("resource_providers", "uuid"): [PROVIDER, CHILD],
    ("resource_providers", "resource_class"): RESOURCE_CLASSES,
    ("allocations", "consumer_uuid"): [CONSUMER],
    ("resource_classes", "name"): RESOURCE_CLASSES,
    ("traits", "name"): TRAITS,
}


def path_ids(template: str, name: str) -> st.SearchStrategy[str]:
    """Mostly the seeded objects this parameter names; otherwise anything."""
    seeded = SEEDED.get((template.split("/")[1], name))
    if seeded is None:
        return ids
    return st.one_of(st.sampled_from(seeded), st.sampled_from(seeded), ids)
leaves = st.one_of(
    st.none(), st.booleans(), st.text(max_size=30), st.sampled_from(KNOWN_IDS + ODD_IDS),
    st.integers(min_value=-(2**64), max_value=2**64 - 1),
    st.sampled_from([0, 1, -1, 2**31, 2**31 - 1, 2**63, 2**64 - 1, 1.5, 1e308]),
)
json_values = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(BODY_KEYS + KNOWN_IDS), st.text(max_size=8)),
                        children, max_size=5)),
    max_leaves=12)


def _allocations(draw: st.DrawFn) -> Any:
    """An allocations body near one placement would take, with random values inside."""
    resources = draw(st.dictionaries(st.sampled_from(["VCPU", "MEMORY_MB", "CUSTOM_FUZZ",
                                                      "NOPE", "³"]), leaves, max_size=3))
    provider = draw(st.sampled_from([PROVIDER, CHILD, str(uuid.uuid4()), "³"]))
    body: dict[str, Any] = {"allocations": {provider: {"resources": resources}}}
    for key in ("project_id", "user_id", "consumer_generation", "consumer_type"):
        if draw(st.booleans()):
            body[key] = draw(leaves)
    return body


@st.composite
def bodies(draw: st.DrawFn) -> bytes | None:
    kind = draw(st.sampled_from(["none", "json", "json", "allocations", "inventories",
                                 "provider", "traits", "aggregates", "raw"]))
    if kind == "none":
        return None
    if kind == "raw":
        return draw(st.sampled_from([b"{", b"", b"\xff\xfe", b"[]", b"null", b'"\\u0000"',
                                     b'{"name": "a\\u0000b"}', b"1" * 30, b"{}"]))
    data: Any
    if kind == "allocations":
        data = _allocations(draw)
    elif kind == "inventories":
        data = {"resource_provider_generation": draw(leaves), "inventories": {
            draw(st.sampled_from(["VCPU", "DISK_GB", "CUSTOM_FUZZ", "٣"])): draw(
                st.dictionaries(st.sampled_from(BODY_KEYS[5:11]), leaves, max_size=4))}}
    elif kind == "provider":
        data = {"name": draw(st.one_of(st.text(max_size=30), st.sampled_from(ODD_IDS)))}
        for key in ("uuid", "parent_provider_uuid"):
            if draw(st.booleans()):
                data[key] = draw(st.one_of(ids, st.none()))
    elif kind in ("traits", "aggregates"):
        members = st.sampled_from(["HW_CPU_X86_AVX", "CUSTOM_FUZZ_TRAIT", AGGREGATE,
                                   *ODD_IDS]) if kind == "traits" else ids
        data = {"resource_provider_generation": draw(st.one_of(st.integers(0, 12), leaves)),
                kind: draw(st.lists(members, max_size=3))}
    else:
        data = draw(json_values)
    return json.dumps(data).encode()  # integers beyond 64 bits too


@st.composite
def probes(draw: st.DrawFn) -> Probe:
    template = draw(st.sampled_from(TEMPLATES))
    allowed = sorted(ROUTES[template])
    method = draw(st.sampled_from(allowed) if draw(st.integers(0, 9)) else
                  st.sampled_from(METHODS))
    safe = draw(st.sampled_from(["", "/"]))  # "/" lets an id split the path in two

    def fill(match: re.Match[str]) -> str:
        return quote(draw(path_ids(template, match.group(1))), safe=safe)

    path = re.sub(r"\{(\w+)\}", fill, template)
    query = draw(st.lists(st.tuples(st.sampled_from(QUERY_NAMES),
                                    st.one_of(st.sampled_from(QUERY_VALUES), st.text(max_size=20))),
                          max_size=4))
    headers = {"x-auth-token": draw(st.sampled_from(["admin"] * 9 + ["u1:p1"]))}
    version = draw(st.sampled_from(MICROVERSIONS) if draw(st.integers(0, 9)) else
                   st.sampled_from(BAD_MICROVERSIONS))
    if version is not None:
        headers["openstack-api-version"] = f"placement {version}"
    body = draw(bodies()) if method in ("PUT", "POST", "PATCH") else None
    if body is not None:
        headers["content-type"] = draw(st.sampled_from(
            ["application/json"] * 5 + ["text/plain", "application/json; charset=utf-8"]))
    return Probe(method, path, query, body, headers)


def _seed(client: PlacementClient) -> None:
    """A provider with a child, inventory, traits, an aggregate and a consumer."""
    client.post("/resource_classes", json={"name": "CUSTOM_FUZZ"}, version="1.7", expect=201)
    client.put("/traits/CUSTOM_FUZZ_TRAIT", expect=201)
    client.create_provider("fuzz", rp_uuid=PROVIDER)
    client.create_provider("fuzz-child", rp_uuid=CHILD, parent=PROVIDER)
    client.put(f"/resource_providers/{PROVIDER}/inventories", json={
        "resource_provider_generation": client.generation(PROVIDER),
        "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096},
                        "CUSTOM_FUZZ": {"total": 2}}}, expect=200)
    client.put(f"/resource_providers/{PROVIDER}/traits", json={
        "resource_provider_generation": client.generation(PROVIDER),
        "traits": ["HW_CPU_X86_AVX", "CUSTOM_FUZZ_TRAIT"]}, expect=200)
    client.put(f"/resource_providers/{PROVIDER}/aggregates", json={
        "resource_provider_generation": client.generation(PROVIDER),
        "aggregates": [AGGREGATE]}, expect=200)
    client.put(f"/allocations/{CONSUMER}", json={
        "allocations": {PROVIDER: {"resources": {"VCPU": 1}}}, "project_id": "p1",
        "user_id": "u1", "consumer_generation": None,
        "consumer_type": "INSTANCE"}, expect=204)


def _check(probe: Probe, status: int, body: bytes, content_type: str) -> None:
    assert status < 500, f"{status} for {probe.describe()}: {body[:500]!r}"
    if 400 <= status < 500:
        assert content_type.startswith("application/json"), (probe.describe(), content_type)
        document = json.loads(body)
        [error] = document["errors"]
        assert error["status"] == status, (probe.describe(), document)
        assert error["title"] and isinstance(error["detail"], str), (probe.describe(), document)


def test_no_route_answers_5xx_and_every_refusal_is_placements(
        backend_placement: PlacementClient) -> None:
    client = backend_placement
    _seed(client)
    session = client.session
    sent: list[int] = []

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(probe=probes())
    def request_is_answered(probe: Probe) -> None:
        url = client.url + probe.path
        if probe.query:
            url += "?" + urlencode(probe.query)
        headers = {k: v.encode() for k, v in probe.headers.items()}  # UTF-8, as sent
        response = session.request(probe.method, url, data=probe.body, headers=headers,
                                   timeout=30)
        sent.append(response.status_code)
        _check(probe, response.status_code, response.content,
               response.headers.get("content-type", ""))

    request_is_answered()
    # Not vacuous: the requests were sent, and reached past routing and validation.
    assert len(sent) >= EXAMPLES
    assert sum(1 for s in sent if s < 300) >= EXAMPLES // 20, sorted(set(sent))
    assert {400, 404, 405} <= set(sent)
