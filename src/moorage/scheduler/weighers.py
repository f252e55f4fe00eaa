"""Weighers: order the hosts that passed the filters, best first.

Like upstream's RAM, CPU and disk weighers, each weighs what a host has free, read
from placement's provider summaries (capacity minus usage, over the host's whole
provider tree) rather than from a cache of its own; the values are normalised to
[0, 1] across the hosts and multiplied by ``[filter_scheduler]
{ram,cpu,disk}_weight_multiplier`` (negative: fill hosts first). Then
``shuffle_best_same_weighed_hosts`` and ``host_subset_size`` spread servers over
equally good hosts, with the scheduler's injected random generator.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from oslo_config import cfg

from moorage.placement.client import ProviderSummary
from moorage.scheduler.server_groups import GroupPlacement, GroupPolicy, member_counts

# multiplier option -> resource class whose free amount it weighs
RESOURCE_WEIGHERS: tuple[tuple[str, str], ...] = (
    ("ram_weight_multiplier", "MEMORY_MB"),
    ("cpu_weight_multiplier", "VCPU"),
    ("disk_weight_multiplier", "DISK_GB"),
)


class WeighedHost(NamedTuple):
    """A host and its total weight. A named tuple: one is made per candidate of every
    boot, and a frozen dataclass's constructor costs about three times a tuple's."""

    host: str
    weight: float


def free_resources(root_uuid: str, summaries: Mapping[str, ProviderSummary]) -> dict[str, int]:
    """What the tree under ``root_uuid`` has free, by class (capacity - used)."""
    return free_by_root(summaries).get(root_uuid, {})


def free_by_root(summaries: Mapping[str, ProviderSummary]) -> dict[str, dict[str, int]]:
    """What each tree has free, by class, in one pass over the summaries."""
    free: dict[str, dict[str, int]] = {}
    for summary in summaries.values():
        tree = free.get(summary.root_uuid)
        if tree is None:  # the first provider of its tree seen (often its only one)
            free[summary.root_uuid] = {rc: capacity - used for rc, (used, capacity)
                                       in summary.resources.items()}
            continue
        for rc, (used, capacity) in summary.resources.items():
            tree[rc] = tree.get(rc, 0) + capacity - used
    return free


def normalize(values: Sequence[float]) -> list[float]:
    """Min-max to [0, 1]; all equal -> all 0 (nothing to prefer)."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [0.0 for _ in values]
    return [(v - low) / (high - low) for v in values]


def weigh(hosts: Sequence[str], free: Mapping[str, Mapping[str, int]],
          multipliers: Mapping[str, float],
          others: Sequence[tuple[float, Sequence[float]]] = ()) -> list[WeighedHost]:
    """Hosts with their total weight, best first (ties keep the given order).

    ``free`` is host -> {class: free amount}; ``multipliers`` class -> multiplier;
    ``others``: further weighers, each (multiplier, a raw value per host in the order
    of ``hosts``), normalised as the resource weighers are (a soft server group's)."""
    totals = [0.0] * len(hosts)
    nothing: Mapping[str, int] = {}
    for rc, multiplier in multipliers.items():
        if multiplier:
            scores = normalize([float(free.get(h, nothing).get(rc, 0)) for h in hosts])
            totals = [t + multiplier * s for t, s in zip(totals, scores, strict=True)]
    for multiplier, values in others:
        if multiplier:
            scores = normalize(values)
            totals = [t + multiplier * s for t, s in zip(totals, scores, strict=True)]
    # Best first; a sort in reverse keeps equal weights in the given order.
    return sorted(map(WeighedHost, hosts, totals), key=_weight, reverse=True)


_weight = operator.itemgetter(1)


def server_group_weigher(conf: cfg.ConfigOpts, hosts: Sequence[str],
                         group: GroupPlacement | None) -> tuple[float, list[float]] | None:
    """Upstream's ServerGroupSoftAffinityWeigher and ServerGroupSoftAntiAffinityWeigher:
    (multiplier, the group's members on each of ``hosts``, negated for anti-affinity),
    or None when the server is in no soft group."""
    if group is None or group.policy.hard:
        return None
    option = ("soft_affinity_weight_multiplier" if group.policy is GroupPolicy.SOFT_AFFINITY
              else "soft_anti_affinity_weight_multiplier")
    return float(getattr(conf.filter_scheduler, option)), member_counts(hosts, group)


def multipliers_from_conf(conf: cfg.ConfigOpts) -> dict[str, float]:
    group = conf.filter_scheduler
    return {rc: float(getattr(group, option)) for option, rc in RESOURCE_WEIGHERS}


def choose_order(weighed: Sequence[WeighedHost], *, subset_size: int, shuffle_best: bool,
                 rng: random.Random) -> list[str]:
    """The order to try hosts in: one chosen at random among the best ``subset_size``
    first, then the rest best first. ``shuffle_best`` first shuffles the hosts tied
    for the best weight, so equal hosts share the load."""
    ordered = list(weighed)
    if shuffle_best and ordered:
        best = ordered[0].weight
        tied = [wh for wh in ordered if wh.weight == best]
        rng.shuffle(tied)
        ordered = tied + ordered[len(tied):]
    if not ordered:
        return []
    chosen = rng.choice(ordered[:max(1, subset_size)])
    ordered.remove(chosen)
    return [chosen.host, *(wh.host for wh in ordered)]
