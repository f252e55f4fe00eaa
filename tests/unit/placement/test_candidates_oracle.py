"""The allocation-candidates engine against the brute-force oracle, on random clouds.

Hypothesis builds small clouds (nested trees, sharing providers, aggregates,
traits, partial usage, odd inventories) and requests (granular groups, forbidden
and any-of traits, member_of, in_tree, group_policy, root_required,
same_subtree, old microversions), and the engine must return exactly the
oracle's candidates and summaries, and with a limit a subset of the right size.
"""

from __future__ import annotations

import uuid as uuidlib

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from moorage.placement.engine.candidates import Candidates, find_candidates
from moorage.placement.engine.index import ProviderIndex
from moorage.placement.engine.request import CandidateRequest, RequestGroup
from moorage.placement.storage.records import Inventory
from tests.unit.placement.oracle import SHARING, Cloud, Key, Provider, oracle

CLASSES = ["VCPU", "MEMORY_MB", "DISK_GB", "SRIOV_NET_VF"]
TRAITS = ["HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42", "STORAGE_DISK_SSD", "HW_NIC_SRIOV"]
AGGREGATES = [str(uuidlib.UUID(int=i + 1)) for i in range(3)]


def _often(draw: st.DrawFn, value: object, other: st.SearchStrategy[object]) -> object:
    """``value`` three times out of four, else something drawn from ``other``."""
    return value if draw(st.integers(0, 3)) else draw(other)


@st.composite
def inventories(draw: st.DrawFn) -> tuple[dict[str, Inventory], dict[str, int]]:
    classes = draw(st.lists(st.sampled_from(CLASSES), min_size=1, max_size=4, unique=True))
    invs: dict[str, Inventory] = {}
    used: dict[str, int] = {}
    for rc in classes:
        total = draw(st.integers(1, 12))
        reserved = int(_often(draw, 0, st.integers(0, total // 3)))  # type: ignore[call-overload]
        ratio = float(_often(draw, 1.0, st.sampled_from([1.5, 0.5])))  # type: ignore[arg-type]
        max_unit = int(_often(draw, total, st.integers(1, total)))  # type: ignore[call-overload]
        min_unit = int(_often(draw, 1, st.integers(1, max_unit)))  # type: ignore[call-overload]
        step = int(_often(draw, 1, st.just(2)))  # type: ignore[call-overload]
        invs[rc] = Inventory(total, reserved, min_unit, max_unit, step, ratio)
        capacity = max(int((total - reserved) * ratio), 0)
        used[rc] = int(_often(draw, 0, st.integers(0, capacity)))  # type: ignore[call-overload]
    return invs, used


@st.composite
def clouds(draw: st.DrawFn) -> Cloud:
    providers: list[Provider] = []
    for t in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 5))
        if t == 0:
            size = max(size, 2)
        tree: list[Provider] = []
        for i in range(size):
            parent = draw(st.sampled_from(tree)).uuid if tree else None
            invs, used = draw(inventories())
            tree.append(Provider(
                uuid=str(uuidlib.UUID(int=(t + 1) * 1000 + i)),
                parent=parent, inventories=invs, used=used,
                traits=frozenset(draw(st.lists(st.sampled_from(TRAITS), max_size=3))),
                aggregates=frozenset(draw(st.lists(st.sampled_from(AGGREGATES), max_size=2))),
            ))
        providers.extend(tree)
    for s in range(draw(st.integers(0, 2))):
        invs, used = draw(inventories())
        providers.append(Provider(
            uuid=str(uuidlib.UUID(int=9000 + s)), inventories=invs, used=used,
            traits=frozenset([SHARING, *draw(st.lists(st.sampled_from(TRAITS), max_size=2))]),
            aggregates=frozenset(draw(st.lists(st.sampled_from(AGGREGATES), min_size=1,
                                               max_size=2))),
        ))
    return Cloud(providers)


@st.composite
def groups(draw: st.DrawFn, cloud: Cloud, suffix: str, resourceless: bool) -> RequestGroup:
    present = sorted({rc for p in cloud.providers for rc in p.inventories})
    resources = {} if resourceless else draw(st.dictionaries(
        st.sampled_from(present), st.sampled_from([1, 1, 1, 2, 3]), min_size=1,
        max_size=1 if suffix else 2))
    rare = st.integers(0, 4).map(lambda n: n == 0)
    required: tuple[frozenset[str], ...] = ()
    if draw(rare):
        required = tuple(frozenset(s) for s in draw(st.lists(
            st.lists(st.sampled_from(TRAITS), min_size=1, max_size=2, unique=True),
            min_size=1, max_size=2)))
    forbidden = frozenset(draw(st.lists(st.sampled_from(TRAITS), max_size=1))) if draw(
        rare) else frozenset()
    member_of: tuple[frozenset[str], ...] = ()
    if draw(rare):
        member_of = (frozenset(draw(st.lists(st.sampled_from(AGGREGATES), min_size=1,
                                             max_size=2, unique=True))),)
    forbidden_aggs = frozenset(draw(st.lists(st.sampled_from(AGGREGATES), max_size=1))) if draw(
        rare) else frozenset()
    in_tree = None
    if draw(rare):
        in_tree = draw(st.one_of(st.sampled_from([p.uuid for p in cloud.providers]),
                                 st.just(str(uuidlib.UUID(int=77777)))))
    return RequestGroup(
        suffix=suffix, resources=resources, required_traits=required,
        forbidden_traits=forbidden, member_of=member_of,
        forbidden_aggregates=forbidden_aggs, in_tree=in_tree,
    )


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Cloud, CandidateRequest]:
    cloud = draw(clouds())
    chosen: list[RequestGroup] = []
    if draw(st.integers(0, 3)):
        chosen.append(draw(groups(cloud, "", False)))
    suffixes = ["1", "_NET", "2"][: draw(st.integers(0 if chosen else 1, 3))]
    resourceless = {s for s in suffixes if draw(st.integers(0, 4)) == 0}
    if len(resourceless) == len(suffixes) and not chosen:
        resourceless = set()
    for s in suffixes:
        chosen.append(draw(groups(cloud, s, s in resourceless)))
    subtrees: tuple[frozenset[str], ...] = ()
    if len(suffixes) >= 2 and (resourceless or draw(st.booleans())):
        subtrees = (frozenset(suffixes[:2]) | frozenset(resourceless),)
    root_traits: list[str] = []
    if not draw(st.integers(0, 3)):
        root_traits = draw(st.lists(st.sampled_from(TRAITS), min_size=1, max_size=2, unique=True))
    split = draw(st.integers(0, len(root_traits)))
    return cloud, CandidateRequest(
        groups=tuple(chosen),
        group_policy=draw(st.sampled_from(["none", "isolate"])),
        root_required=frozenset(root_traits[:split]),
        root_forbidden=frozenset(root_traits[split:]),
        same_subtrees=subtrees,
        nested_aware=bool(draw(st.integers(0, 3))) if not subtrees else True,
    )


