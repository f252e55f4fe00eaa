"""Host filters: checks placement cannot make, run on the hosts it offered.

Each filter is a pure function of (host, spec) that returns None when the host
passes and, when it does not, the reason in a few words ("disabled", "down",
"runs x86_64/qemu/hvm, not aarch64"), recorded at the point of rejection so that
"why did no host fit?" is answered by construction. ``[filter_scheduler]
enabled_filters`` picks them, by upstream's class names, in order. Only those with
``run_on_rebuild`` (upstream's RUN_ON_REBUILD) run when a server is rebuilt on its
own host.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from oslo_config import cfg

from moorage.model.image import ARCHITECTURE_ALIASES
from moorage.scheduler.request_filters import zone_of
from moorage.scheduler.server_groups import GroupPolicy, refusal
from moorage.scheduler.types import Aggregate, HostInfo, Rejection, RequestSpec

# The zone of hosts in no availability-zone aggregate (upstream's default_availability_zone).
DEFAULT_AVAILABILITY_ZONE = "nova"

# Upstream's canonical spellings of hypervisor types and VM modes (nova.objects.fields).
HV_TYPE_ALIASES = {"xapi": "xen"}
VM_MODE_ALIASES = {"pv": "xen", "hv": "hvm", "baremetal": "hvm"}


class HostState(NamedTuple):
    """A host as the filters see it: its service record and the aggregates it is in.
    A named tuple: one is made per candidate of every boot (a frozen dataclass's
    constructor costs about three times a tuple's)."""

    info: HostInfo
    aggregates: Sequence[Aggregate] = ()
    # The node placement offered and its root provider (a host may have several nodes).
    node: str = ""
    provider_uuid: str = ""

    @property
    def name(self) -> str:
        """The host, and the node when it is named otherwise (bare-metal nodes)."""
        if not self.node or self.node == self.info.host:
            return self.info.host
        return f"{self.info.host}/{self.node}"


@dataclass(frozen=True)
class FilterOptions:
    """The options host filters read."""

    default_architecture: str | None = None
    default_availability_zone: str = DEFAULT_AVAILABILITY_ZONE

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> FilterOptions:
        return cls(default_architecture=conf.filter_scheduler.image_properties_default_architecture)


# A filter's check of one host for one request: None when the host passes, else the
# reason it does not.
HostCheck = Callable[[HostState], "str | None"]
# A filter bound to a request: what it has to check computed once (the image's
# architecture, the flavor's extra specs), then its check of each host; None when it
# has nothing to check for this request.
Binder = Callable[[RequestSpec, FilterOptions], "HostCheck | None"]


@dataclass(frozen=True)
class HostFilter:
    """A named check; ``run_on_rebuild`` as upstream's RUN_ON_REBUILD. ``bind``: the
    check made for one request (None: nothing to check, the filter is not run on
    any host); ``applies``: whether a request has anything to check, known before
    binding (the decisions name a constraint only for a filter that applies);
    ``constraint``: what the decisions name as the constraint it enforced for this
    request (default: the filter)."""

    name: str
    bind: Binder
    run_on_rebuild: bool = False
    applies: Callable[[RequestSpec], bool] | None = None
    constraint: Callable[[RequestSpec], str] | None = None

    def bound(self, spec: RequestSpec, options: FilterOptions) -> HostCheck | None:
        if self.applies is not None and not self.applies(spec):
            return None
        return self.bind(spec, options)


def _checked(binder: Binder, host: HostState, spec: RequestSpec,
             options: FilterOptions) -> str | None:
    check = binder(spec, options)
    return None if check is None else check(host)


# -- ComputeFilter ----------------------------------------------------------------------
def _service_usable(host: HostState) -> str | None:
    info = host.info
    if not info.enabled:
        return "disabled"
    if not info.liveness.up:
        return "down"
    return None


def bind_compute(spec: RequestSpec, options: FilterOptions) -> HostCheck:
    return _service_usable


def compute_service_usable(host: HostState, spec: RequestSpec,
                           options: FilterOptions) -> str | None:
    """The host's compute service is enabled and heart-beating."""
    return _service_usable(host)


# -- AvailabilityZoneFilter -------------------------------------------------------------
def host_zones(host: HostState, options: FilterOptions) -> frozenset[str]:
    """The zones of a host's aggregates, or the default zone when it is in none."""
    zones = frozenset(zone for agg in host.aggregates if (zone := zone_of(agg)))
    return zones or frozenset({options.default_availability_zone})


def bind_zone(spec: RequestSpec, options: FilterOptions) -> HostCheck | None:
    wanted = spec.availability_zone
    if not wanted:
        return None

    def check(host: HostState) -> str | None:
        zones = host_zones(host, options)
        if wanted in zones:
            return None
        return f"in availability zone {', '.join(sorted(zones))}, not {wanted}"
    return check


def in_requested_zone(host: HostState, spec: RequestSpec, options: FilterOptions) -> str | None:
    return _checked(bind_zone, host, spec, options)


# -- ImagePropertiesFilter --------------------------------------------------------------
def canonical_arch(value: str) -> str:
    lowered = value.strip().lower()
    return ARCHITECTURE_ALIASES.get(lowered, lowered)


def canonical_hv_type(value: str) -> str:
    lowered = value.strip().lower()
    return HV_TYPE_ALIASES.get(lowered, lowered)


def canonical_vm_mode(value: str) -> str:
    lowered = value.strip().lower()
    return VM_MODE_ALIASES.get(lowered, lowered)


@functools.lru_cache(maxsize=1024)
def _canonical_triple(triple: tuple[str, str, str]) -> tuple[str, str, str]:
    """A host's supported instance as the filter compares it (hosts share a few)."""
    return canonical_arch(triple[0]), canonical_hv_type(triple[1]), canonical_vm_mode(triple[2])


def _property(spec: RequestSpec, *names: str) -> str | None:
    """The first of ``names`` the image sets among its other (non-enum) properties:
    current name first, then upstream's legacy one."""
    other = spec.image.properties.other
    for name in names:
        if other.get(name):
            return other[name]
    return None


def version_string(version: int) -> str:
    """Upstream's integer hypervisor version as dotted: 7002000 -> "7.2.0"."""
    return f"{version // 1_000_000}.{version // 1_000 % 1_000}.{version % 1_000}"


_PREDICATE = re.compile(r"^\s*(>=|<=|==|!=|>|<)?\s*([0-9]+(?:\.[0-9]+)*)\s*$")
_COMPARE: Mapping[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]] = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq,
    "!=": operator.ne, ">": operator.gt, "<": operator.lt,
}


