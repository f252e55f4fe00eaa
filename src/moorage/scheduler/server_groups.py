"""Server groups as the scheduler sees them: a group's policy and where its other
members are, and the one rule that says whether a host keeps to that policy.

The rule (``refusal``) is read by two callers and by nobody else: the host filters
(ServerGroupAffinityFilter, ServerGroupAntiAffinityFilter), which turn hosts away before
the claim, and the conductor's late check (``lifecycle.server_groups.reserve``), which
asks it again under the group's lock, with the members placed since the scheduler
looked. The soft policies never refuse a host; ``member_counts`` weighs them.

Everything here is pure: the conductor reads the group's members' hosts in one query
per scheduling (``GroupPlacement``), and each candidate costs a dictionary lookup.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


class GroupPolicy(enum.StrEnum):
    """nova's server group policies (the soft ones from microversion 2.15)."""

    AFFINITY = "affinity"
    ANTI_AFFINITY = "anti-affinity"
    SOFT_AFFINITY = "soft-affinity"
    SOFT_ANTI_AFFINITY = "soft-anti-affinity"

    @property
    def hard(self) -> bool:
        """A policy a host is refused for (the others only weigh)."""
        return self in (GroupPolicy.AFFINITY, GroupPolicy.ANTI_AFFINITY)


# The policies before microversion 2.15, and those with rules (2.64: anti-affinity's
# max_server_per_host).
HARD_POLICIES = (GroupPolicy.ANTI_AFFINITY, GroupPolicy.AFFINITY)
RULED_POLICIES = frozenset({GroupPolicy.ANTI_AFFINITY})
# nova's default: one member per host.
DEFAULT_MAX_SERVER_PER_HOST = 1


@dataclass(frozen=True)
class GroupPlacement:
    """A server's group, as one scheduling of it reads it: the policy, its rule, and
    how many of the group's *other* members each host runs (or is building)."""

    uuid: str
    policy: GroupPolicy
    max_server_per_host: int = DEFAULT_MAX_SERVER_PER_HOST
    members_on: Mapping[str, int] = field(default_factory=dict)

    @property
    def constraint(self) -> str:
        """What decisions and faults name: ``server group <uuid> (anti-affinity)``."""
        return f"server group {self.uuid} ({self.policy})"

    def with_members(self, members_on: Mapping[str, int]) -> GroupPlacement:
        return GroupPlacement(self.uuid, self.policy, self.max_server_per_host, members_on)


def refusal(group: GroupPlacement, host: str) -> str | None:
    """Why ``host`` breaks the group's hard policy, in words naming the group (never a
    host: the reason is every user's), or None when it keeps to it.

    affinity: once a member is placed, only its host (nova's "the first member fixes
    the host"). anti-affinity: fewer than ``max_server_per_host`` members there."""
    if group.policy is GroupPolicy.AFFINITY:
        if group.members_on and host not in group.members_on:
            return f"is not where the servers of {group.constraint} are"
        return None
    limit = group.max_server_per_host
    if group.policy is GroupPolicy.ANTI_AFFINITY and group.members_on.get(host, 0) >= limit:
        return (f"runs {'a server' if limit == 1 else f'{limit} servers'} of "
                f"{group.constraint} already (at most {limit} per host)")
    return None


def affinity_host(group: GroupPlacement | None) -> str | None:
    """The one host a hard affinity group's members are on: the only host its next
    member may take, which the scheduler asks placement for alone (as for a requested
    host), so a cloud larger than placement's answer never cuts it off. None for any
    other group, an affinity group with no member placed, or one spread already."""
    if group is None or group.policy is not GroupPolicy.AFFINITY or len(group.members_on) != 1:
        return None
    return next(iter(group.members_on))


def member_counts(hosts: Sequence[str], group: GroupPlacement | None) -> list[float]:
    """Each host's weight for a soft policy, before normalising: the group's members
    there (soft-affinity prefers more of them), negated for soft-anti-affinity (fewer
    preferred); zeros for any other group or none."""
    if group is None or group.policy.hard:
        return [0.0 for _ in hosts]
    sign = 1.0 if group.policy is GroupPolicy.SOFT_AFFINITY else -1.0
    return [sign * group.members_on.get(host, 0) for host in hosts]
