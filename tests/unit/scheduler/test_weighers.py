"""Weighers: free resources from provider summaries, multipliers, subset and shuffle."""

from __future__ import annotations

import random

from moorage.placement.client import ProviderSummary
from moorage.scheduler.weighers import (
    WeighedHost,
    choose_order,
    free_resources,
    multipliers_from_conf,
    normalize,
    weigh,
)
from tests.unit.scheduler.fakes import conf


def test_free_resources_sums_the_tree() -> None:
    summaries = {
        "r1": ProviderSummary("r1", "r1", None, [], {"VCPU": (2, 8), "MEMORY_MB": (512, 4096)}),
        "c1": ProviderSummary("c1", "r1", "r1", [], {"VCPU": (0, 4)}),
        "r2": ProviderSummary("r2", "r2", None, [], {"VCPU": (0, 1)}),
    }
    assert free_resources("r1", summaries) == {"VCPU": 10, "MEMORY_MB": 3584}


def test_normalize() -> None:
    assert normalize([1.0, 3.0, 2.0]) == [0.0, 1.0, 0.5]
    assert normalize([4.0, 4.0]) == [0.0, 0.0]
    assert normalize([]) == []


FREE = {"small": {"MEMORY_MB": 1024, "VCPU": 8}, "big": {"MEMORY_MB": 8192, "VCPU": 2}}


def test_more_free_memory_first() -> None:
    weighed = weigh(["small", "big"], FREE, {"MEMORY_MB": 1.0})
    assert [w.host for w in weighed] == ["big", "small"]


def test_negative_multiplier_stacks() -> None:
    weighed = weigh(["small", "big"], FREE, {"MEMORY_MB": -1.0})
    assert [w.host for w in weighed] == ["small", "big"]


def test_cpu_outweighs_memory_with_a_larger_multiplier() -> None:
    weighed = weigh(["small", "big"], FREE, {"MEMORY_MB": 1.0, "VCPU": 2.0})
    assert [w.host for w in weighed] == ["small", "big"]


def test_multipliers_from_conf() -> None:
    assert multipliers_from_conf(conf(filter_scheduler__ram_weight_multiplier=-2.0)) == {
        "MEMORY_MB": -2.0, "VCPU": 1.0, "DISK_GB": 1.0}


WEIGHED = [WeighedHost("a", 1.0), WeighedHost("b", 1.0), WeighedHost("c", 1.0),
           WeighedHost("d", 0.5)]


def test_subset_size_one_keeps_the_order() -> None:
    order = choose_order(WEIGHED, subset_size=1, shuffle_best=False, rng=random.Random(1))
    assert order == ["a", "b", "c", "d"]


def test_subset_size_spreads_over_the_best() -> None:
    firsts = {choose_order(WEIGHED, subset_size=2, shuffle_best=False,
                           rng=random.Random(seed))[0] for seed in range(40)}
    assert firsts == {"a", "b"}


def test_shuffle_best_same_weighed_hosts() -> None:
    orders = {tuple(choose_order(WEIGHED, subset_size=1, shuffle_best=True,
                                 rng=random.Random(seed))) for seed in range(40)}
    assert {o[0] for o in orders} == {"a", "b", "c"}
    assert all(o[-1] == "d" for o in orders)  # never ahead of a better host


def test_no_hosts() -> None:
    assert choose_order([], subset_size=3, shuffle_best=True, rng=random.Random()) == []
