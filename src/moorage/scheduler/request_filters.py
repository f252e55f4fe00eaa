"""Request filters: what the request spec asks of placement beyond the flavor.

An ordered list of small functions, upstream's order (nova's ``request_filter``).
Each is gated by its option, changes the spec (root_required, root_forbidden,
member_of, forbidden_aggregates) and returns a ``FilterRecord`` saying what it
added, from which origin and why (``filter_records.Addition``, made where the filter
decides); ``process_request_spec`` appends the records to ``spec.filter_records``,
which the compute API keeps with the server so that a user can see why a host was
(not) chosen.

Where upstream logs an error and drops a whole filter when one image property has
no os-traits trait (``hw_architecture=armv7l``, ``hw_emulation_architecture=i686``),
we keep the other properties and say so: the value becomes a note in the record.
Such a value is then *not* enforced by placement: no host can report a trait that
does not exist, so requiring it would refuse every host, even the ones that run
the guest fine. The host itself still checks the value when it spawns the guest (a
late failure, rescheduled to an alternate), as with the prefilter off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from oslo_config import cfg

from moorage.model import vocabulary
from moorage.model.flavor import required_traits
from moorage.model.image import ImageProperties
from moorage.model.vocabulary import Prefilter
from moorage.scheduler.filter_records import (
    Addition,
    Constraint,
    FilterRecord,
    Origin,
    OriginKind,
)
from moorage.scheduler.types import Aggregate, Catalog, RequestSpec

# Upstream's aggregate metadata conventions.
TENANT_KEY_PREFIX = "filter_tenant_id"
AGGREGATE_TRAIT_PREFIX = "trait:"
STATUS_DISABLED = "COMPUTE_STATUS_DISABLED"

# The seed's next candidates for the same pattern: image properties (and their legacy
# names) whose values os-traits would need a family for. It has none (3.9.0): the
# prefilter notes the value and ImagePropertiesFilter, a host filter, checks it.
UNTRANSLATED_PROPERTIES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("img_hv_type", "hypervisor_type"), "COMPUTE_HYPERVISOR"),
    (("hw_vm_mode", "vm_mode"), "COMPUTE_VM_MODE"),
)


class RequestFilterFailed(Exception):
    """A request filter found that no host may take the server (a project no
    aggregate admits, when one must)."""

    def __init__(self, reason: str, name: str = "request filter") -> None:
        super().__init__(reason)
        self.reason = reason
        self.name = name  # the request filter that refused


@dataclass(frozen=True)
class FilterContext:
    """What the request filters read besides the spec: options and aggregates."""

    conf: cfg.ConfigOpts
    catalog: Catalog

    def aggregates(self) -> Sequence[Aggregate]:
        return self.catalog.aggregates()


RequestFilter = Callable[[RequestSpec, FilterContext], FilterRecord]


# -- pure translations ------------------------------------------------------------------
def image_type_trait(disk_format: str) -> str:
    """``qcow2`` -> ``COMPUTE_IMAGE_TYPE_QCOW2`` (unchecked; upstream upper-cases only)."""
    return f"{vocabulary.IMAGE_TYPE}_{disk_format.upper()}"


def checkable_image_type_trait(disk_format: str) -> str | None:
    """The trait ``require_image_type_support`` requires for ``disk_format``; None when
    os-traits has no such trait (the filter notes the format instead)."""
    trait = image_type_trait(disk_format)
    return trait if trait in vocabulary.KNOWN else None


@dataclass(frozen=True)
class TraitTranslation:
    """Image properties as traits: each trait with the property that asked for it, and
    a note for each value no trait expresses."""

    traits: Mapping[str, Origin]  # trait -> image property hw_vif_model=e1000
    notes: tuple[str, ...]


def image_metadata_traits(properties: ImageProperties) -> TraitTranslation:
    """The traits a host needs for the image's hw_* device models and architectures."""
    found: dict[str, Origin] = {}
    notes: list[str] = []
    for named in vocabulary.prefiltered(Prefilter.IMAGE_METADATA):
        value = getattr(properties, named.name)
        if value is None:
            continue
        trait = named.trait(str(value))
        origin = Origin(OriginKind.IMAGE_PROPERTY, named.name, str(value))
        if trait in vocabulary.KNOWN:
            found.setdefault(trait, origin)
        else:
            notes.append(f"{origin.setting}: os-traits {vocabulary.OS_TRAITS_VERSION} has no trait "
                         f"{trait}, so placement cannot check it; the host checks it when "
                         "it spawns the guest")
    for names, family in UNTRANSLATED_PROPERTIES:
        for prop in names:
            value = properties.other.get(prop)
            if value is None:
                continue
            notes.append(f"{prop}={value}: os-traits {vocabulary.OS_TRAITS_VERSION} has no "
                         f"{family}_* traits, so placement cannot check it; "
                         "ImagePropertiesFilter checks it among the candidates")
            break
    return TraitTranslation(found, tuple(notes))


