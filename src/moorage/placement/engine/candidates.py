"""Allocation candidates: which providers can satisfy a request, and how.

The search has two phases.

1. Vectorized filtering over every provider at once (numpy masks from the
   index): for each request group, which providers can serve it and which
   trees ("anchors", named by their root) can serve it at all. A tree is viable
   when every group can be served in it and its root passes ``root_required``.

2. Generation, tree by tree, stopping as soon as ``limit`` (or
   ``[placement] max_allocation_candidates``) candidates exist. A viable tree
   that is a lone root provider with no sharing provider lending to it (the
   common compute node) needs no enumeration: its single candidate was already
   decided in phase 1. Other trees are enumerated depth-first, pruning
   combinations that exceed capacity or break ``group_policy=isolate`` early.

The semantics are upstream placement's (1.10 to 1.39): the unsuffixed group may
take each resource class from a different provider of the tree or from a
sharing provider, and its required traits must be held by those providers
together; each suffixed group is served by one provider that has every trait
itself; ``member_of`` on the unsuffixed group is satisfied by the provider or
its tree's root; sharing providers lend to every tree with a provider in one of
their aggregates.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from moorage.placement.engine.explain import Explanation, explain
from moorage.placement.engine.index import BoolArray, ProviderIndex
from moorage.placement.engine.provider_filter import any_of, member_mask, trait_mask
from moorage.placement.engine.request import AllocationRequest, CandidateRequest, RequestGroup

# A piece of a candidate: the amounts one group takes, as (provider id, class, amount).
Amounts = tuple[tuple[int, str, int], ...]


@dataclass
class Candidates:
    """The answer: candidates in order, and the providers to summarize.

    When every candidate is a lone root serving every group by itself (the common
    flat cloud), they are given compactly as ``lone_ids`` with the shared
    ``lone_amounts``, and ``requests`` is empty.
    """

    requests: list[AllocationRequest]
    # Provider ids whose summaries accompany the candidates.
    summary_ids: list[int]
    lone_ids: list[int] = field(default_factory=list)
    lone_amounts: dict[str, int] = field(default_factory=dict)
    suffixes: tuple[str, ...] = ()
    # Each constraint counted on its own (explain.py), when it was asked for.
    explanation: Explanation | None = None

    def all(self) -> Iterator[AllocationRequest]:
        """Every candidate as an AllocationRequest, made one at a time for lone roots
        (a whole cloud of them would be as many objects held at once)."""
        if self.requests or not self.lone_ids:
            yield from self.requests
            return
        for rp in self.lone_ids:
            yield AllocationRequest({rp: self.lone_amounts}, {s: (rp,) for s in self.suffixes},
                                    rp)

    def __len__(self) -> int:
        return len(self.requests) or len(self.lone_ids)


@dataclass(frozen=True)
class _Option:
    """One way to satisfy one group inside one tree."""

    amounts: Amounts
    providers: tuple[int, ...]


@dataclass
class _GroupMatch:
    """Phase-1 result for one request group."""

    group: RequestGroup
    # Roots (as slots) of the trees in which this group has at least one option.
    anchors: BoolArray
    # Suffixed groups: providers that can serve the whole group alone.
    providers: BoolArray | None = None
    # Unsuffixed group: per resource class, providers that can serve that class.
    by_class: dict[str, BoolArray] = field(default_factory=dict)
    # Sharing providers lending to a tree: anchor root id -> provider ids (suffixed)
    # or (class, anchor root id) -> provider ids (unsuffixed).
    lenders: dict[object, list[int]] = field(default_factory=dict)


class _Search:
    """Phase 1 for one request against one consistent index."""

    def __init__(self, index: ProviderIndex, request: CandidateRequest) -> None:
        self.index = index
        self.request = request
        size = index.size
        self.size = size
        self.root_slot = index.root_slot[:size]
        self.sharing = index.sharing_anchors()
        self.slot_of = index.slot_of
        anchors = index.alive[:size] & index.is_root[:size]
        for name in request.root_required:
            anchors &= index.trait_mask(name)
        for name in request.root_forbidden:
            anchors &= ~index.trait_mask(name)
        self.matches = [self._match(group) for group in request.groups]
        for match in self.matches:
            anchors &= match.anchors
        self.viable = anchors

    # -- per group ------------------------------------------------------------
    def _tree_mask(self, group: RequestGroup) -> BoolArray | None:
        """Providers in ``in_tree``'s tree; None when unrestricted; all False if unknown."""
        if group.in_tree is None:
            return None
        record = self.index.by_uuid.get(group.in_tree)
        if record is None:
            return self.index.empty_mask()
        same_tree: BoolArray = self.root_slot == self.slot_of[record.root_id]
        return same_tree

    def _match(self, group: RequestGroup) -> _GroupMatch:
        if group.use_same_provider:
            return self._match_single(group)
        return self._match_tree(group)

    def _match_single(self, group: RequestGroup) -> _GroupMatch:
        """A suffixed group: one provider has every resource and trait itself."""
        index = self.index
        mask = trait_mask(index, list(group.required_traits))
        for rc, amount in group.resources.items():
            mask &= index.fits(rc, amount)
        if group.forbidden_traits:
            mask &= ~any_of(index, group.forbidden_traits, "traits")
        if group.member_of:
            mask &= member_mask(index, list(group.member_of))
        if group.forbidden_aggregates:
            mask &= ~any_of(index, group.forbidden_aggregates, "aggregates")
        tree = self._tree_mask(group)
        if tree is not None:
            mask &= tree
        anchors = self.index.roots_of(mask)
        lenders: dict[object, list[int]] = {}
        for provider_id, roots in self.sharing.items():
            if not mask[self.slot_of[provider_id]]:
                continue
            own_root = index.by_id[provider_id].root_id
            for root_id in roots:
                if root_id != own_root:
                    anchors[self.slot_of[root_id]] = True
                    lenders.setdefault(root_id, []).append(provider_id)
        return _GroupMatch(group, anchors, providers=mask, lenders=lenders)

    def _match_tree(self, group: RequestGroup) -> _GroupMatch:
        """The unsuffixed group: each class from any provider of the tree, or a lender."""
        index = self.index
        usable = index.alive[: self.size].copy()
        if group.forbidden_traits:
            # A provider with a forbidden trait can never be part of a candidate.
            usable &= ~any_of(index, group.forbidden_traits, "traits")
        members = None
        if group.member_of:
            members = member_mask(index, list(group.member_of))
            usable &= members | members[self.root_slot]
        excluded = None
        if group.forbidden_aggregates:
            excluded = any_of(index, group.forbidden_aggregates, "aggregates")
            usable &= ~excluded & ~excluded[self.root_slot]
        tree = self._tree_mask(group)
        if tree is not None:
            usable &= tree
        anchors = np.ones(self.size, dtype=np.bool_)
        by_class: dict[str, BoolArray] = {}
        lenders: dict[object, list[int]] = {}
        for rc, amount in group.resources.items():
            fits = index.fits(rc, amount)
            ok = fits & usable
            by_class[rc] = ok
            rc_anchors = self.index.roots_of(ok)
            if tree is None:
                for provider_id, roots in self.sharing.items():
                    slot = self.slot_of[provider_id]
                    if not fits[slot] or not usable[slot]:
                        continue
                    if members is not None and not members[slot]:
                        continue
                    own_root = index.by_id[provider_id].root_id
                    for root_id in roots:
                        if root_id == own_root:
                            continue
                        root_slot = self.slot_of[root_id]
                        if excluded is not None and excluded[root_slot]:
                            continue
                        rc_anchors[root_slot] = True
                        lenders.setdefault((rc, root_id), []).append(provider_id)
            anchors &= rc_anchors
        return _GroupMatch(group, anchors, by_class=by_class, lenders=lenders)

    # -- lone roots, decided in phase 1 ------------------------------------------
    def lone_roots(self) -> tuple[BoolArray, BoolArray]:
        """(viable lone roots, those whose single candidate is valid).

        A lone root has no children and no sharing provider lends to it, so the
        only candidate it can offer is itself serving every group.
        """
        index = self.index
        lone = self.viable & ~index.has_children[: self.size]
        for provider_id, roots in self.sharing.items():
            own_root = index.by_id[provider_id].root_id
            for root_id in roots:
                if root_id != own_root:
                    lone[self.slot_of[root_id]] = False
        ok = lone.copy()
        suffixed = 0
        for match in self.matches:
            if match.providers is not None:
                suffixed += 1
                ok &= match.providers
                continue
            for rc_mask in match.by_class.values():
                ok &= rc_mask
            if match.group.required_traits:
                ok &= trait_mask(index, list(match.group.required_traits))
        if self.request.group_policy == "isolate" and suffixed >= 2:
            ok[:] = False
        for rc, total in self.shared_class_totals().items():
            # Several groups take this class from the same provider: check the sum.
            columns = index.resources.get(rc)
            if columns is None:
                ok[:] = False
                continue
            ok &= columns.holds(total)[: self.size]
        return lone, ok

    def shared_class_totals(self) -> dict[str, int]:
        """Total amount per class requested by more than one group."""
        totals: dict[str, int] = {}
        counts: dict[str, int] = {}
        for group in self.request.groups:
            for rc, amount in group.resources.items():
                totals[rc] = totals.get(rc, 0) + amount
                counts[rc] = counts.get(rc, 0) + 1
        return {rc: total for rc, total in totals.items() if counts[rc] > 1}


