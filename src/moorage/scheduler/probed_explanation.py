"""NoValidHost explained on a placement without Moorage's explanation (upstream's).

Moorage's placement answers ``Moorage-Explain`` with the hosts each constraint of a
request excludes on its own (placement/engine/explain.py). Upstream's ignores the
header, so when it offers nothing the scheduler works the counts out itself, only
then, from a bounded number of reads of ``GET /resource_providers``:

- one for every provider (the hosts are the roots), one for the sharing providers
  (``MISC_SHARES_VIA_AGGREGATE``: lenders, not hosts);
- one per constraint, at most ``MAX_PROBED``: each resource class of the unnumbered
  group (``resources=RC:N``: a provider with that much free), each required trait of
  the group or of the root (``required=T``, ``in:A,B``), each forbidden one.

A constraint's hosts are the roots of the providers its query finds (a root's own
trait for ``root_required``; the roots without it for a forbidden trait). What the
probes cannot see (numbered groups, aggregates, a tree's summed amounts) is left
out and named in a note; the counts are then of the probed constraints only. The
answer has the shape of Moorage's ``moorage_explanation``, so the same code turns
both into the scheduling record, its ``deciding`` constraint and the metric label.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from moorage.placement.answers import ConstraintJSON, ExplanationJSON, RelaxedJSON
from moorage.placement.client import ProviderQuery
from moorage.placement.engine.explain import best_relaxation, no_host_together
from moorage.scheduler.resource_request import ResourceRequest

# Constraints probed at most, one read each (the first by kind: root, then resources,
# then required, then forbidden traits).
MAX_PROBED = 12


@dataclass(frozen=True)
class Probe:
    """One constraint as the explanation names it, and the query whose providers
    satisfy it. ``own``: only a root provider's own trait counts; ``negated``: the
    hosts satisfying it are those the query does not find."""

    kind: str
    names: tuple[str, ...]
    query: ProviderQuery
    amount: int | None = None
    own: bool = False
    negated: bool = False

    def counted(self, satisfied: int, excluded: list[str], listed: int) -> ConstraintJSON:
        """The constraint as placement's explanation counts it."""
        found = ConstraintJSON(kind=self.kind, group="", names=list(self.names),
                               satisfied=satisfied, excluded=len(excluded),
                               excluded_roots=excluded[:listed])
        if self.amount is not None:
            found["amount"] = self.amount
        return found


@dataclass(frozen=True)
class Probes:
    """What will be probed, and what of the request cannot be."""

    probes: tuple[Probe, ...]
    left_out: tuple[str, ...] = field(default=())


def _trait_probe(kind: str, entry: str) -> Probe:
    names = tuple(entry.removeprefix("in:").split(",")) if entry.startswith("in:") else (
        entry,)
    return Probe(kind, names, ProviderQuery(required=[entry]), own=kind.startswith("root_"))


def probes(request: ResourceRequest) -> Probes:
    """The constraints of ``request`` a ``GET /resource_providers`` can count."""
    group = request.unnumbered
    found: list[Probe] = [_trait_probe("root_required", t) for t in sorted(request.root_required)]
    found += [Probe("root_forbidden", (t,), ProviderQuery(required=[t]), own=True, negated=True)
              for t in sorted(request.root_forbidden)]
    found += [Probe("resources", (rc,), ProviderQuery(resources={rc: n}), amount=n)
              for rc, n in sorted(group.resources.items())]
    found += [_trait_probe("required", t) for t in sorted(group.required)]
    found += [Probe("forbidden", (t,), ProviderQuery(required=[t]), negated=True)
              for t in sorted(group.forbidden)]
    left_out = []
    if len(found) > MAX_PROBED:
        left_out.append(f"{len(found) - MAX_PROBED} more constraints")
    numbered = [s for s in request.groups if s]
    if numbered:
        left_out.append(f"the resource groups {', '.join(sorted(numbered))}")
    if group.member_of or group.forbidden_aggregates:
        left_out.append("the aggregates")
    return Probes(tuple(found[:MAX_PROBED]), tuple(left_out))


def satisfying(probe: Probe, found: Collection[tuple[str, str]],
               hosts: frozenset[str]) -> frozenset[str]:
    """The hosts satisfying ``probe`` from the (uuid, root uuid) of the providers its
    query found."""
    roots = {root for uuid, root in found if not probe.own or uuid == root}
    return hosts - roots if probe.negated else hosts & roots


def explanation(hosts: Sequence[str], probed: Sequence[tuple[Probe, frozenset[str]]],
                listed: int) -> ExplanationJSON:
    """``moorage_explanation`` of the probed constraints: per constraint the hosts it
    satisfies and excludes (``listed`` of them named), what no host has together and
    the smallest change, as Moorage's placement computes them."""
    order = sorted(hosts)
    everyone = np.ones(len(order), dtype=bool)
    masks = [np.isin(np.array(order, dtype=object), list(sat)) for _, sat in probed]
    constraints = [probe.counted(int(np.count_nonzero(mask)),
                                 [order[i] for i in np.flatnonzero(~mask)], listed)
                   for (probe, _), mask in zip(probed, masks, strict=True)]
    viable = everyone.copy()
    for mask in masks:
        viable &= mask
    answer = ExplanationJSON(hosts=len(order), viable=int(np.count_nonzero(viable)),
                             constraints=constraints, together=[], relaxed=None)
    if masks and not viable.any() and order:
        answer["together"] = list(no_host_together(everyone, masks))
        relaxed = best_relaxation(everyone, masks)
        if relaxed is not None:
            answer["relaxed"] = RelaxedJSON(constraint=relaxed[0], viable=relaxed[1])
    return answer