def tenant_aggregates(aggregates: Iterable[Aggregate], project_id: str) -> frozenset[str]:
    """Aggregates whose ``filter_tenant_id*`` metadata names the project."""
    return frozenset(
        agg.uuid for agg in aggregates
        if any(key.startswith(TENANT_KEY_PREFIX) and value == project_id
               for key, value in agg.metadata.items()))


def zone_of(aggregate: Aggregate) -> str | None:
    return aggregate.availability_zone or aggregate.metadata.get("availability_zone")


def zone_aggregates(aggregates: Iterable[Aggregate], zone: str) -> frozenset[str]:
    """Aggregates that make up an availability zone."""
    return frozenset(agg.uuid for agg in aggregates if zone_of(agg) == zone)


def aggregate_required_traits(aggregate: Aggregate) -> frozenset[str]:
    """Traits an aggregate's metadata requires (``trait:NAME=required``)."""
    return frozenset(key[len(AGGREGATE_TRAIT_PREFIX):] for key, value
                     in aggregate.metadata.items()
                     if key.startswith(AGGREGATE_TRAIT_PREFIX) and value == "required")


def isolated_aggregates(aggregates: Iterable[Aggregate],
                        requested: frozenset[str]) -> dict[str, frozenset[str]]:
    """Aggregates reserved (by required-trait metadata) for requests that require
    traits this request does not: uuid -> the traits it lacks."""
    return {agg.uuid: needs - requested for agg in aggregates
            if (needs := aggregate_required_traits(agg)) and not needs <= requested}


# -- the filters, in upstream's order ---------------------------------------------------
def require_tenant_aggregate(spec: RequestSpec, ctx: FilterContext) -> FilterRecord:
    """Keep a project on the aggregates that name it (``filter_tenant_id*``)."""
    name = "require_tenant_aggregate"
    sched = ctx.conf.scheduler
    if not sched.limit_tenants_to_placement_aggregate:
        return FilterRecord(name, False)
    allowed = tenant_aggregates(ctx.aggregates(), spec.project_id)
    if allowed:
        spec.member_of.append(allowed)
        return FilterRecord(name, True, (Addition(
            Constraint.MEMBER_OF, tuple(sorted(allowed)),
            Origin(OriginKind.AGGREGATE_METADATA, f"{TENANT_KEY_PREFIX}*", spec.project_id),
            "the aggregates that admit the project"),))
    if sched.placement_aggregate_required_for_tenants:
        raise RequestFilterFailed(
            f"no host aggregate admits project {spec.project_id} (no aggregate has "
            f"filter_tenant_id* metadata naming it) and [scheduler] "
            "placement_aggregate_required_for_tenants is set", name)
    return FilterRecord(name, True, (), (
        f"no aggregate names project {spec.project_id}; any host may take it",))


def map_az_to_placement_aggregate(spec: RequestSpec, ctx: FilterContext) -> FilterRecord:
    """Ask placement only for hosts in the requested availability zone's aggregates."""
    name = "map_az_to_placement_aggregate"
    if not ctx.conf.scheduler.query_placement_for_availability_zone:
        return FilterRecord(name, False)
    if not spec.availability_zone:
        return FilterRecord(name, True, (), ("no availability zone requested",))
    in_zone = zone_aggregates(ctx.aggregates(), spec.availability_zone)
    if not in_zone:
        return FilterRecord(name, True, (), (
            f"no aggregate defines availability zone {spec.availability_zone}; "
            "the AvailabilityZoneFilter host filter decides",))
    spec.member_of.append(in_zone)
    return FilterRecord(name, True, (Addition(
        Constraint.MEMBER_OF, tuple(sorted(in_zone)),
        Origin(OriginKind.AGGREGATE_METADATA, "availability_zone", spec.availability_zone),
        "the requested availability zone"),))


