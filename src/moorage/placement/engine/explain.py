"""Why hosts are not candidates: each constraint of a request counted on its own.

A Moorage extension of GET /allocation_candidates (asked for with the
``Moorage-Explain`` header, which no upstream client sends). From the same index
the candidates come from, every part of the request (an amount of a resource
class, a required or forbidden trait, an aggregate) is turned into the set of
trees that satisfy it alone, so the answer says, per constraint, how many hosts
it excludes and which. Two more facts help the user act:

- ``together``: when every constraint alone leaves some host but no host has them
  all, a small set of constraints no host satisfies together ("no host has all of
  A + B"), found greedily from the most excluding constraint;
- ``relaxed``: when nothing is viable, the one constraint whose removal would leave
  the most hosts (the smallest change that makes the request schedulable).

A "host" here is a live root provider that is not a sharing provider (a compute
node, or an Ironic node): sharing providers lend to hosts, they are not hosts.
The counts are of each constraint on its own; combinations placement checks only
when it builds candidates (summed amounts of several groups, ``group_policy``,
``same_subtree``) show as ``viable`` being lower than every count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from moorage.placement.engine.index import SHARING_TRAIT, BoolArray, ProviderIndex
from moorage.placement.engine.provider_filter import any_of
from moorage.placement.engine.request import CandidateRequest, RequestGroup

# How many excluded hosts are named per constraint at most (the rest are counted).
MAX_LISTED = 1000


@dataclass(frozen=True)
class Constraint:
    """One part of a request: ``kind`` is resources, required, forbidden, member_of,
    forbidden_aggregates, in_tree, root_required or root_forbidden. ``names`` are
    the trait, aggregate or resource class names (several: any of them will do)."""

    kind: str
    group: str
    names: tuple[str, ...]
    amount: int | None = None


@dataclass(frozen=True)
class Counted:
    """A constraint and the hosts it leaves and excludes, on its own."""

    constraint: Constraint
    satisfied: int
    excluded: int
    # Provider ids of the first excluded hosts (at most the listing asked for).
    excluded_ids: tuple[int, ...]


@dataclass(frozen=True)
class Explanation:
    hosts: int
    viable: int
    constraints: tuple[Counted, ...]
    # Indices into ``constraints`` no host satisfies together (two or more), or ().
    together: tuple[int, ...] = ()
    # (index of the constraint to drop, hosts viable without it), or None.
    relaxed: tuple[int, int] | None = None


class _Trees:
    """Per-constraint masks over root slots, for one index snapshot."""

    def __init__(self, index: ProviderIndex) -> None:
        self.index = index
        size = index.size
        self.size = size
        self.alive = index.alive[:size]
        self.root_slot = index.root_slot[:size]
        self.hosts: BoolArray = self.alive & index.is_root[:size] & ~index.trait_mask(
            SHARING_TRAIT)
        self.sharing = index.sharing_anchors()

    def lent(self, providers: BoolArray, roots: BoolArray) -> BoolArray:
        """``roots`` plus the trees a sharing provider among ``providers`` lends to."""
        for provider_id, lent_to in self.sharing.items():
            if providers[self.index.slot_of[provider_id]]:
                for root_id in lent_to:
                    roots[self.index.slot_of[root_id]] = True
        return roots

    def root_has(self, name: str) -> BoolArray:
        mask: BoolArray = self.index.trait_mask(name) & self.hosts
        return mask


def _group_parts(trees: _Trees, group: RequestGroup) -> list[tuple[Constraint, BoolArray]]:
    """Each constraint of one group with the trees satisfying it alone."""
    index = trees.index
    suffix = group.suffix
    parts: list[tuple[Constraint, BoolArray]] = []
    # Providers with an inventory of some class the group asks for, full or not: the
    # ones the group's other constraints are about.
    holders = index.empty_mask()
    for rc, amount in group.resources.items():
        fits = index.fits(rc, amount)[: trees.size] & trees.alive
        columns = index.resources.get(rc)
        if columns is not None:
            holders |= (columns.largest[: trees.size] >= 0) & trees.alive
        parts.append((Constraint("resources", suffix, (rc,), amount),
                      trees.lent(fits, index.roots_of(fits))))
    if not group.resources:
        holders = trees.alive.copy()
    for names in group.required_traits:
        having = any_of(index, names, "traits")
        parts.append((Constraint("required", suffix, tuple(sorted(names))),
                      trees.lent(having, index.roots_of(having))))
    for name in sorted(group.forbidden_traits):
        # A tree is kept when a provider that could serve the group lacks the trait.
        lacking = holders & ~index.trait_mask(name)
        parts.append((Constraint("forbidden", suffix, (name,)),
                      trees.lent(lacking, index.roots_of(lacking))))
    # Aggregates: a suffixed group's one provider must be in (or out of) them itself;
    # the unsuffixed group's providers may be through their tree's root, but a
    # sharing provider lends to it only when a member itself, and never into a tree
    # whose root is in a forbidden aggregate (as in _Search._match_tree).
    for aggregates in group.member_of:
        members = any_of(index, aggregates, "aggregates")
        within = members if suffix else members | members[trees.root_slot]
        parts.append((Constraint("member_of", suffix, tuple(sorted(aggregates))),
                      trees.lent(members & holders, index.roots_of(within & holders))))
    if group.forbidden_aggregates:
        inside = any_of(index, group.forbidden_aggregates, "aggregates")
        outside = ~inside if suffix else ~inside & ~inside[trees.root_slot]
        kept = trees.lent(outside & holders, index.roots_of(outside & holders))
        if not suffix:
            kept &= ~inside
        parts.append((Constraint("forbidden_aggregates", suffix,
                                 tuple(sorted(group.forbidden_aggregates))), kept))
    if group.in_tree is not None:
        parts.append((Constraint("in_tree", suffix, (group.in_tree,)),
                      _in_tree(trees, group.in_tree, bool(suffix))))
    return parts


def _in_tree(trees: _Trees, uuid: str, suffixed: bool) -> BoolArray:
    """Trees a group may be served for under ``in_tree=uuid`` alone: the named tree
    and, for a suffixed group, every tree a sharing provider of the named tree lends
    to (the group's one provider may be that lender, as in the candidates); the
    unsuffixed group takes nothing from outside the named tree."""
    index = trees.index
    record = index.by_uuid.get(uuid)
    if record is None:
        return index.empty_mask()
    inside: BoolArray = (trees.root_slot == index.slot_of[record.root_id]) & trees.alive
    roots = index.roots_of(inside)
    return trees.lent(inside, roots) if suffixed else roots


def explain(index: ProviderIndex, request: CandidateRequest, viable: BoolArray | None,
            listed: int) -> Explanation:
    """Count, for each constraint of ``request``, the hosts it excludes on its own.

    ``viable`` is the engine's mask of viable trees (None: none), ``listed`` how many
    excluded hosts to name per constraint. The cost is a few vector operations per
    constraint, over the index already held for the candidates."""
    trees = _Trees(index)
    hosts = trees.hosts
    parts: list[tuple[Constraint, BoolArray]] = []
    for name in sorted(request.root_required):
        parts.append((Constraint("root_required", "", (name,)), trees.root_has(name)))
    for name in sorted(request.root_forbidden):
        parts.append((Constraint("root_forbidden", "", (name,)), hosts & ~trees.root_has(name)))
    for group in request.groups:
        parts.extend(_group_parts(trees, group))
    total = int(np.count_nonzero(hosts))
    satisfied = [hosts & mask for _, mask in parts]
    counted = []
    for (constraint, _), ok in zip(parts, satisfied, strict=True):
        out = hosts & ~ok
        ids = index.slot_ids[np.flatnonzero(out)[:listed]] if listed else ()
        counted.append(Counted(constraint, int(np.count_nonzero(ok)),
                               int(np.count_nonzero(out)), tuple(int(i) for i in ids)))
    viable_count = 0 if viable is None else int(np.count_nonzero(viable[: trees.size] & hosts))
    together: tuple[int, ...] = ()
    relaxed = None
    if viable_count == 0 and satisfied:
        together = no_host_together(hosts, satisfied)
        relaxed = best_relaxation(hosts, satisfied)
    return Explanation(total, viable_count, tuple(counted), together, relaxed)


def no_host_together(hosts: BoolArray, satisfied: list[BoolArray]) -> tuple[int, ...]:
    """A small set of constraints, each satisfied by some host, that no host satisfies
    together; () when some constraint alone leaves no host or all together leave some.

    Greedy: the most excluding constraint first, adding the next most excluding until
    nothing is left, then dropping any member the emptiness does not need."""
    counts = [int(np.count_nonzero(s)) for s in satisfied]
    if min(counts) == 0:
        return ()
    order = sorted(range(len(satisfied)), key=lambda i: counts[i])
    left = hosts.copy()
    chosen: list[int] = []
    for i in order:
        left &= satisfied[i]
        chosen.append(i)
        if not left.any():
            break
    else:
        return ()
    for i in list(chosen):
        rest = [j for j in chosen if j != i]
        if len(rest) >= 2 and not _all_of(hosts, [satisfied[j] for j in rest]).any():
            chosen = rest
    return tuple(sorted(chosen))


def best_relaxation(hosts: BoolArray, satisfied: list[BoolArray]) -> tuple[int, int] | None:
    """The constraint whose removal leaves the most hosts (prefix and suffix
    conjunctions: one pass each way), or None when no single removal helps."""
    n = len(satisfied)
    prefix = [hosts]
    for mask in satisfied:
        prefix.append(prefix[-1] & mask)
    suffix = [hosts] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] & satisfied[i]
    best: tuple[int, int] | None = None
    for i in range(n):
        left = int(np.count_nonzero(prefix[i] & suffix[i + 1]))
        if left and (best is None or left > best[1]):
            best = (i, left)
    return best


def _all_of(hosts: BoolArray, masks: list[BoolArray]) -> BoolArray:
    left = hosts.copy()
    for mask in masks:
        left &= mask
    return left