class _TreeEnumerator:
    """Phase 2 for trees that need it: every valid combination of options."""

    def __init__(self, search: _Search) -> None:
        self.search = search
        self.index = search.index
        self.request = search.request
        self.suffixed = sum(1 for g in self.request.groups if g.use_same_provider)
        self.isolate = self.request.group_policy == "isolate"

    def options(self, match: _GroupMatch, anchor_id: int) -> list[_Option]:
        index = self.index
        members = sorted(index.tree_members.get(anchor_id, ()))
        slot_of = index.slot_of
        group = match.group
        if match.providers is not None:
            chosen = [p for p in members if match.providers[slot_of[p]]]
            chosen += [p for p in match.lenders.get(anchor_id, ()) if p not in chosen]
            return [
                _Option(tuple((p, rc, amt) for rc, amt in group.resources.items()), (p,))
                for p in chosen
            ]
        per_class: list[list[tuple[int, str, int]]] = []
        for rc, amount in group.resources.items():
            mask = match.by_class[rc]
            providers = [p for p in members if mask[slot_of[p]]]
            providers += [p for p in match.lenders.get((rc, anchor_id), ()) if p not in providers]
            if not providers:
                return []
            per_class.append([(p, rc, amount) for p in providers])
        options = []
        for combo in itertools.product(*per_class):
            providers_used = tuple(dict.fromkeys(p for p, _, _ in combo))
            if group.required_traits:
                held: set[str] = set()
                for p in providers_used:
                    held |= index.by_id[p].traits
                if not all(names & held for names in group.required_traits):
                    continue
            options.append(_Option(tuple(combo), providers_used))
        return options

    def candidates(self, anchor_id: int) -> Iterator[AllocationRequest]:
        choices = [self.options(match, anchor_id) for match in self.search.matches]
        if not all(choices):
            return
        yield from self._walk(anchor_id, choices, 0, [], {}, set())

    def _walk(
        self,
        anchor_id: int,
        choices: list[list[_Option]],
        depth: int,
        picked: list[_Option],
        totals: dict[tuple[int, str], int],
        isolated: set[int],
    ) -> Iterator[AllocationRequest]:
        if depth == len(choices):
            candidate = self._finish(anchor_id, picked, totals)
            if candidate is not None:
                yield candidate
            return
        group = self.request.groups[depth]
        for option in choices[depth]:
            if self.isolate and group.use_same_provider and option.providers[0] in isolated:
                continue
            added = self._add(totals, option.amounts)
            if added is None:
                continue
            picked.append(option)
            if self.isolate and group.use_same_provider:
                isolated.add(option.providers[0])
            yield from self._walk(anchor_id, choices, depth + 1, picked, added, isolated)
            picked.pop()
            if self.isolate and group.use_same_provider:
                isolated.discard(option.providers[0])

    def _add(
        self, totals: dict[tuple[int, str], int], amounts: Amounts
    ) -> dict[tuple[int, str], int] | None:
        """Totals with ``amounts`` added, or None if some provider would overflow."""
        by_id = self.index.by_id
        merged = dict(totals)
        for provider_id, rc, amount in amounts:
            key = (provider_id, rc)
            total = merged.get(key, 0) + amount
            if key in totals:
                record = by_id[provider_id]
                inventory = record.inventories[rc]
                if total > inventory.capacity - record.used(rc) or total > inventory.max_unit:
                    return None
            merged[key] = total
        return merged

    def _finish(
        self, anchor_id: int, picked: list[_Option], totals: dict[tuple[int, str], int]
    ) -> AllocationRequest | None:
        mappings: dict[str, tuple[int, ...]] = {}
        for group, option in zip(self.request.groups, picked, strict=True):
            mappings[group.suffix] = tuple(
                dict.fromkeys(mappings.get(group.suffix, ()) + option.providers)
            )
        for suffixes in self.request.same_subtrees:
            involved = {p for s in suffixes for p in mappings.get(s, ())}
            if not self._one_subtree(involved):
                return None
        allocations: dict[int, dict[str, int]] = {}
        for (provider_id, rc), total in totals.items():
            allocations.setdefault(provider_id, {})[rc] = total
        if not self.request.nested_aware and self.index.has_trees:
            roots = {self.index.by_id[p].root_id for p in allocations}
            if len(roots) != len(allocations):
                return None
        return AllocationRequest(allocations, mappings, anchor_id)

    def _one_subtree(self, providers: set[int]) -> bool:
        """Whether one of ``providers`` is an ancestor (or itself) of all the others."""
        if len(providers) <= 1:
            return True
        common: set[int] | None = None
        for provider_id in providers:
            lineage = {provider_id, *self.index.ancestors(provider_id)}
            common = lineage if common is None else common & lineage
        return bool(common and common & providers)