def _as_tuple(version: str) -> tuple[int, ...]:
    parts = [int(p) for p in version.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _predicates(requirement: str) -> list[tuple[str, tuple[int, ...]]] | None:
    """``>=2.6,<3`` as [(">=", (2, 6)), ("<", (3,))]; None when it cannot be read."""
    found = []
    for clause in requirement.split(","):
        match = _PREDICATE.match(clause)
        if not match:
            return None
        found.append((match.group(1) or "==", _as_tuple(match.group(2))))
    return found


def _meets(version: int, predicates: Sequence[tuple[str, tuple[int, ...]]]) -> bool:
    have = _as_tuple(version_string(version))
    return all(_COMPARE[op](have, want) for op, want in predicates)


def version_satisfies(version: int, requirement: str) -> bool | None:
    """Whether a host version meets ``>=2.6`` (comma-separated predicates, all must
    hold); None when the requirement cannot be read."""
    predicates = _predicates(requirement)
    return None if predicates is None else _meets(version, predicates)


def bind_image_properties(spec: RequestSpec, options: FilterOptions) -> HostCheck | None:
    """Legacy check: the image's architecture, hypervisor type and VM mode are one of
    the (arch, hv_type, vm_mode) triples the host runs, at a hypervisor version the
    image accepts. The image is read once per request."""
    props = spec.image.properties
    raw_arch = props.hw_architecture or options.default_architecture
    arch = canonical_arch(raw_arch) if raw_arch else None
    raw_hv = _property(spec, "img_hv_type", "hypervisor_type")
    hv_type = canonical_hv_type(raw_hv) if raw_hv else None
    raw_mode = _property(spec, "hw_vm_mode", "vm_mode")
    vm_mode = canonical_vm_mode(raw_mode) if raw_mode else None
    requirement = _property(spec, "img_hv_requested_version", "hypervisor_version_requires")
    if not (arch or hv_type or vm_mode):
        return None
    wanted = "/".join(v or "*" for v in (arch, hv_type, vm_mode))
    # An unreadable requirement is one no version satisfies.
    predicates = _predicates(requirement) if requirement else None

    def check(host: HostState) -> str | None:
        offered = host.info.supported_instances
        if not offered:
            return f"reports no supported instances, image needs {wanted}"
        version = host.info.hypervisor_version
        for triple in offered:
            host_arch, host_hv, host_mode = _canonical_triple(tuple(triple))
            if ((arch and arch != host_arch) or (hv_type and hv_type != host_hv)
                    or (vm_mode and vm_mode != host_mode)):
                continue
            if requirement and version is not None and (
                    predicates is None or not _meets(version, predicates)):
                # Every user reads the reason: the host's version is not in it (admins
                # read it in os-hypervisors).
                return f"its hypervisor version does not satisfy {requirement}"
            return None
        runs = ", ".join("/".join(t) for t in offered)
        return f"runs {runs}, image needs {wanted}"
    return check


def image_properties_supported(host: HostState, spec: RequestSpec,
                               options: FilterOptions) -> str | None:
    return _checked(bind_image_properties, host, spec, options)


# -- AggregateInstanceExtraSpecsFilter --------------------------------------------------
AGGREGATE_SCOPE = "aggregate_instance_extra_specs"


def _matches(values: frozenset[str], requirement: str) -> bool:
    """Upstream's extra-spec operators, the common ones: ``<in> x`` (substring),
    ``<or> a <or> b`` (any of), ``s== x`` (string equal), otherwise equality."""
    req = requirement.strip()
    if req.startswith("<in>"):
        needle = req[4:].strip()
        return any(needle in value for value in values)
    if req.startswith("<or>"):
        choices = {c.strip() for c in req.split("<or>") if c.strip()}
        return bool(values & choices)
    if req.startswith("s=="):
        return req[3:].strip() in values
    return req in values


def bind_aggregate_extra_specs(spec: RequestSpec, options: FilterOptions
                               ) -> HostCheck | None:
    """Flavor extra specs unscoped or scoped ``aggregate_instance_extra_specs:`` must
    match the metadata of the host's aggregates."""
    wanted = []
    for key, requirement in sorted(spec.flavor.extra_specs.items()):
        scope, _, name = key.partition(":") if ":" in key else ("", "", key)
        # group_policy is placement's, whatever its lack of scope suggests.
        if (scope and scope != AGGREGATE_SCOPE) or key == "group_policy":
            continue
        wanted.append((name, requirement))
    if not wanted:
        return None

    def check(host: HostState) -> str | None:
        for name, requirement in wanted:
            values = frozenset(agg.metadata[name] for agg in host.aggregates
                               if name in agg.metadata)
            if not values:
                return f"no aggregate metadata {name}"
            if not _matches(values, requirement):
                return (f"aggregate metadata {name}={','.join(sorted(values))}, "
                        f"not {requirement}")
        return None
    return check


def aggregate_extra_specs_match(host: HostState, spec: RequestSpec,
                                options: FilterOptions) -> str | None:
    return _checked(bind_aggregate_extra_specs, host, spec, options)


# -- ServerGroupAffinityFilter, ServerGroupAntiAffinityFilter ---------------------------
def _group_policy(policy: GroupPolicy) -> Callable[[RequestSpec], bool]:
    def applies(spec: RequestSpec) -> bool:
        return spec.server_group is not None and spec.server_group.policy is policy
    return applies


def bind_server_group(spec: RequestSpec, options: FilterOptions) -> HostCheck | None:
    """The host keeps to the server's group's policy, given where its other members
    are (scheduler.server_groups.refusal, which the late check asks again)."""
    group = spec.server_group
    if group is None:
        return None
    return lambda host: refusal(group, host.info.host)


def _group_constraint(spec: RequestSpec) -> str:
    assert spec.server_group is not None
    return spec.server_group.constraint


HOST_FILTERS: Mapping[str, HostFilter] = {
    f.name: f for f in (
        HostFilter("ComputeFilter", bind_compute),
        HostFilter("AvailabilityZoneFilter", bind_zone),
        HostFilter("ImagePropertiesFilter", bind_image_properties, run_on_rebuild=True),
        HostFilter("AggregateInstanceExtraSpecsFilter", bind_aggregate_extra_specs),
        HostFilter("ServerGroupAffinityFilter", bind_server_group,
                   applies=_group_policy(GroupPolicy.AFFINITY),
                   constraint=_group_constraint),
        HostFilter("ServerGroupAntiAffinityFilter", bind_server_group,
                   applies=_group_policy(GroupPolicy.ANTI_AFFINITY),
                   constraint=_group_constraint),
    )
}


class UnknownHostFilter(ValueError):
    """``enabled_filters`` names a filter Moorage does not have."""


def enabled_filters(names: Sequence[str], source: str = "") -> list[HostFilter]:
    """The filters ``[filter_scheduler] enabled_filters`` names, in its order.
    ``source``: where the value came from, for the refusal (`` in FILE``)."""
    unknown = [n for n in names if n not in HOST_FILTERS]
    if unknown:
        raise UnknownHostFilter(
            f"[filter_scheduler] enabled_filters{source}: unknown {', '.join(unknown)}; "
            f"available: {', '.join(HOST_FILTERS)}")
    return [HOST_FILTERS[n] for n in names]


def run_filters(hosts: Sequence[HostState], spec: RequestSpec, filters: Sequence[HostFilter],
                options: FilterOptions) -> tuple[list[HostState], list[Rejection]]:
    """The hosts every filter passes, and the rejections (each host rejected once, by
    the first filter that turns it away). Each filter is bound to the request once."""
    checks = [(f.name, check) for f in filters if (check := f.bound(spec, options)) is not None]
    passing: list[HostState] = []
    rejections: list[Rejection] = []
    for host in hosts:
        for name, check in checks:
            reason = check(host)
            if reason is not None:
                rejections.append(Rejection(name, host.name, reason))
                break
        else:
            passing.append(host)
    return passing, rejections


def constraint_labels(filters: Sequence[HostFilter], spec: RequestSpec) -> dict[str, str]:
    """filter name -> the constraint the decisions name for it, for the filters that
    name one of this request's own (a server group) rather than themselves."""
    return {f.name: f.constraint(spec) for f in filters
            if f.constraint is not None and (f.applies is None or f.applies(spec))}
