"""What the scheduler takes and gives: the request spec, its filters' records, the
selection with its alternates, and the failures that explain themselves."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from moorage.model.disclosure import IDENTIFIES_HOST
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.scheduler.decisions import Decisions
from moorage.scheduler.filter_records import FilterRecord, records_from_json, records_json
from moorage.scheduler.server_groups import GroupPlacement
from moorage.scheduler.uncertainty import Difference

# provider uuid -> {resource class: amount}: one allocation request, as placement gives it.
AllocationRequest = Mapping[str, Mapping[str, int]]


@dataclass
class RequestSpec:
    """One server's scheduling request. The request filters fill the lower half."""

    instance_uuid: str
    project_id: str
    user_id: str
    flavor: Flavor
    image: Image
    is_bfv: bool = False
    availability_zone: str | None = None
    # Hosts not to choose (the current host of a migration, failed hosts...).
    ignore_hosts: frozenset[str] = frozenset()
    # Only this host (an operator's target, or the host of a rebuild).
    requested_host: str | None = None
    rebuild: bool = False
    # The server's group and where its other members are (None: in no group).
    server_group: GroupPlacement | None = None
    # Written by the request filters.
    root_required: set[str] = field(default_factory=set)
    root_forbidden: set[str] = field(default_factory=set)
    member_of: list[frozenset[str]] = field(default_factory=list)
    forbidden_aggregates: set[str] = field(default_factory=set)
    filter_records: list[FilterRecord] = field(default_factory=list)


@dataclass(frozen=True)
class Destination:
    """A host and the allocation request that would place the server there."""

    host: str
    node: str
    provider_uuid: str
    allocation_request: AllocationRequest


@dataclass
class Selection:
    """The claimed destination and the alternates to try if its build fails."""

    destination: Destination
    alternates: list[Destination]
    candidates: int  # allocation candidates placement returned
    hosts_passing_filters: int
    # What each stage decided (scheduler/decisions.py).
    decisions: Decisions = field(default_factory=lambda: Decisions())
    # A dry run's: where the boot may choose another host (scheduler/uncertainty.py).
    differences: tuple[Difference, ...] = ()


@dataclass(frozen=True)
class Rejection:
    """One host one filter turned away, and why (the reason names no host)."""

    filter: str
    host: Annotated[str, IDENTIFIES_HOST]
    reason: str


@dataclass(frozen=True)
class Unschedulable:
    """Why no host can take a server, as the scheduler found it: the reason in words
    (``user_reason`` built without the hosts ``reason`` may name), the decisions of each
    stage, the request filters' records and placement's request, and for a check of one
    host (a rebuild on the server's own host) what that host lacks. The fields that
    identify a host are marked so; a user's view leaves them out."""

    reason: Annotated[str, IDENTIFIES_HOST]
    user_reason: str
    decisions: Decisions = field(default_factory=Decisions)
    filters: tuple[FilterRecord, ...] = ()
    # Placement's query (the allocation-candidates parameters), for admins.
    request: Annotated[Mapping[str, object] | None, IDENTIFIES_HOST] = None
    candidates: int | None = None
    # The sample of candidates asked for first, and whether the scheduler widened it.
    sample: int | None = None
    widened: bool | None = None
    host: Annotated[str | None, IDENTIFIES_HOST] = None
    requested_host: Annotated[str | None, IDENTIFIES_HOST] = None
    missing_traits: tuple[str, ...] = ()
    forbidden_image_traits: tuple[str, ...] = ()
    providers: Annotated[tuple[str, ...], IDENTIFIES_HOST] = ()
    rejections: Annotated[tuple[Rejection, ...], IDENTIFIES_HOST] = ()

    @property
    def deciding(self) -> str:
        return self.decisions.deciding or "unknown"

    def details(self) -> dict[str, object]:
        """The JSON details of the fault that records it (every field but the reasons,
        none empty)."""
        data: dict[str, object] = {
            "filters": records_json(self.filters) if self.filters else None,
            "request": dict(self.request) if self.request is not None else None,
            "candidates": self.candidates, "sample": self.sample, "widened": self.widened,
            "host": self.host, "requested_host": self.requested_host,
            "missing_traits": list(self.missing_traits) or None,
            "forbidden_image_traits": list(self.forbidden_image_traits) or None,
            "providers": list(self.providers) or None,
            "rejections": [vars(r) for r in self.rejections] or None,
            "decisions": self.decisions.to_json()}
        return {k: v for k, v in data.items() if v is not None}

    @classmethod
    def from_details(cls, reason: str, user_reason: str,
                     details: Mapping[str, Any]) -> Unschedulable:
        """Read back what ``details`` wrote."""
        return cls(
            reason=reason, user_reason=user_reason,
            decisions=Decisions.from_json(details.get("decisions") or {}),
            filters=records_from_json(details.get("filters") or ()),
            request=details.get("request"), candidates=details.get("candidates"),
            sample=details.get("sample"), widened=details.get("widened"),
            host=details.get("host"), requested_host=details.get("requested_host"),
            missing_traits=tuple(details.get("missing_traits") or ()),
            forbidden_image_traits=tuple(details.get("forbidden_image_traits") or ()),
            providers=tuple(details.get("providers") or ()),
            rejections=tuple(Rejection(str(r["filter"]), str(r["host"]), str(r["reason"]))
                             for r in details.get("rejections") or ()))