def _dedupe_key(candidate: AllocationRequest) -> tuple[frozenset[object], frozenset[object]]:
    amounts = frozenset(
        (p, rc, amt) for p, by_rc in candidate.allocations.items() for rc, amt in by_rc.items()
    )
    mappings = frozenset((s, frozenset(ps)) for s, ps in candidate.mappings.items())
    return amounts, mappings


def _roundrobin(generators: list[Iterator[AllocationRequest]]) -> Iterator[AllocationRequest]:
    active = list(generators)
    while active:
        still = []
        for generator in active:
            item = next(generator, None)
            if item is not None:
                yield item
                still.append(generator)
        active = still


def find_candidates(
    index: ProviderIndex,
    request: CandidateRequest,
    *,
    randomize: bool = False,
    max_candidates: int = -1,
    strategy: str = "depth-first",
    rng: np.random.Generator | None = None,
    explain_listing: int | None = None,
) -> Candidates:
    """The allocation candidates for ``request``, at most ``request.limit`` of them.

    With ``explain_listing`` (a number of hosts to name per constraint), the answer
    also counts what each constraint excludes on its own (engine/explain.py)."""
    explanation = None
    for group in request.groups:
        if group.in_tree is not None and group.in_tree not in index.by_uuid:
            if explain_listing is not None:
                explanation = explain(index, request, None, explain_listing)
            return Candidates([], [], explanation=explanation)
    search = _Search(index, request)
    if not search.viable.any():
        if explain_listing is not None:
            explanation = explain(index, request, search.viable, explain_listing)
        return Candidates([], [], explanation=explanation)
    lone, lone_ok = search.lone_roots()
    if explain_listing is not None:
        # Lone roots are decided in phase 1; other viable trees are counted as viable
        # although their enumeration may find no candidate (same_subtree, isolate).
        explanation = explain(index, request, (search.viable & ~lone) | lone_ok,
                              explain_listing)
    found = _generate(index, request, search, (lone, lone_ok), randomize, max_candidates,
                      strategy, rng)
    found.explanation = explanation
    return found


