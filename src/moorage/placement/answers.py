"""Placement's answers as the API documents them, for its clients: the keys they read
and the microversion that brought each. ``PlacementClient.request`` returns the
decoded body untyped; the caller, which knows what it asked, annotates it with one
of these, and mypy checks what it reads from it."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class ProviderJSON(TypedDict):
    uuid: str
    name: str
    generation: int
    parent_provider_uuid: NotRequired[str | None]  # from 1.14
    root_provider_uuid: NotRequired[str]  # from 1.14


class InventoryJSON(TypedDict):
    total: int
    reserved: NotRequired[int]
    min_unit: NotRequired[int]
    max_unit: NotRequired[int]
    step_size: NotRequired[int]
    allocation_ratio: NotRequired[float]


class ConstraintJSON(TypedDict):
    """One constraint counted on its own (the Moorage-Explain extension)."""

    kind: str
    group: str
    names: list[str]
    amount: NotRequired[int]
    satisfied: int
    excluded: int
    excluded_roots: list[str]


class RelaxedJSON(TypedDict):
    constraint: int
    viable: int


class ExplanationJSON(TypedDict):
    """GET /allocation_candidates' ``moorage_explanation``: each constraint's count, the
    constraints no host satisfies together (indices), and the smallest change."""

    hosts: int
    viable: int
    constraints: list[ConstraintJSON]
    together: list[int]
    relaxed: RelaxedJSON | None


class Providers(TypedDict):
    resource_providers: list[ProviderJSON]


class Inventories(TypedDict):
    resource_provider_generation: int
    inventories: dict[str, InventoryJSON]


class Usages(TypedDict):
    usages: dict[str, int]


class TraitNames(TypedDict):
    traits: list[str]


class Traits(TraitNames):
    resource_provider_generation: int


class Aggregates(TypedDict):
    resource_provider_generation: int
    aggregates: list[str]


class Resources(TypedDict):
    resources: dict[str, int]


class AllocationRequest(TypedDict):
    allocations: dict[str, Resources]


class Capacity(TypedDict):
    capacity: int
    used: int


class Summary(TypedDict):
    resources: dict[str, Capacity]
    traits: NotRequired[list[str]]  # from 1.17
    parent_provider_uuid: NotRequired[str | None]  # from 1.29
    root_provider_uuid: NotRequired[str]  # from 1.29


class Candidates(TypedDict):
    allocation_requests: list[AllocationRequest]
    provider_summaries: dict[str, Summary]
    moorage_explanation: NotRequired[ExplanationJSON]


class ConsumerAllocations(TypedDict):
    allocations: dict[str, Resources]
    consumer_generation: NotRequired[int | None]  # from 1.28
