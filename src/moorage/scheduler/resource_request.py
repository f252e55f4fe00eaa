"""A request spec as placement reads it: the query of GET /allocation_candidates.

Upstream's semantics (nova's ``ResourceRequest``), written out as pure functions:

- the flavor's extra specs ``resources[S]:RC=N`` and ``trait[S]:NAME=required|forbidden``
  fill request groups (no suffix: the unnumbered group; suffix S: a group satisfied by
  one provider); ``group_policy`` is ``none`` or ``isolate``;
- the image's ``trait:NAME=required`` properties join the unnumbered group's required
  traits (a union with the flavor's);
- VCPU, MEMORY_MB and DISK_GB come from the flavor unless a group already names that
  class (even with 0); DISK_GB is root + ephemeral + swap (MB rounded up to GB), with
  no root disk for a volume-backed server;
- zero amounts are dropped, and groups left with neither resources nor traits;
- the request filters' root_required/root_forbidden, member_of and forbidden
  aggregates apply to the whole request (root) and to the unnumbered group.

A malformed extra spec is not silently lost: it becomes a note on the request (the
compute API refuses such specs when they are written; these notes are for flavors
that predate a rule).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.model.vocabulary import is_resource_class_name
from moorage.scheduler.types import RequestSpec

# resources[SUFFIX]:CLASS = amount, trait[SUFFIX]:NAME = required|forbidden
EXTRA_SPEC = re.compile(r"^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.*)$")
GROUP_POLICIES = ("none", "isolate")
TRAIT_VALUES = ("required", "forbidden")
UNNUMBERED = ""


@dataclass
class RequestGroup:
    """Resources and traits that one provider (suffixed) or one tree (unnumbered)
    must satisfy."""

    suffix: str = UNNUMBERED
    resources: dict[str, int] = field(default_factory=dict)
    required: set[str] = field(default_factory=set)
    forbidden: set[str] = field(default_factory=set)
    member_of: list[frozenset[str]] = field(default_factory=list)
    forbidden_aggregates: set[str] = field(default_factory=set)
    in_tree: str | None = None

    def is_empty(self) -> bool:
        return not (self.resources or self.required or self.forbidden)


@dataclass(frozen=True)
class ResourceRequest:
    """Everything GET /allocation_candidates is asked, and the notes on extra specs
    that could not be used."""

    groups: Mapping[str, RequestGroup]
    group_policy: str | None = None
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    limit: int | None = None
    notes: Sequence[str] = ()

    @property
    def unnumbered(self) -> RequestGroup:
        return self.groups.get(UNNUMBERED) or RequestGroup()

    def all_required_traits(self) -> frozenset[str]:
        """Required traits of every group and of the root."""
        found = set(self.root_required)
        for group in self.groups.values():
            found |= group.required
        return frozenset(found)

    def all_forbidden_traits(self) -> frozenset[str]:
        found = set(self.root_forbidden)
        for group in self.groups.values():
            found |= group.forbidden
        return frozenset(found)

    def merged_resources(self) -> dict[str, int]:
        """The amounts of all groups added together, by class."""
        total: dict[str, int] = {}
        for group in self.groups.values():
            for rc, amount in group.resources.items():
                total[rc] = total.get(rc, 0) + amount
        return total

    def query_params(self) -> list[tuple[str, str]]:
        """The query string of GET /allocation_candidates, sorted (for readable logs
        and stable tests; placement does not care)."""
        params: list[tuple[str, str]] = []
        for suffix in sorted(self.groups):
            params.extend(group_params(self.groups[suffix]))
        if self.group_policy:
            params.append(("group_policy", self.group_policy))
        root = trait_list(self.root_required, self.root_forbidden)
        if root:
            params.append(("root_required", root))
        if self.limit is not None:
            params.append(("limit", str(self.limit)))
        return sorted(params)

    def to_json(self) -> dict[str, object]:
        """The request as data, for NoValidHost details and the server's record."""
        return {
            "groups": {
                suffix or "unnumbered": {
                    "resources": dict(sorted(g.resources.items())),
                    "required": sorted(g.required),
                    "forbidden": sorted(g.forbidden),
                    "member_of": [sorted(a) for a in g.member_of],
                    "forbidden_aggregates": sorted(g.forbidden_aggregates),
                }
                for suffix, g in sorted(self.groups.items())
            },
            "group_policy": self.group_policy,
            "root_required": sorted(self.root_required),
            "root_forbidden": sorted(self.root_forbidden),
            "limit": self.limit,
            "query": [list(p) for p in self.query_params()],
            "notes": list(self.notes),
        }


def trait_list(required: set[str] | frozenset[str],
               forbidden: set[str] | frozenset[str]) -> str:
    """``A,B,!C``: required traits sorted, then forbidden ones sorted (upstream's order)."""
    return ",".join([*sorted(required), *(f"!{t}" for t in sorted(forbidden))])


