"""GET /resource_providers filtering, answered from the index.

Every filter applies to each provider on its own (unlike allocation
candidates, where a tree can satisfy a request together).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from moorage.placement.engine.index import BoolArray, ProviderIndex
from moorage.placement.storage.records import ProviderRecord


@dataclass(frozen=True)
class ProviderFilter:
    name: str | None = None
    uuid: str | None = None
    in_tree: str | None = None
    member_of: list[frozenset[str]] = field(default_factory=list)
    forbidden_aggregates: frozenset[str] = frozenset()
    required_traits: list[frozenset[str]] = field(default_factory=list)
    forbidden_traits: frozenset[str] = frozenset()
    resources: dict[str, int] = field(default_factory=dict)


def any_of(index: ProviderIndex, names: frozenset[str], masks: str) -> BoolArray:
    """Slots having at least one of ``names`` (traits or aggregates)."""
    lookup = index.trait_mask if masks == "traits" else index.agg_mask
    result = index.empty_mask()
    for name in names:
        result |= lookup(name)
    return result


def member_mask(index: ProviderIndex, member_of: list[frozenset[str]]) -> BoolArray:
    """Slots in at least one aggregate of every set of ``member_of``."""
    result = index.alive[: index.size].copy()
    for aggregates in member_of:
        result &= any_of(index, aggregates, "aggregates")
    return result


def trait_mask(index: ProviderIndex, required: list[frozenset[str]]) -> BoolArray:
    """Slots having at least one trait of every set of ``required``."""
    result = index.alive[: index.size].copy()
    for names in required:
        result &= any_of(index, names, "traits")
    return result


def matching_providers(index: ProviderIndex, wanted: ProviderFilter) -> list[ProviderRecord]:
    """The providers matching every filter, oldest first."""
    if wanted.uuid is not None or wanted.name is not None:
        record = (
            index.by_uuid.get(wanted.uuid) if wanted.uuid is not None
            else index.by_name.get(wanted.name or "")
        )
        if record is None or (wanted.name is not None and record.name != wanted.name):
            return []
        mask = index.empty_mask()
        mask[index.slot_of[record.id]] = True
    else:
        mask = index.alive[: index.size].copy()
    if wanted.in_tree is not None:
        anchor = index.by_uuid.get(wanted.in_tree)
        if anchor is None:
            return []
        mask &= index.root_slot[: index.size] == index.slot_of[anchor.root_id]
    if wanted.required_traits:
        mask &= trait_mask(index, wanted.required_traits)
    if wanted.forbidden_traits:
        mask &= ~any_of(index, wanted.forbidden_traits, "traits")
    if wanted.member_of:
        mask &= member_mask(index, wanted.member_of)
    if wanted.forbidden_aggregates:
        mask &= ~any_of(index, wanted.forbidden_aggregates, "aggregates")
    for resource_class, amount in wanted.resources.items():
        mask &= index.fits(resource_class, amount)
    records = index.records_at(np.flatnonzero(mask))
    records.sort(key=lambda r: r.id)
    return records
