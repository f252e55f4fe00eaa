"""What GET /allocation_candidates asks for, independent of HTTP.

A ``CandidateRequest`` is a list of ``RequestGroup``s plus request-wide
parameters. The unsuffixed group may be satisfied by several providers of one
tree (and sharing providers); each suffixed (granular) group by exactly one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


@dataclass(frozen=True)
class RequestGroup:
    """One request group: ``resources[S]``, ``required[S]``, ``member_of[S]``, ``in_tree[S]``."""

    suffix: str = ""
    resources: dict[str, int] = field(default_factory=dict)
    # All of these sets must be hit; within one set any trait will do (1.39 "in:").
    required_traits: tuple[frozenset[str], ...] = ()
    forbidden_traits: frozenset[str] = frozenset()
    # All of these sets must be hit; within one set any aggregate will do.
    member_of: tuple[frozenset[str], ...] = ()
    forbidden_aggregates: frozenset[str] = frozenset()
    in_tree: str | None = None

    @property
    def use_same_provider(self) -> bool:
        """Suffixed groups must be satisfied by a single provider."""
        return self.suffix != ""

    @property
    def trait_names(self) -> frozenset[str]:
        return frozenset(t for names in self.required_traits for t in names) | (
            self.forbidden_traits
        )


@dataclass(frozen=True)
class CandidateRequest:
    groups: tuple[RequestGroup, ...]
    group_policy: str | None = None
    limit: int | None = None
    # ``root_required``: traits the root of each candidate's tree must (not) have.
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    # ``same_subtree``: for each set of suffixes, the providers satisfying those groups
    # must all lie below one of them.
    same_subtrees: tuple[frozenset[str], ...] = ()
    # From 1.29 a candidate may use several providers of one tree.
    nested_aware: bool = True

    @property
    def resource_classes(self) -> frozenset[str]:
        return frozenset(rc for g in self.groups for rc in g.resources)

    @property
    def trait_names(self) -> frozenset[str]:
        names: frozenset[str] = self.root_required | self.root_forbidden
        for group in self.groups:
            names |= group.trait_names
        return names


class AllocationRequest(NamedTuple):
    """One candidate: amounts by provider id, and which providers serve which group."""

    allocations: dict[int, dict[str, int]]
    mappings: dict[str, tuple[int, ...]]
    anchor: int