def require_image_type_support(spec: RequestSpec, ctx: FilterContext) -> FilterRecord:
    """Only hosts whose driver reads the image's disk format."""
    name = "require_image_type_support"
    if not ctx.conf.scheduler.query_placement_for_image_type_support:
        return FilterRecord(name, False)
    if spec.is_bfv:
        # The host never reads a volume-backed server's image.
        return FilterRecord(name, False, (), ("volume-backed server: the image format "
                                              "does not matter to the host",))
    disk_format = spec.image.disk_format or ""
    trait = checkable_image_type_trait(disk_format)
    if trait is None:
        return FilterRecord(name, True, (), (
            f"disk_format={spec.image.disk_format!r}: os-traits has no trait "
            f"{image_type_trait(disk_format)}; not checked by placement",))
    spec.root_required.add(trait)
    return FilterRecord(name, True, (Addition(
        Constraint.ROOT_REQUIRED, (trait,), Origin(OriginKind.IMAGE, "disk_format", disk_format),
        "the host must read the image's disk format"),))


def compute_status_filter(spec: RequestSpec, ctx: FilterContext) -> FilterRecord:
    """Never a disabled host (its provider carries COMPUTE_STATUS_DISABLED). Always on."""
    name = "compute_status_filter"
    spec.root_forbidden.add(STATUS_DISABLED)
    return FilterRecord(name, True, (Addition(
        Constraint.ROOT_FORBIDDEN, (STATUS_DISABLED,), Origin(OriginKind.REQUEST_FILTER, name),
        "no disabled host"),))


def isolate_aggregates(spec: RequestSpec, ctx: FilterContext) -> FilterRecord:
    """Keep off aggregates reserved for servers that require traits this one does not."""
    name = "isolate_aggregates"
    if not ctx.conf.scheduler.enable_isolated_aggregate_filtering:
        return FilterRecord(name, False)
    lacking = isolated_aggregates(ctx.aggregates(), required_traits(spec.flavor, spec.image))
    spec.forbidden_aggregates |= lacking.keys()
    return FilterRecord(name, True, tuple(Addition(
        Constraint.FORBIDDEN_AGGREGATES, (agg,),
        Origin(OriginKind.AGGREGATE_METADATA, f"{AGGREGATE_TRAIT_PREFIX}{min(lacking[agg])}",
               "required"),
        f"reserved for servers that require {', '.join(sorted(lacking[agg]))}")
        for agg in sorted(lacking)))


def transform_image_metadata(spec: RequestSpec, ctx: FilterContext) -> FilterRecord:
    """Only hosts that report the image's device models and architectures as traits."""
    name = "transform_image_metadata"
    if not ctx.conf.scheduler.image_metadata_prefilter:
        return FilterRecord(name, False)
    translation = image_metadata_traits(spec.image.properties)
    spec.root_required |= set(translation.traits)
    return FilterRecord(name, True, tuple(
        Addition(Constraint.ROOT_REQUIRED, (trait,), translation.traits[trait],
                 "the host must offer what the image asks for")
        for trait in sorted(translation.traits)), translation.notes)


ALL_REQUEST_FILTERS: tuple[RequestFilter, ...] = (
    require_tenant_aggregate,
    map_az_to_placement_aggregate,
    require_image_type_support,
    compute_status_filter,
    isolate_aggregates,
    transform_image_metadata,
)


def process_request_spec(spec: RequestSpec, ctx: FilterContext,
                         filters: Sequence[RequestFilter] = ALL_REQUEST_FILTERS) -> None:
    """Run the request filters on ``spec``, recording each.

    What the filters write is never kept between runs (as upstream's
    request_level_params): a move or reschedule runs them afresh, on today's options
    and aggregates. RequestFilterFailed propagates once its filter is recorded."""
    spec.root_required.clear()
    spec.root_forbidden.clear()
    spec.member_of.clear()
    spec.forbidden_aggregates.clear()
    spec.filter_records.clear()
    for request_filter in filters:
        try:
            record = request_filter(spec, ctx)
        except RequestFilterFailed as exc:
            spec.filter_records.append(
                FilterRecord(request_filter.__name__, True, (), (exc.reason,)))
            raise
        spec.filter_records.append(record)
