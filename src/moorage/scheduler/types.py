"""What the scheduler takes and gives: the request spec, its filters' records, the
selection with its alternates, and the failures that explain themselves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from moorage.model.flavor import Flavor
from moorage.model.image import Image

# provider uuid -> {resource class: amount}: one allocation request, as placement gives it.
AllocationRequest = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class FilterRecord:
    """What one request filter did to the spec (upstream only logs this; we keep it)."""

    name: str
    ran: bool
    added: Sequence[str] = ()
    # Things the user should know: a property value no trait expresses, for instance.
    notes: Sequence[str] = ()


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


class NoValidHost(Exception):
    """No host can take the server; ``reason`` says which constraint left none."""

    def __init__(self, reason: str = "", details: Mapping[str, object] | None = None) -> None:
        super().__init__(f"No valid host was found. {reason}".rstrip())
        self.reason = reason
        self.details = dict(details or {})


@dataclass(frozen=True)
class HostInfo:
    """What the compute API knows of a host's service, for the host filters."""

    host: str
    nodes: Sequence[str]
    enabled: bool
    up: bool
    driver: str
    # (architecture, hypervisor type, vm mode) triples the host can run.
    supported_instances: Sequence[tuple[str, str, str]] = ()
    hypervisor_version: int | None = None
    instances: int = 0


@dataclass(frozen=True)
class Aggregate:
    """A host aggregate: hosts, metadata, and its uuid (also its placement aggregate)."""

    uuid: str
    name: str
    hosts: frozenset[str]
    metadata: Mapping[str, str]
    availability_zone: str | None = None


class Catalog(Protocol):
    """The compute API's view of hosts and aggregates, as the scheduler reads it."""

    def hosts(self) -> Mapping[str, HostInfo]: ...

    def aggregates(self) -> Sequence[Aggregate]: ...
