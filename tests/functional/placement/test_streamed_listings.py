"""Whole-cloud answers are streamed, and stay exactly what they were.

GET /resource_providers and an unlimited GET /allocation_candidates longer than
``STREAM_ABOVE`` are sent in chunks (placement/http.py ``JSONPieces``). Over HTTP,
on two bulk-loaded clouds just big enough for that, each answer must be
byte-for-byte the JSON written out here from the providers themselves, with the
status and headers of any other answer:

- flat: 4,000 compute nodes, each a lone root (candidates rendered from a template);
- nested: 1,200 trees of a root and two NUMA children (candidates enumerated).
"""

from __future__ import annotations

import random
import uuid as uuidlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import requests

from moorage.placement.http import STREAM_ABOVE
from moorage.placement.launcher import PlacementProcess
from moorage.placement.storage import bulk, migration
from moorage.placement.storage.database import Database
from moorage.placement.storage.records import Inventory
from tests.conftest import PlacementClient

VERSIONS = ["1.10", "1.17", "1.29", "1.39"]
# One trait each, so that the order traits are listed in is not in question.
TRAITS = ["COMPUTE_NODE", "HW_CPU_X86_AVX2", "STORAGE_DISK_SSD"]
COMPUTE = {"VCPU": 64, "MEMORY_MB": 262144, "DISK_GB": 2000}
NUMA = {"VCPU": 8, "MEMORY_MB": 8192}


@dataclass(frozen=True)
class Spec:
    uuid: str
    name: str
    inventories: dict[str, int]
    traits: tuple[str, ...]
    parent: str | None = None


@dataclass(frozen=True)
class Loaded:
    client: PlacementClient
    specs: list[Spec]  # in creation (id) order: the bulk loader creates roots first

    def root_of(self, spec: Spec) -> str:
        return spec.parent or spec.uuid

    def trees(self) -> list[Spec]:
        """Every provider, tree by tree (root, then its children), roots in id order."""
        children: dict[str, list[Spec]] = {}
        for spec in self.specs:
            if spec.parent is not None:
                children.setdefault(spec.parent, []).append(spec)
        return [member for root in self.specs if root.parent is None
                for member in (root, *children.get(root.uuid, ()))]


def _uuid(rng: random.Random) -> str:
    return str(uuidlib.UUID(int=rng.getrandbits(128), version=4))


def flat_specs() -> list[Spec]:
    rng = random.Random(7)
    return [Spec(_uuid(rng), f"cn-{i:05d}", COMPUTE, (TRAITS[i % 3],)) for i in range(4000)]


def nested_specs() -> list[Spec]:
    rng = random.Random(8)
    roots, children = [], []
    for i in range(1200):
        root = Spec(_uuid(rng), f"host-{i:05d}", {"DISK_GB": 1000}, ())
        roots.append(root)
        children += [Spec(_uuid(rng), f"host-{i:05d}-numa{n}", NUMA, ("HW_NUMA_ROOT",),
                          root.uuid) for n in range(2)]
    return roots + children


def _serve(workdir: Path, specs: list[Spec]) -> Iterator[Loaded]:
    url = f"sqlite:///{workdir / 'placement.sqlite'}"
    db = Database(url)
    migration.upgrade(db)
    bulk.load(db, [
        bulk.ProviderSpec(
            name=s.name, uuid=s.uuid, parent=s.parent, traits=frozenset(s.traits),
            inventories={rc: Inventory(total, 0, 1, total, 1, 1.0)
                         for rc, total in s.inventories.items()})
        for s in specs
    ])
    db.dispose()
    server = PlacementProcess(workdir, database_url=url).start()
    yield Loaded(PlacementClient(server.url), specs)
    server.stop()


@pytest.fixture(scope="module")
def flat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    yield from _serve(tmp_path_factory.mktemp("flat"), flat_specs())


