"""Server groups in the scheduler: the one rule each hard policy keeps (a table of
groups and hosts), the soft policies' weights, and the host filters and decisions that
read them."""

from __future__ import annotations

import pytest

from moorage.scheduler.explain import filter_exclusions
from moorage.scheduler.host_filters import (
    FilterOptions,
    HostState,
    constraint_labels,
    enabled_filters,
    run_filters,
)
from moorage.scheduler.server_groups import (
    GroupPlacement,
    GroupPolicy,
    affinity_host,
    member_counts,
    refusal,
)
from moorage.scheduler.types import HostInfo, Liveness
from moorage.scheduler.weighers import server_group_weigher, weigh
from tests.unit.scheduler.fakes import conf, spec

GROUP = "5f0e2a4c-1b3d-4e6f-8a9b-0c1d2e3f4a5b"
ANTI = GroupPlacement(GROUP, GroupPolicy.ANTI_AFFINITY, members_on={"a": 1})
ANTI_2 = GroupPlacement(GROUP, GroupPolicy.ANTI_AFFINITY, 2, {"a": 2, "b": 1})
AFFINE = GroupPlacement(GROUP, GroupPolicy.AFFINITY, members_on={"a": 2})
EMPTY_AFFINE = GroupPlacement(GROUP, GroupPolicy.AFFINITY)
SOFT_ANTI = GroupPlacement(GROUP, GroupPolicy.SOFT_ANTI_AFFINITY, members_on={"a": 3})
SOFT_AFFINE = GroupPlacement(GROUP, GroupPolicy.SOFT_AFFINITY, members_on={"a": 3, "b": 1})


@pytest.mark.parametrize(("group", "host", "refused"), [
    (ANTI, "a", "runs a server of server group " + GROUP + " (anti-affinity) already "
     "(at most 1 per host)"),
    (ANTI, "b", None),
    (ANTI_2, "a", "runs 2 servers of server group " + GROUP + " (anti-affinity) already "
     "(at most 2 per host)"),
    (ANTI_2, "b", None),
    (ANTI_2, "c", None),
    (AFFINE, "a", None),
    (AFFINE, "b", "is not where the servers of server group " + GROUP + " (affinity) are"),
    # The first member fixes the host: anywhere, while none is placed.
    (EMPTY_AFFINE, "b", None),
    # The soft policies never refuse.
    (SOFT_ANTI, "a", None),
    (SOFT_AFFINE, "c", None),
])
def test_refusal(group: GroupPlacement, host: str, refused: str | None) -> None:
    assert refusal(group, host) == refused


def test_soft_policies_weigh_members_and_hard_ones_do_not() -> None:
    hosts = ["a", "b", "c"]
    assert member_counts(hosts, SOFT_AFFINE) == [3.0, 1.0, 0.0]
    assert member_counts(hosts, SOFT_ANTI) == [-3.0, 0.0, 0.0]
    assert member_counts(hosts, ANTI) == [0.0, 0.0, 0.0]
    assert member_counts(hosts, None) == [0.0, 0.0, 0.0]


def test_the_soft_weigher_reorders_hosts_against_the_resource_weighers() -> None:
    options = conf(filter_scheduler__soft_anti_affinity_weight_multiplier=3.0)
    free = {"a": {"MEMORY_MB": 4096}, "b": {"MEMORY_MB": 1024}}
    multipliers = {"MEMORY_MB": 1.0}
    assert [w.host for w in weigh(["a", "b"], free, multipliers)] == ["a", "b"]
    soft = server_group_weigher(options, ["a", "b"], SOFT_ANTI)
    assert soft == (3.0, [-3.0, 0.0])
    assert [w.host for w in weigh(["a", "b"], free, multipliers, (soft,))] == ["b", "a"]
    assert server_group_weigher(options, ["a", "b"], ANTI) is None
    assert server_group_weigher(options, ["a", "b"], None) is None


def _host(name: str) -> HostState:
    return HostState(HostInfo(name, [name], True, Liveness.fixed(True), "fake"))


def test_the_filters_run_only_for_their_policy_and_name_the_group() -> None:
    filters = enabled_filters(["ServerGroupAntiAffinityFilter", "ServerGroupAffinityFilter"])
    hosts = [_host("a"), _host("b")]
    for group, passing in ((ANTI, ["b"]), (AFFINE, ["a"]), (SOFT_ANTI, ["a", "b"]),
                           (None, ["a", "b"])):
        request = spec(server_group=group)
        kept, rejected = run_filters(hosts, request, filters, FilterOptions())
        assert [h.name for h in kept] == passing, group
        exclusions = filter_exclusions("host filter", 2, rejected,
                                       constraint_labels(filters, request))
        if group is not None and group.policy.hard:
            assert [e.constraint for e in exclusions] == [group.constraint]
            assert exclusions[0].key == ("ServerGroupAntiAffinityFilter"
                                         if group is ANTI else "ServerGroupAffinityFilter")
        else:
            assert exclusions == []


def test_the_affinity_host_is_asked_for_alone_only_when_there_is_one() -> None:
    assert affinity_host(AFFINE) == "a"
    assert affinity_host(EMPTY_AFFINE) is None  # the first member goes anywhere
    spread = GroupPlacement(GROUP, GroupPolicy.AFFINITY, members_on={"a": 1, "b": 1})
    assert affinity_host(spread) is None  # the filter turns every host away instead
    assert affinity_host(ANTI) is None and affinity_host(SOFT_AFFINE) is None
    assert affinity_host(None) is None