def _index(cloud: Cloud) -> ProviderIndex:
    index = ProviderIndex(None)
    index.load(cloud.records())
    return index


def _keys(index: ProviderIndex, found: Candidates) -> list[Key]:
    uuid_of = {r.id: r.uuid for r in index.by_id.values()}
    return [
        (frozenset((uuid_of[p], rc, amt) for p, by_rc in c.allocations.items()
                   for rc, amt in by_rc.items()),
         frozenset((s, frozenset(uuid_of[p] for p in ps)) for s, ps in c.mappings.items()))
        for c in found.all()
    ]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_engine_matches_oracle(scenario: tuple[Cloud, CandidateRequest]) -> None:
    cloud, request = scenario
    index = _index(cloud)
    expected, expected_summary = oracle(cloud, request)
    found = find_candidates(index, request)
    keys = _keys(index, found)
    assert len(keys) == len(set(keys)), "duplicate candidates"
    assert set(keys) == expected
    uuid_of = {r.id: r.uuid for r in index.by_id.values()}
    assert {uuid_of[p] for p in found.summary_ids} == expected_summary


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.integers(1, 4))
def test_limit_returns_a_subset_of_the_right_size(
    scenario: tuple[Cloud, CandidateRequest], limit: int
) -> None:
    cloud, request = scenario
    index = _index(cloud)
    expected, _ = oracle(cloud, request)
    limited = CandidateRequest(**{**request.__dict__, "limit": limit})
    keys = _keys(index, find_candidates(index, limited))
    assert len(keys) == min(limit, len(expected))
    assert set(keys) <= expected
    randomized = _keys(index, find_candidates(index, limited, randomize=True))
    assert len(randomized) == min(limit, len(expected))
    assert set(randomized) <= expected