class NoValidHost(Exception):
    """No host can take the server; ``why`` says which constraint left none.

    ``deciding`` names that constraint in a few words of a bounded vocabulary (a
    trait, a resource class, a host filter's name, "claim"...): a metric label."""

    def __init__(self, why: Unschedulable) -> None:
        super().__init__(f"No valid host was found. {why.reason}".rstrip())
        self.why = why

    @property
    def reason(self) -> str:
        return self.why.reason

    @property
    def user_reason(self) -> str:
        return self.why.user_reason

    @property
    def deciding(self) -> str:
        return self.why.deciding

    @property
    def decisions(self) -> Decisions:
        return self.why.decisions


class Liveness:
    """When a host's service last heart-beat, and how old that may be for it to be up
    (nova's rule: a heartbeat within ``service_down_time`` and not forced down).

    One per host, shared by the snapshots of a catalog and updated in place as
    heartbeats arrive, so whether a host is up is decided when it is asked, for the
    hosts asked about only."""

    __slots__ = ("down_after", "forced_down", "last_seen")

    def __init__(self, last_seen: float | None, down_after: float,
                 forced_down: bool = False) -> None:
        self.last_seen = last_seen  # seconds since the epoch; None: never
        self.down_after = down_after
        self.forced_down = forced_down

    @classmethod
    def fixed(cls, up: bool) -> Liveness:
        """Always up (or never): for hosts whose liveness a test decides."""
        return cls(math.inf if up else None, 0.0)

    @property
    def up(self) -> bool:
        if self.forced_down or self.last_seen is None:
            return False
        return time.time() - self.last_seen <= self.down_after


@dataclass(frozen=True)
class HostInfo:
    """What the compute API knows of a host's service, for the host filters."""

    host: str
    nodes: Sequence[str]
    enabled: bool
    liveness: Liveness
    driver: str
    # (architecture, hypervisor type, vm mode) triples the host can run.
    supported_instances: Sequence[tuple[str, str, str]] = ()
    hypervisor_version: int | None = None
    # Where its compute agent answers (the conductor's calls), as it registered.
    agent_url: str | None = None
    # node -> the traits its driver reports unsupported (refused at spawn), of the
    # families an image property names and the guest features.
    refused: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @property
    def up(self) -> bool:
        return self.liveness.up


@dataclass(frozen=True)
class Aggregate:
    """A host aggregate: hosts, metadata, and its uuid (also its placement aggregate)."""

    uuid: str
    name: str
    hosts: frozenset[str]
    metadata: Mapping[str, str]
    availability_zone: str | None = None


class Catalog(Protocol):
    """The compute API's view of hosts and aggregates, as the scheduler reads it.

    ``hosts`` and ``aggregates`` bring the view up to date; ``aggregates_of`` and
    ``node_of_provider`` answer from the view as the last of those calls left it, at
    the cost of a dictionary lookup (the scheduler calls them once per candidate)."""

    def hosts(self) -> Mapping[str, HostInfo]: ...

    def aggregates(self) -> Sequence[Aggregate]: ...

    def aggregates_of(self, host: str) -> Sequence[Aggregate]:
        """The aggregates ``host`` is in."""
        ...

    def node_of_provider(self, provider_uuid: str) -> tuple[str, str] | None:
        """(host, node) of a node's root provider, as compute agents name it."""
        ...
