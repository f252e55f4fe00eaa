"""A brute-force oracle for allocation candidates.

Written independently of engine/candidates.py, as plainly as possible: for
every tree, try every combination of providers for every group and keep those
that satisfy upstream placement's rules. Exponential, so only for small clouds;
the engine must give exactly the same answers.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from moorage.placement.engine.request import CandidateRequest, RequestGroup
from moorage.placement.storage.records import Inventory, ProviderRecord

SHARING = "MISC_SHARES_VIA_AGGREGATE"

# A candidate as a comparable value: ({(uuid, class, amount)}, {(suffix, {uuids})}).
Key = tuple[frozenset[tuple[str, str, int]], frozenset[tuple[str, frozenset[str]]]]


@dataclass
class Provider:
    uuid: str
    parent: str | None = None
    inventories: dict[str, Inventory] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()


@dataclass
class Cloud:
    providers: list[Provider]  # parents before children
    _index: dict[str, Provider] = field(default_factory=dict, repr=False)

    def by_uuid(self) -> dict[str, Provider]:
        if len(self._index) != len(self.providers):
            self._index = {p.uuid: p for p in self.providers}
        return self._index

    def lineage(self, uuid: str) -> list[str]:
        """``uuid`` and its ancestors, up to the root."""
        index = self.by_uuid()
        found = [uuid]
        while index[found[-1]].parent is not None:
            found.append(index[found[-1]].parent)  # type: ignore[arg-type]
        return found

    def root_of(self, uuid: str) -> str:
        return self.lineage(uuid)[-1]

    def records(self) -> list[ProviderRecord]:
        ids = {p.uuid: i + 1 for i, p in enumerate(self.providers)}
        return [
            ProviderRecord(
                id=ids[p.uuid], uuid=p.uuid, name=f"rp-{p.uuid}", generation=0,
                parent_id=ids[p.parent] if p.parent else None,
                root_id=ids[self.root_of(p.uuid)], created_at=None, updated_at=None,
                traits=p.traits, aggregates=p.aggregates, inventories=dict(p.inventories),
                usages={rc: n for rc, n in p.used.items() if n},
            )
            for p in self.providers
        ]


def _fits(p: Provider, rc: str, amount: int) -> bool:
    inv = p.inventories.get(rc)
    if inv is None:
        return False
    capacity = int((inv.total - inv.reserved) * inv.allocation_ratio)
    return (p.used.get(rc, 0) + amount <= capacity and inv.min_unit <= amount <= inv.max_unit
            and amount % inv.step_size == 0)


def _in_every(aggregates: frozenset[str], member_of: tuple[frozenset[str], ...]) -> bool:
    return all(aggregates & wanted for wanted in member_of)


def oracle(cloud: Cloud, request: CandidateRequest) -> tuple[set[Key], set[str]]:
    """(every candidate, uuids of the providers to summarize)."""
    index = cloud.by_uuid()
    for group in request.groups:
        if group.in_tree is not None and group.in_tree not in index:
            return set(), set()
    roots = [p for p in cloud.providers if p.parent is None]
    sharing = [p for p in cloud.providers if SHARING in p.traits]

    anchors = {
        lender.uuid: {cloud.root_of(lender.uuid)} | {
            cloud.root_of(other.uuid) for other in cloud.providers
            if other.aggregates & lender.aggregates
        }
        for lender in sharing
    }
    trees: dict[str, list[Provider]] = {}
    for p in cloud.providers:
        trees.setdefault(cloud.root_of(p.uuid), []).append(p)

    has_trees = any(p.parent for p in cloud.providers)
    results: set[Key] = set()
    used_roots: set[str] = set()
    allocated: set[str] = set()
    for root in roots:
        if not request.root_required <= root.traits or request.root_forbidden & root.traits:
            continue
        tree = trees[root.uuid]
        lenders = [s for s in sharing
                   if root.uuid in anchors[s.uuid] and cloud.root_of(s.uuid) != root.uuid]
        per_group = [_options(cloud, g, root, tree, lenders) for g in request.groups]
        for picked in itertools.product(*per_group):
            key = _combine(cloud, request, picked, has_trees)
            if key is None:
                continue
            results.add(key)
            for uuid, _, _ in key[0]:
                allocated.add(uuid)
                used_roots.add(cloud.root_of(uuid))
    if not request.nested_aware and has_trees:
        return results, allocated
    summary = {p.uuid for root in used_roots for p in trees[root]}
    return results, summary


Option = tuple[dict[tuple[str, str], int], tuple[str, ...]]


def _options(cloud: Cloud, group: RequestGroup, root: Provider, tree: list[Provider],
             lenders: list[Provider]) -> list[Option]:
    in_tree_root = cloud.root_of(group.in_tree) if group.in_tree else None
    if group.use_same_provider:
        options: list[Option] = []
        for p in tree + lenders:
            if in_tree_root is not None and cloud.root_of(p.uuid) != in_tree_root:
                continue
            if not all(_fits(p, rc, amt) for rc, amt in group.resources.items()):
                continue
            if not all(p.traits & names for names in group.required_traits):
                continue
            if p.traits & group.forbidden_traits:
                continue
            if not _in_every(p.aggregates, group.member_of):
                continue
            if p.aggregates & group.forbidden_aggregates:
                continue
            options.append(({(p.uuid, rc): amt for rc, amt in group.resources.items()},
                            (p.uuid,)))
        return options

    def usable(p: Provider, lender: bool) -> bool:
        if p.traits & group.forbidden_traits:
            return False
        if group.member_of:
            if lender and not _in_every(p.aggregates, group.member_of):
                return False
            if not (_in_every(p.aggregates, group.member_of)
                    or _in_every(root.aggregates, group.member_of)):
                return False
        return not (group.forbidden_aggregates & (p.aggregates | root.aggregates))

    choices = []
    for rc, amount in group.resources.items():
        providers = [p for p in tree
                     if (in_tree_root is None or root.uuid == in_tree_root)
                     and _fits(p, rc, amount) and usable(p, False)]
        if in_tree_root is None:
            providers += [s for s in lenders if _fits(s, rc, amount) and usable(s, True)]
        choices.append([(p, rc, amount) for p in providers])
    options = []
    for combo in itertools.product(*choices):
        held: frozenset[str] = frozenset().union(*(p.traits for p, _, _ in combo))
        if not all(held & names for names in group.required_traits):
            continue
        options.append(({(p.uuid, rc): amt for p, rc, amt in combo},
                        tuple(dict.fromkeys(p.uuid for p, _, _ in combo))))
    return options


def _combine(cloud: Cloud, request: CandidateRequest, picked: tuple[Option, ...],
             has_trees: bool) -> Key | None:
    index = cloud.by_uuid()
    if request.group_policy == "isolate":
        singles = [opt[1][0] for g, opt in zip(request.groups, picked, strict=True)
                   if g.use_same_provider]
        if len(set(singles)) != len(singles):
            return None
    mappings: dict[str, set[str]] = {}
    for group, (_, providers) in zip(request.groups, picked, strict=True):
        mappings.setdefault(group.suffix, set()).update(providers)
    for suffixes in request.same_subtrees:
        involved = set().union(*(mappings.get(s, set()) for s in suffixes))
        if len(involved) > 1 and not any(
            all(top in cloud.lineage(other) for other in involved) for top in involved
        ):
            return None
    totals: dict[tuple[str, str], int] = {}
    for amounts, _ in picked:
        for key, amount in amounts.items():
            totals[key] = totals.get(key, 0) + amount
    for (uuid, rc), total in totals.items():
        p = index[uuid]
        inv = p.inventories[rc]
        capacity = int((inv.total - inv.reserved) * inv.allocation_ratio)
        if p.used.get(rc, 0) + total > capacity or total > inv.max_unit:
            return None
    if not request.nested_aware and has_trees:
        uuids = {uuid for uuid, _ in totals}
        if len({cloud.root_of(u) for u in uuids}) != len(uuids):
            return None
    return (frozenset((u, rc, amt) for (u, rc), amt in totals.items()),
            frozenset((s, frozenset(ps)) for s, ps in mappings.items()))