def group_params(group: RequestGroup) -> list[tuple[str, str]]:
    """One group's parameters: resourcesS, requiredS, member_ofS (in: and !in:), in_treeS."""
    s = group.suffix
    params: list[tuple[str, str]] = []
    if group.resources:
        params.append((f"resources{s}", ",".join(
            f"{rc}:{amount}" for rc, amount in sorted(group.resources.items()))))
    traits = trait_list(group.required, group.forbidden)
    if traits:
        params.append((f"required{s}", traits))
    params.extend((f"member_of{s}", "in:" + ",".join(sorted(aggs)))
                  for aggs in group.member_of if aggs)
    if group.forbidden_aggregates:
        params.append((f"member_of{s}", "!in:" + ",".join(sorted(group.forbidden_aggregates))))
    if group.in_tree:
        params.append((f"in_tree{s}", group.in_tree))
    return params


@dataclass(frozen=True)
class FlavorGroups:
    """What a flavor's extra specs ask: groups by suffix, the policy, and notes on
    specs that could not be used."""

    groups: dict[str, RequestGroup]
    group_policy: str | None
    notes: tuple[str, ...]


def flavor_groups(extra_specs: Mapping[str, str]) -> FlavorGroups:
    """Parse ``resources[S]:RC``, ``trait[S]:NAME`` and ``group_policy`` extra specs.
    Other keys (``hw:``, ``capabilities:``, ...) are not placement's and are skipped."""
    groups: dict[str, RequestGroup] = {}
    notes: list[str] = []
    policy: str | None = None
    for key, value in sorted(extra_specs.items()):
        if key == "group_policy":
            if value in GROUP_POLICIES:
                policy = value
            else:
                notes.append(f"extra spec group_policy={value!r} ignored: allowed: "
                             f"{', '.join(GROUP_POLICIES)}")
            continue
        match = EXTRA_SPEC.match(key)
        if not match:
            continue
        kind, suffix, name = match.group(1), match.group(2) or UNNUMBERED, match.group(3)
        group = groups.setdefault(suffix, RequestGroup(suffix))
        if kind == "resources":
            amount = _amount(value)
            if not is_resource_class_name(name):
                notes.append(f"extra spec {key} ignored: {name!r} is not a standard or "
                             "CUSTOM_* resource class")
            elif amount is None:
                notes.append(f"extra spec {key}={value!r} ignored: the amount must be an "
                             "integer of 0 or more")
            else:
                group.resources[name] = amount
        elif value == "required":
            group.required.add(name)
        elif value == "forbidden":
            group.forbidden.add(name)
        else:
            notes.append(f"extra spec {key}={value!r} ignored: allowed: "
                         f"{', '.join(TRAIT_VALUES)}")
    return FlavorGroups(groups, policy, tuple(notes))


def _amount(value: str) -> int | None:
    try:
        amount = int(value)
    except ValueError:
        return None
    return amount if amount >= 0 else None


def flavor_resources(flavor: Flavor, *, is_bfv: bool) -> dict[str, int]:
    """VCPU, MEMORY_MB and DISK_GB of the flavor. A volume-backed server's root disk
    is the volume, not the host's disk, so it is not counted."""
    root_gb = 0 if is_bfv else flavor.root_gb
    disk_gb = root_gb + flavor.ephemeral_gb + math.ceil(flavor.swap_mb / 1024)
    return {"VCPU": flavor.vcpus, "MEMORY_MB": flavor.memory_mb, "DISK_GB": disk_gb}


def image_required_traits(image: Image) -> frozenset[str]:
    """The image's ``trait:NAME=required`` properties (forbidden and suffixed keys on
    images mean nothing upstream, and nothing here)."""
    return image.properties.traits_required


def resource_request(spec: RequestSpec, *, limit: int | None = None) -> ResourceRequest:
    """The placement request for ``spec``, after its request filters have run."""
    parsed = flavor_groups(spec.flavor.extra_specs)
    groups = parsed.groups
    unnumbered = groups.setdefault(UNNUMBERED, RequestGroup())
    unnumbered.required |= image_required_traits(spec.image)
    named = {rc for group in groups.values() for rc in group.resources}
    for rc, amount in flavor_resources(spec.flavor, is_bfv=spec.is_bfv).items():
        # VCPU is not asked for when the flavor asks for dedicated CPUs (PCPU) instead.
        if rc not in named and not (rc == "VCPU" and "PCPU" in named):
            unnumbered.resources[rc] = amount
    # Aggregates from the request filters bind the whole allocation: they go on the
    # unnumbered group, as upstream puts them.
    unnumbered.member_of.extend(aggs for aggs in spec.member_of if aggs)
    unnumbered.forbidden_aggregates |= spec.forbidden_aggregates
    for group in groups.values():
        for rc in [rc for rc, amount in group.resources.items() if amount == 0]:
            del group.resources[rc]
    kept = {suffix: g for suffix, g in groups.items()
            if not g.is_empty() or (suffix == UNNUMBERED and (g.member_of
                                                              or g.forbidden_aggregates))}
    policy = parsed.group_policy
    notes = list(parsed.notes)
    if policy is None and sum(1 for s in kept if s) > 1:
        notes.append("several numbered request groups and no group_policy extra spec: "
                     "placement refuses such a request; set group_policy=none or isolate")
    return ResourceRequest(
        groups=kept,
        group_policy=policy,
        root_required=frozenset(spec.root_required),
        root_forbidden=frozenset(spec.root_forbidden),
        limit=limit,
        notes=tuple(notes),
    )