def _generate(index: ProviderIndex, request: CandidateRequest, search: _Search,
              lone_roots: tuple[BoolArray, BoolArray], randomize: bool, max_candidates: int,
              strategy: str, rng: np.random.Generator | None) -> Candidates:
    """Phase 2: the candidates of the viable trees (some), in order, up to the limit.
    ``lone_roots``: the search's (lone roots, those whose one candidate is valid)."""
    lone, lone_ok = lone_roots
    wanted = request.limit if request.limit is not None else -1
    if max_candidates >= 0:
        wanted = max_candidates if wanted < 0 else min(wanted, max_candidates)
    merged_amounts = _merged_amounts(request)
    suffixes = [g.suffix for g in request.groups]
    if bool(lone[search.viable].all()):
        # Every viable tree is a lone root: phase 1 decided everything. The answer is
        # those whose one candidate is valid, in provider order, or a random few of
        # them drawn as such (not every viable host shuffled to keep the first few:
        # at 10,000 hosts, 60 µs instead of 280).
        ok_slots = np.flatnonzero(search.viable & lone_ok)
        if randomize:
            rng = rng or np.random.default_rng()
            ok_slots = (ok_slots[rng.choice(len(ok_slots), size=wanted, replace=False)]
                        if 0 <= wanted < len(ok_slots) else rng.permutation(ok_slots))
        else:
            ok_slots = ok_slots[np.argsort(index.slot_ids[ok_slots], kind="stable")]
            if wanted >= 0:
                ok_slots = ok_slots[:wanted]
        lone_ids = index.slot_ids[ok_slots].tolist()
        return Candidates([], lone_ids, lone_ids, merged_amounts, tuple(suffixes))
    anchor_slots = np.flatnonzero(search.viable)
    if randomize:
        anchor_slots = (rng or np.random.default_rng()).permutation(anchor_slots)
    else:
        anchor_slots = anchor_slots[np.argsort(index.slot_ids[anchor_slots], kind="stable")]
    anchor_ids = index.slot_ids[anchor_slots]
    enumerator = _TreeEnumerator(search)

    def per_anchor(anchor_id: int, is_lone: bool, is_ok: bool) -> Iterator[AllocationRequest]:
        if not is_lone:
            yield from enumerator.candidates(anchor_id)
        elif is_ok:
            yield AllocationRequest(
                {anchor_id: merged_amounts}, {s: (anchor_id,) for s in suffixes}, anchor_id
            )

    plan = zip(anchor_ids.tolist(), lone[anchor_slots].tolist(), lone_ok[anchor_slots].tolist(),
               strict=True)
    stream: Iterable[AllocationRequest]
    if strategy == "breadth-first":
        stream = _roundrobin([per_anchor(*item) for item in plan])
    else:
        stream = itertools.chain.from_iterable(per_anchor(*item) for item in plan)
    seen: set[object] = set()
    found = []
    for candidate in stream:
        key = _dedupe_key(candidate)
        if key in seen:
            continue
        seen.add(key)
        found.append(candidate)
        if len(found) == wanted:
            break
    return Candidates(found, _summary_ids(index, request, found))


def _merged_amounts(request: CandidateRequest) -> dict[str, int]:
    totals: dict[str, int] = {}
    for group in request.groups:
        for rc, amount in group.resources.items():
            totals[rc] = totals.get(rc, 0) + amount
    return totals


def _summary_ids(
    index: ProviderIndex, request: CandidateRequest, found: list[AllocationRequest]
) -> list[int]:
    """Providers to summarize: every provider of the trees the candidates use."""
    if not request.nested_aware and index.has_trees:
        used = dict.fromkeys(p for c in found for p in c.allocations)
        return list(used)
    roots = dict.fromkeys(index.by_id[p].root_id for c in found for p in c.allocations)
    ids: list[int] = []
    for root_id in roots:
        members = index.tree_members.get(root_id, ())
        ids.extend(sorted(members) if len(members) > 1 else members)
    return ids
