"""Why no host fits, in words a user can act on.

Pure functions that turn a placement request and what came of it into the reason
of a ``NoValidHost``: which resources and traits were asked for and where each
trait came from (a flavor extra spec, an image property, a request filter), and
which host filter turned which host away.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from moorage.model.discretion import EXACT, Floor
from moorage.scheduler.decisions import Decisions, Exclusion, Relaxation, Together, listed
from moorage.scheduler.filter_records import TRAIT_CONSTRAINTS, Origin, OriginKind
from moorage.scheduler.resource_request import EXTRA_SPEC, ResourceRequest
from moorage.scheduler.server_groups import affinity_host
from moorage.scheduler.types import Rejection, RequestSpec


def trait_origins(spec: RequestSpec) -> dict[str, list[str]]:
    """trait -> where the request got it, for every trait the request names: the
    flavor's and the image's own, then what each request filter recorded adding."""
    origins: dict[str, list[str]] = {}

    def add(trait: str, origin: str) -> None:
        origins.setdefault(trait, []).append(origin)

    for key, value in sorted(spec.flavor.extra_specs.items()):
        match = EXTRA_SPEC.match(key)
        if match and match.group(1) == "trait" and value in ("required", "forbidden"):
            add(match.group(3), Origin(OriginKind.FLAVOR_EXTRA_SPEC, key, value).describe())
    for trait in sorted(spec.image.properties.traits_required):
        add(trait, Origin.image_trait(trait).describe())
    for record in spec.filter_records:
        for addition in record.added:
            if addition.constraint in TRAIT_CONSTRAINTS:
                for trait in addition.names:
                    add(trait, addition.source())
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


def describe_rejections(candidate_hosts: int, rejections: Sequence[Rejection],
                        floor: Floor = EXACT) -> str:
    """"all 3 candidate hosts were rejected: ComputeFilter rejected 2 (1 disabled, 1
    down); ImagePropertiesFilter rejected 1 (runs x86_64/qemu/hvm, ...)": counts per
    filter and reason, most first, none below ``floor`` ("fewer than 3"). No host is
    named: the hosts are in the scheduling's decisions, for those the host policy
    allows."""
    by_filter: dict[str, dict[str, int]] = {}
    for rejection in rejections:
        reasons = by_filter.setdefault(rejection.filter, {})
        reasons[rejection.reason] = reasons.get(rejection.reason, 0) + 1
    parts = []
    for name, reasons in by_filter.items():
        counted = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
        parts.append(f"{name} rejected {floor.words(sum(reasons.values()))} ("
                     + ", ".join(f"{floor.words(n)} {reason}" for reason, n in counted) + ")")
    if floor.count(candidate_hosts) is None:
        every = "every candidate host was"
    else:
        noun = "host was" if candidate_hosts == 1 else "hosts were"
        every = f"all {candidate_hosts} candidate {noun}"
    return f"{every} rejected: " + "; ".join(parts)


# -- placement's explanation (the Moorage-Explain extension) in the request's words --
def _aggregate_label(names: Sequence[str], aggregate_names: Mapping[str, str]) -> str:
    return ", ".join(aggregate_names.get(u, u) for u in names)


def constraint_label(item: Mapping[str, Any], aggregate_names: Mapping[str, str]
                     ) -> tuple[str, str, str]:
    """(what it is for people, short form for "no host has all of", metric key) of one
    constraint of placement's explanation."""
    kind = str(item["kind"])
    names = [str(n) for n in item["names"]]
    group = f"group {item['group']}: " if item.get("group") else ""
    if kind == "resources":
        amount = f"{names[0]}={item.get('amount')}"
        return f"{group}resources {amount}", f"{amount} free", names[0]
    if kind in ("required", "root_required"):
        what = "required host trait" if kind == "root_required" else "required trait"
        if len(names) > 1:
            return f"{group}{what} one of {', '.join(names)}", " or ".join(names), \
                ",".join(names)
        return f"{group}{what} {names[0]}", names[0], names[0]
    if kind in ("forbidden", "root_forbidden"):
        what = "forbidden host trait" if kind == "root_forbidden" else "forbidden trait"
        return f"{group}{what} {names[0]}", f"no {names[0]}", f"!{names[0]}"
    if kind == "member_of":
        label = _aggregate_label(names, aggregate_names)
        return f"{group}in aggregate {label}", f"aggregate {label}", "member_of"
    if kind == "forbidden_aggregates":
        label = _aggregate_label(names, aggregate_names)
        return f"{group}outside aggregates {label}", f"outside {label}", "forbidden_aggregates"
    return f"{group}on the requested host", "the requested host", "requested_host"


