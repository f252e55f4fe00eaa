"""Scheduler-style queries on a few thousand providers, over HTTP, against the oracle.

A seeded cloud of ~2,900 providers (flat compute nodes, NUMA trees, sharing
storage, aggregates, traits, partial usage) is loaded into a database; a real
server answers GET /allocation_candidates; Hypothesis draws queries mixing
resources, required, forbidden, ``in:``, root_required, member_of and limit, and
every answer must be exactly what the brute-force oracle computes.
"""

from __future__ import annotations

import random
import uuid as uuidlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moorage.placement.engine.request import CandidateRequest, RequestGroup
from moorage.placement.launcher import PlacementProcess
from moorage.placement.storage import bulk, migration
from moorage.placement.storage.database import Database
from moorage.placement.storage.records import Inventory
from tests.conftest import PlacementClient
from tests.unit.placement.oracle import SHARING, Cloud, Key, Provider, oracle

TRAITS = ["HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42", "HW_CPU_X86_AVX512F", "STORAGE_DISK_SSD",
          "COMPUTE_IMAGE_TYPE_QCOW2", "COMPUTE_IMAGE_TYPE_RAW", "COMPUTE_NET_VIF_MODEL_E1000",
          "COMPUTE_NET_VIF_MODEL_VIRTIO"]
AGGREGATES = [str(uuidlib.UUID(int=0xA66 + i)) for i in range(5)]


def _uuid(rng: random.Random) -> str:
    return str(uuidlib.UUID(int=rng.getrandbits(128)))


def build_cloud(seed: int = 2026) -> Cloud:
    rng = random.Random(seed)
    providers: list[Provider] = []

    def compute(parent: str | None, classes: dict[str, int]) -> Provider:
        inventories, used = {}, {}
        for rc, total in classes.items():
            ratio = rng.choice([1.0, 1.0, 2.0]) if rc == "VCPU" else 1.0
            inventories[rc] = Inventory(total, rng.choice([0, 0, 2]), 1, total, 1, ratio)
            capacity = int((total - inventories[rc].reserved) * ratio)
            used[rc] = rng.choice([0, 0, rng.randint(0, capacity)])
        return Provider(
            uuid=_uuid(rng), parent=parent, inventories=inventories, used=used,
            traits=frozenset(t for t in TRAITS if rng.random() < 0.45),
            aggregates=frozenset(a for a in AGGREGATES if rng.random() < 0.3),
        )

    for _ in range(2400):
        providers.append(compute(None, {"VCPU": 16, "MEMORY_MB": 16384, "DISK_GB": 500}))
    for _ in range(150):
        root = compute(None, {"DISK_GB": 1000})
        providers.append(root)
        for _ in range(2):
            providers.append(compute(root.uuid, {"VCPU": 8, "MEMORY_MB": 8192}))
    for i in range(3):
        providers.append(Provider(
            uuid=_uuid(rng), inventories={"DISK_GB": Inventory(10000, 0, 1, 10000, 1, 1.0)},
            used={"DISK_GB": rng.randint(0, 9000)},
            traits=frozenset({SHARING, "STORAGE_DISK_SSD"} if i else {SHARING}),
            aggregates=frozenset({AGGREGATES[i]}),
        ))
    return Cloud(providers)


CLOUD = build_cloud()


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlacementClient]:
    workdir: Path = tmp_path_factory.mktemp("scale")
    url = f"sqlite:///{workdir / 'placement.sqlite'}"
    db = Database(url)
    migration.upgrade(db)
    bulk.load(db, [
        bulk.ProviderSpec(name=f"rp-{p.uuid}", uuid=p.uuid, parent=p.parent,
                          inventories=p.inventories, traits=p.traits,
                          aggregates=p.aggregates, used=p.used)
        for p in CLOUD.providers
    ])
    db.dispose()
    server = PlacementProcess(workdir, database_url=url).start()
    yield PlacementClient(server.url)
    server.stop()


