"""Why no host fits, in words a user can act on.

Pure functions that turn a placement request and what came of it into the reason
of a ``NoValidHost``: which resources and traits were asked for and where each
trait came from (a flavor extra spec, an image property, a request filter), and
which host filter turned which host away.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from moorage.model.image import TRAIT_PREFIX
from moorage.scheduler.host_filters import Rejection
from moorage.scheduler.request_filters import (
    STATUS_DISABLED,
    image_metadata_traits,
    image_type_trait,
)
from moorage.scheduler.resource_request import EXTRA_SPEC, ResourceRequest
from moorage.scheduler.types import RequestSpec


def _ran(spec: RequestSpec, name: str) -> bool:
    return any(r.name == name and r.ran for r in spec.filter_records)


def trait_origins(spec: RequestSpec) -> dict[str, list[str]]:
    """trait -> where the request got it, for every trait the request names."""
    origins: dict[str, list[str]] = {}

    def add(trait: str, origin: str) -> None:
        origins.setdefault(trait, []).append(origin)

    for key, value in sorted(spec.flavor.extra_specs.items()):
        match = EXTRA_SPEC.match(key)
        if match and match.group(1) == "trait" and value in ("required", "forbidden"):
            add(match.group(3), f"flavor extra spec {key}={value}")
    for trait in sorted(spec.image.properties.traits_required):
        add(trait, f"image property {TRAIT_PREFIX}{trait}=required")
    if _ran(spec, "transform_image_metadata"):
        for trait, origin in image_metadata_traits(spec.image.properties).traits.items():
            add(trait, f"image property {origin}")
    if _ran(spec, "require_image_type_support") and not spec.is_bfv:
        add(image_type_trait(spec.image.disk_format), f"image disk_format={spec.image.disk_format}")
    add(STATUS_DISABLED, "request filter compute_status_filter: no disabled host")
    return origins


def _traits_with_origins(traits: Sequence[str], origins: Mapping[str, list[str]]) -> str:
    return ", ".join(f"{t} (from {'; '.join(origins[t])})" if t in origins else t
                     for t in traits)


def _aggregates(uuids: frozenset[str] | set[str], names: Mapping[str, str]) -> str:
    return ",".join(sorted(f"{names[u]} ({u})" if u in names else u for u in uuids))


def describe_request(request: ResourceRequest, spec: RequestSpec,
                     aggregate_names: Mapping[str, str] | None = None) -> str:
    """"resources VCPU=2,MEMORY_MB=512; required traits X (from ...); ..." """
    origins = trait_origins(spec)
    names = aggregate_names or {}
    parts: list[str] = []
    for suffix, group in sorted(request.groups.items()):
        label = f"group {suffix}: " if suffix else ""
        if group.resources:
            parts.append(label + "resources " + ",".join(
                f"{rc}={n}" for rc, n in group.resources.items()))
        if group.required:
            parts.append(label + "required traits "
                         + _traits_with_origins(sorted(group.required), origins))
        if group.forbidden:
            parts.append(label + "forbidden traits "
                         + _traits_with_origins(sorted(group.forbidden), origins))
        for aggs in group.member_of:
            parts.append(label + "in one of aggregates " + _aggregates(aggs, names))
        if group.forbidden_aggregates:
            parts.append(label + "outside aggregates "
                         + _aggregates(group.forbidden_aggregates, names))
    if request.root_required:
        parts.append("required host traits "
                     + _traits_with_origins(sorted(request.root_required), origins))
    if request.root_forbidden:
        parts.append("forbidden host traits "
                     + _traits_with_origins(sorted(request.root_forbidden), origins))
    if request.group_policy:
        parts.append(f"group_policy {request.group_policy}")
    return "; ".join(parts)


# Hosts named per filter and reason in a NoValidHost message (the rest are counted):
# a request widened to a thousand candidates must not carry a message of 60 KB.
EXAMPLE_HOSTS = 5


def describe_rejections(candidate_hosts: int, rejections: Sequence[Rejection]) -> str:
    """"all 3 candidate hosts were rejected: ComputeFilter rejected h1 (disabled), ...";
    past ``EXAMPLE_HOSTS`` rejections of one filter, grouped by reason with a count and
    the first hosts: "ImagePropertiesFilter rejected 1000 hosts: 1000 (runs x86_64...:
    h1, h2, h3, h4, h5 and 995 more)"."""
    by_filter: dict[str, list[Rejection]] = {}
    for rejection in rejections:
        by_filter.setdefault(rejection.filter, []).append(rejection)
    hosts = "host was" if candidate_hosts == 1 else "hosts were"
    return f"all {candidate_hosts} candidate {hosts} rejected: " + "; ".join(
        f"{name} rejected " + _rejected(found) for name, found in by_filter.items())


def _rejected(found: Sequence[Rejection]) -> str:
    if len(found) <= EXAMPLE_HOSTS:
        return ", ".join(f"{r.host} ({r.reason})" for r in found)
    by_reason: dict[str, list[str]] = {}
    for rejection in found:
        by_reason.setdefault(rejection.reason, []).append(rejection.host)
    parts = []
    for reason, names in sorted(by_reason.items(), key=lambda item: -len(item[1])):
        shown = ", ".join(names[:EXAMPLE_HOSTS])
        more = f" and {len(names) - EXAMPLE_HOSTS} more" if len(names) > EXAMPLE_HOSTS else ""
        parts.append(f"{len(names)} ({reason}: {shown}{more})")
    return f"{len(found)} hosts: " + ", ".join(parts)