# in_tree naming a sharing provider: a suffixed group may be served by that lender
# for a host it shares with, so in_tree alone does not exclude the host.
_LENT_IN_TREE = (
    Cloud([
        Provider(uuid=str(uuidlib.UUID(int=1000)), aggregates=frozenset(AGGREGATES[:1]),
                 inventories={"VCPU": Inventory(4, 0, 1, 4, 1, 1.0)}),
        Provider(uuid=str(uuidlib.UUID(int=9000)), aggregates=frozenset(AGGREGATES[:1]),
                 inventories={"DISK_GB": Inventory(4, 0, 1, 4, 1, 1.0)},
                 traits=frozenset([SHARING])),
    ]),
    CandidateRequest(groups=(
        RequestGroup(resources={"VCPU": 1}),
        RequestGroup(suffix="1", resources={"DISK_GB": 1}, in_tree=str(uuidlib.UUID(int=9000))),
    )),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
@example(_LENT_IN_TREE)
def test_explanation_is_consistent_with_the_candidates(
        scenario: tuple[Cloud, CandidateRequest]) -> None:
    """Every host that offers a candidate is counted viable and satisfies each
    constraint on its own; a host no constraint excludes is viable unless a
    combination (summed groups, isolate, same_subtree) rules it out; without the
    header's listing, the answer is the same."""
    cloud, request = scenario
    index = _index(cloud)
    explained = find_candidates(index, request, explain_listing=100)
    assert explained.explanation is not None
    plain = find_candidates(index, request)
    assert set(_keys(index, explained)) == set(_keys(index, plain))
    sharing = {p.uuid for p in cloud.providers if SHARING in p.traits}
    uuid_of = {r.id: r.uuid for r in index.by_id.values()}
    root_of = {r.uuid: uuid_of[r.root_id] for r in index.by_id.values()}
    offering = {root_of[uuid_of[c.anchor]] for c in explained.all()} - sharing
    explanation = explained.explanation
    assert explanation.hosts == len({p.uuid for p in cloud.providers
                                     if p.parent is None} - sharing)
    assert explanation.viable >= len(offering)
    for counted in explanation.constraints:
        excluded = {uuid_of[i] for i in counted.excluded_ids}
        assert counted.satisfied + counted.excluded == explanation.hosts
        assert len(excluded) == counted.excluded
        assert not excluded & offering, (counted.constraint, excluded & offering)
    if explanation.viable == 0 and explanation.together:
        assert len(explanation.together) >= 2
    if explanation.relaxed is not None:
        assert explanation.viable == 0 and explanation.relaxed[1] > 0


def test_a_randomized_sample_of_lone_hosts_draws_from_all_valid_ones() -> None:
    """Lone hosts, randomized, with a limit: the sample is drawn from the hosts whose
    one candidate is valid (here the 20 with room for both groups at once, not the
    10 that fit each group alone), every one of them in turn, without repeats."""
    def host(n: int, vcpus: int) -> Provider:
        return Provider(uuid=str(uuidlib.UUID(int=n)),
                        inventories={"VCPU": Inventory(vcpus, 0, 1, vcpus, 1, 1.0)})

    valid = {str(uuidlib.UUID(int=n)) for n in range(1, 21)}
    cloud = Cloud([*(host(n, 8) for n in range(1, 21)), *(host(n, 4) for n in range(21, 31))])
    index = _index(cloud)
    groups = (RequestGroup(suffix="1", resources={"VCPU": 3}),
              RequestGroup(suffix="2", resources={"VCPU": 3}))
    seen: set[str] = set()
    firsts: set[str] = set()
    rng = np.random.default_rng(5)
    for _ in range(200):
        found = find_candidates(index, CandidateRequest(groups, group_policy="none", limit=5),
                                randomize=True, rng=rng)
        drawn = [index.by_id[p].uuid for p in found.lone_ids]
        assert len(drawn) == 5 == len(set(drawn)) and set(drawn) <= valid
        seen.update(drawn)
        firsts.add(drawn[0])
    assert seen == valid
    assert len(firsts) > 10  # the order is drawn too
    everything = find_candidates(index, CandidateRequest(groups, group_policy="none", limit=25),
                                 randomize=True, rng=rng)
    assert sorted(index.by_id[p].uuid for p in everything.lone_ids) == sorted(valid)