@st.composite
def scheduler_queries(draw: st.DrawFn) -> tuple[dict[str, str], CandidateRequest]:
    resources = {"VCPU": draw(st.integers(1, 8)), "MEMORY_MB": draw(st.sampled_from(
        [512, 2048, 4096, 8192]))}
    if draw(st.booleans()):
        resources["DISK_GB"] = draw(st.sampled_from([10, 100, 400]))
    shuffled = draw(st.permutations(TRAITS))
    n_req, n_forb = draw(st.integers(0, 2)), draw(st.integers(0, 1))
    required, forbidden = shuffled[:n_req], shuffled[n_req:n_req + n_forb]
    any_of = shuffled[n_req + n_forb:n_req + n_forb + draw(st.sampled_from([0, 2]))]
    root_traits = draw(st.lists(st.sampled_from(TRAITS), max_size=2, unique=True))
    root_forbidden = root_traits[draw(st.integers(0, len(root_traits))):]
    member_of = draw(st.lists(st.sampled_from(AGGREGATES), max_size=2, unique=True))
    negative = draw(st.booleans())
    limit = draw(st.one_of(st.none(), st.integers(1, 40)))
    query = {"resources": ",".join(f"{rc}:{n}" for rc, n in resources.items())}
    traits_expr = [*required, *(f"!{t}" for t in forbidden)]
    if traits_expr:
        query["required"] = ",".join(traits_expr)
    params = [(k, v) for k, v in query.items()]
    if any_of:
        params.append(("required", "in:" + ",".join(any_of)))
    if root_traits:
        params.append(("root_required", ",".join(
            f"!{t}" if t in root_forbidden else t for t in root_traits)))
    if member_of:
        params.append(("member_of", ("!in:" if negative else "in:") + ",".join(member_of)))
    if limit is not None:
        params.append(("limit", str(limit)))
    group = RequestGroup(
        resources=resources,
        required_traits=tuple(frozenset([t]) for t in required) + (
            (frozenset(any_of),) if any_of else ()),
        forbidden_traits=frozenset(forbidden),
        member_of=(frozenset(member_of),) if member_of and not negative else (),
        forbidden_aggregates=frozenset(member_of) if negative else frozenset(),
    )
    request = CandidateRequest(
        groups=(group,), limit=limit,
        root_required=frozenset(t for t in root_traits if t not in root_forbidden),
        root_forbidden=frozenset(root_forbidden),
    )
    return {"query": urlencode(params)}, request


@settings(max_examples=60, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(scheduler_queries())
def test_scheduler_queries_match_the_oracle(
    loaded: PlacementClient, drawn: tuple[dict[str, str], CandidateRequest]
) -> None:
    query, request = drawn
    body = loaded.get(f"/allocation_candidates?{query['query']}", version="1.39",
                      expect=200).json()
    got: list[Key] = [
        (frozenset((u, rc, n) for u, a in ar["allocations"].items()
                   for rc, n in a["resources"].items()),
         frozenset((s, frozenset(us)) for s, us in ar["mappings"].items()))
        for ar in body["allocation_requests"]
    ]
    full = CandidateRequest(**{**request.__dict__, "limit": None})
    expected, _ = oracle(CLOUD, full)
    assert len(got) == len(set(got))
    if request.limit is None:
        assert set(got) == expected
    else:
        assert len(got) == min(request.limit, len(expected))
        assert set(got) <= expected
    index = CLOUD.by_uuid()
    used_roots = {CLOUD.root_of(u) for key in got for u, _, _ in key[0]}
    assert set(body["provider_summaries"]) == {
        p.uuid for p in CLOUD.providers if CLOUD.root_of(p.uuid) in used_roots}
    for uuid, summary in body["provider_summaries"].items():
        provider = index[uuid]
        assert sorted(summary["traits"]) == sorted(provider.traits)
        assert summary["parent_provider_uuid"] == provider.parent
        assert summary["root_provider_uuid"] == CLOUD.root_of(uuid)
        for rc, inventory in provider.inventories.items():
            assert summary["resources"][rc] == {
                "capacity": inventory.capacity, "used": provider.used.get(rc, 0)}