def _origin(item: Mapping[str, Any], origins: Mapping[str, list[str]],
            spec: RequestSpec) -> str | None:
    kind = item["kind"]
    if kind == "resources":
        return f"flavor {spec.flavor.name}"
    if kind in ("required", "root_required", "forbidden", "root_forbidden"):
        found = [o for name in item["names"] for o in origins.get(str(name), ())]
        return "; ".join(dict.fromkeys(found)) or None
    return None


def _group_narrowing(spec: RequestSpec) -> tuple[str, str, str] | None:
    """The labels of an ``in_tree`` that is the server's affinity group's host (the
    scheduler narrows the query to it), not a requested host."""
    group = spec.server_group
    if spec.requested_host or group is None or affinity_host(group) is None:
        return None
    return group.constraint, group.constraint, "ServerGroupAffinityFilter"


def placement_decisions(explained: Mapping[str, Any], spec: RequestSpec,
                        host_of: Callable[[str], str],
                        aggregate_names: Callable[[], Mapping[str, str]]) -> Decisions:
    """Placement's per-constraint counts as the scheduling record's exclusions (the
    excluded root providers named as the hosts that own them), with what no host
    has together and the smallest change. ``aggregate_names`` is asked only when a
    constraint names aggregates (it reads the catalog)."""
    origins = trait_origins(spec)
    total = int(explained["hosts"])
    decisions = Decisions(hosts=total)
    labels = []
    names: Mapping[str, str] = {}
    if any(item["kind"] in ("member_of", "forbidden_aggregates")
           for item in explained["constraints"]):
        names = aggregate_names()
    narrowed = _group_narrowing(spec)
    for item in explained["constraints"]:
        constraint, short, key = constraint_label(item, names)
        if item["kind"] == "in_tree" and narrowed is not None:
            constraint, short, key = narrowed
        labels.append((constraint, short, _origin(item, origins, spec)))
        roots = [str(r) for r in item.get("excluded_roots", ())]
        decisions.exclude(Exclusion(
            "placement", constraint, key, int(item["excluded"]), total,
            origin=labels[-1][2], hosts=tuple(host_of(r) for r in roots),
            hosts_omitted=int(item["excluded"]) - len(roots)))
    together = [int(i) for i in explained.get("together") or ()]
    if together:
        decisions.together = Together(
            tuple(labels[i][1] for i in together),
            tuple(int(explained["constraints"][i]["satisfied"]) for i in together))
    relaxed = explained.get("relaxed")
    if relaxed:
        constraint, _, origin = labels[int(relaxed["constraint"])]
        decisions.relaxed = Relaxation(constraint, origin, int(relaxed["viable"]))
    return decisions


def deciding_key(decisions: Decisions) -> str:
    """The constraint that left no host, as a metric label: the one whose removal
    would help, else the most excluding ("no hosts" in a cloud without any)."""
    if decisions.hosts == 0:
        return "no hosts"
    if decisions.relaxed is not None:
        for exclusion in decisions.exclusions:
            if exclusion.constraint == decisions.relaxed.constraint:
                return exclusion.key
    ranked = decisions.ranked()
    return ranked[0].key if ranked else "resources"


def filter_exclusions(stage: str, offered: int, rejections: Sequence[Rejection],
                      constraints: Mapping[str, str] | None = None) -> list[Exclusion]:
    """Host filters' (or the request's) rejections, one exclusion per filter, with the
    hosts named (capped) and counted per reason. ``constraints``: filter name -> the
    constraint to name instead of the filter (a server group's)."""
    by_filter: dict[str, list[Rejection]] = {}
    for rejection in rejections:
        by_filter.setdefault(rejection.filter, []).append(rejection)
    found = []
    for name, rejected in by_filter.items():
        hosts, omitted = listed([r.host for r in rejected])
        reasons: dict[str, int] = {}
        for rejection in rejected:
            reasons[rejection.reason] = reasons.get(rejection.reason, 0) + 1
        label = f"host filter {name}" if stage == "host filter" else name
        if constraints and name in constraints:
            label = constraints[name]
        found.append(Exclusion(stage, label, name, len(rejected), offered, hosts=hosts,
                               hosts_omitted=omitted, reasons=reasons))
    return found