@pytest.fixture(scope="module")
def nested(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    yield from _serve(tmp_path_factory.mktemp("nested"), nested_specs())


def _at_least(version: str, wanted: str) -> bool:
    return tuple(map(int, version.split("."))) >= tuple(map(int, wanted.split(".")))


# -- what the answers must be, written from the specs --------------------------------


def provider(loaded: Loaded, spec: Spec, version: str) -> dict[str, Any]:
    url = f"/resource_providers/{spec.uuid}"
    rels = ["inventories", "usages", "aggregates", "traits"]
    if _at_least(version, "1.11"):
        rels.append("allocations")
    shown: dict[str, Any] = {
        "uuid": spec.uuid, "name": spec.name, "generation": 1,
        "links": [{"rel": "self", "href": url}] + [
            {"rel": rel, "href": f"{url}/{rel}"} for rel in rels],
    }
    if _at_least(version, "1.14"):
        shown["parent_provider_uuid"] = spec.parent
        shown["root_provider_uuid"] = loaded.root_of(spec)
    return shown


def allocation_request(spec: Spec, amounts: dict[str, int], version: str,
                       suffixes: tuple[str, ...] = ("",)) -> dict[str, Any]:
    if not _at_least(version, "1.12"):
        return {"allocations": [{"resource_provider": {"uuid": spec.uuid},
                                 "resources": amounts}]}
    request: dict[str, Any] = {"allocations": {spec.uuid: {"resources": amounts}}}
    if _at_least(version, "1.34"):
        request["mappings"] = {suffix: [spec.uuid] for suffix in suffixes}
    return request


def summary(loaded: Loaded, spec: Spec, requested: set[str], version: str) -> dict[str, Any]:
    shown: dict[str, Any] = {"resources": {
        rc: {"capacity": total, "used": 0} for rc, total in spec.inventories.items()
        if _at_least(version, "1.27") or rc in requested}}
    if _at_least(version, "1.17"):
        shown["traits"] = list(spec.traits)
    if _at_least(version, "1.29"):
        shown["parent_provider_uuid"] = spec.parent
        shown["root_provider_uuid"] = loaded.root_of(spec)
    return shown


# -- checks ---------------------------------------------------------------------------


def get_streamed(loaded: Loaded, path: str, version: str) -> requests.Response:
    """A 200 whose body was long enough to be streamed, with every usual header."""
    response = loaded.client.get(path, version=version, expect=200)
    assert len(response.content) > STREAM_ABOVE, "too small to have been streamed"
    headers = response.headers
    assert headers["content-type"] == "application/json"
    assert headers["content-length"] == str(len(response.content))
    assert "transfer-encoding" not in headers
    assert headers["openstack-api-version"] == f"placement {version}"
    assert headers["vary"] == "openstack-api-version"
    assert headers["x-openstack-request-id"].startswith("req-")
    if _at_least(version, "1.15"):
        assert headers["cache-control"] == "no-cache"
        assert headers["last-modified"].endswith(" GMT")
    else:
        assert "cache-control" not in headers and "last-modified" not in headers
    return response


def assert_same_json(response: requests.Response, expected: dict[str, Any]) -> None:
    assert response.json() == expected
    # Byte for byte: the key order and the compact separators of the joined answer.
    assert response.content == orjson.dumps(expected)


@pytest.mark.parametrize("version", VERSIONS)
def test_provider_list_of_a_flat_cloud(flat: Loaded, version: str) -> None:
    response = get_streamed(flat, "/resource_providers", version)
    assert_same_json(response, {
        "resource_providers": [provider(flat, spec, version) for spec in flat.specs]})


@pytest.mark.parametrize("version", ["1.10", "1.29"])
def test_provider_list_of_trees(nested: Loaded, version: str) -> None:
    response = get_streamed(nested, "/resource_providers", version)
    assert_same_json(response, {
        "resource_providers": [provider(nested, spec, version) for spec in nested.specs]})


@pytest.mark.parametrize("version", VERSIONS)
def test_unlimited_candidates_on_lone_roots(flat: Loaded, version: str) -> None:
    amounts = {"VCPU": 1, "MEMORY_MB": 64, "DISK_GB": 1}
    response = get_streamed(
        flat, "/allocation_candidates?resources=VCPU:1,MEMORY_MB:64,DISK_GB:1", version)
    assert_same_json(response, {
        "allocation_requests": [allocation_request(s, amounts, version) for s in flat.specs],
        "provider_summaries": {s.uuid: summary(flat, s, set(amounts), version)
                               for s in flat.specs},
    })


def test_unlimited_granular_candidates_carry_every_mapping(flat: Loaded) -> None:
    response = get_streamed(
        flat, "/allocation_candidates?resources1=VCPU:1&resources2=MEMORY_MB:64"
        "&group_policy=none", "1.39")
    amounts = {"VCPU": 1, "MEMORY_MB": 64}
    assert_same_json(response, {
        "allocation_requests": [allocation_request(s, amounts, "1.39", ("1", "2"))
                                for s in flat.specs],
        "provider_summaries": {s.uuid: summary(flat, s, set(amounts), "1.39")
                               for s in flat.specs},
    })


@pytest.mark.parametrize("version", ["1.29", "1.39"])
def test_unlimited_candidates_in_trees(nested: Loaded, version: str) -> None:
    response = get_streamed(nested, "/allocation_candidates?resources=VCPU:1", version)
    trees = nested.trees()
    assert_same_json(response, {
        # Each NUMA child alone, tree by tree.
        "allocation_requests": [allocation_request(s, {"VCPU": 1}, version)
                                for s in trees if s.parent is not None],
        # Every provider of a tree a candidate uses, the root first.
        "provider_summaries": {s.uuid: summary(nested, s, {"VCPU"}, version) for s in trees},
    })


def test_a_small_answer_has_the_same_headers(flat: Loaded) -> None:
    big = get_streamed(flat, "/allocation_candidates?resources=VCPU:1", "1.39")
    small = flat.client.get("/allocation_candidates?resources=VCPU:1&limit=3",
                            version="1.39", expect=200)
    assert len(small.content) < STREAM_ABOVE
    assert sorted(small.headers) == sorted(big.headers)
    assert big.json()["allocation_requests"][:3] == small.json()["allocation_requests"]
