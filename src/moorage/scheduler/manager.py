"""select_destinations: from a request spec to a claimed host and its alternates.

The pipeline, top to bottom:

1. request filters write what placement must check (root traits, aggregates) and
   record what they did on the spec;
2. the spec becomes one GET /allocation_candidates (placement does the heavy
   filtering: resources, traits, aggregates, over every provider at once);
3. the candidates are grouped by host (the root provider of each allocation
   request), and hosts the request excludes are set aside (ignore_hosts,
   requested_host, providers no compute service owns);
4. host filters check what placement cannot (service up, legacy image properties);
5. weighers order the survivors (free resources from the provider summaries);
6. the best host's first candidate is claimed (PUT /allocations with the consumer
   generation); if the claim loses a race, the next host is tried;
7. up to max_attempts - 1 further hosts become the alternates, unclaimed.

Each stage records what it excluded in the scheduling's ``Decisions``
(decisions.py) as it decides; a stage that leaves nothing raises NoValidHost with
a reason naming what did it, and the decisions in its details. ``plan`` runs the
same pipeline and claims nothing (the dry run).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from oslo_config import cfg

from moorage.conf import check_options, option_value, where
from moorage.conf.api import user_floor
from moorage.model.discretion import Floor
from moorage.placement.answers import ExplanationJSON
from moorage.placement.client import (
    Candidates,
    PlacementClient,
    PlacementError,
    ProviderQuery,
    ProviderSummary,
)
from moorage.placement.provider_names import provider_uuid
from moorage.scheduler.decisions import LISTED_WEIGHED, Decisions, Exclusion, Weighed
from moorage.scheduler.explain import (
    deciding_key,
    describe_rejections,
    describe_request,
    filter_exclusions,
    placement_decisions,
)
from moorage.scheduler.filter_records import Origin, OriginKind
from moorage.scheduler.host_filters import (
    FilterOptions,
    HostState,
    constraint_labels,
    enabled_filters,
    run_filters,
)
from moorage.scheduler.host_traits import SHARES
from moorage.scheduler.probed_explanation import explanation, probes, satisfying
from moorage.scheduler.request_filters import (
    FilterContext,
    RequestFilterFailed,
    image_metadata_traits,
    image_type_trait,
    process_request_spec,
)
from moorage.scheduler.resource_request import ResourceRequest, resource_request
from moorage.scheduler.server_groups import GroupPlacement, affinity_host
from moorage.scheduler.types import (
    AllocationRequest,
    Catalog,
    Destination,
    HostInfo,
    NoValidHost,
    Rejection,
    RequestSpec,
    Selection,
    Unschedulable,
)
from moorage.scheduler.uncertainty import Randomness, differences
from moorage.scheduler.weighers import (
    WeighedHost,
    choose_order,
    free_by_root,
    multipliers_from_conf,
    server_group_weigher,
    weigh,
)

LOG = logging.getLogger(__name__)

# Upstream's reasons for a rebuild whose new image the current host cannot take.
REBUILD_FORBIDDEN = ("Image traits are part of forbidden traits in flavor associated with the "
                     "server. Either specify a different image during rebuild or create a new "
                     "server with the specified image and a compatible flavor.")
REBUILD_UNSATISFIED = ("Image traits cannot be satisfied by the current resource providers. "
                       "Either specify a different image during rebuild or create a new server "
                       "with the specified image.")


@dataclass(frozen=True)
class _Offer:
    """What one placement query and the host filters made of it."""

    candidates: Candidates
    hosts: list[HostCandidates]
    passing: list[HostState]
    rejections: list[Rejection]
    # What a NoValidHost of this offer says besides its reason and decisions.
    query: Unschedulable
    decisions: Decisions
    limit: int
    # Placement had (or may have had) more than it returned.
    truncated: bool


class HostCandidates(NamedTuple):
    """A host placement offered, with its allocation requests (placement's order). A
    named tuple: one is made per candidate of every boot."""

    host: str
    node: str
    root_uuid: str
    requests: tuple[AllocationRequest, ...]

    def destination(self) -> Destination:
        return Destination(self.host, self.node, self.root_uuid, self.requests[0])


def check_configuration(conf: cfg.ConfigOpts) -> None:
    """A misspelt filter or a bad option value stops the service when it starts, naming
    what is allowed (a ValueError of one line), rather than failing the first boot."""
    check_options(conf, ("scheduler", "filter_scheduler"))
    enabled_filters(conf.filter_scheduler.enabled_filters,
                    where(conf, "filter_scheduler", "enabled_filters"))


class Scheduler:
    """Chooses hosts for servers; a library the conductor calls (contract §3)."""

    def __init__(self, conf: cfg.ConfigOpts, placement: PlacementClient, catalog: Catalog,
                 rng: random.Random | None = None) -> None:
        check_configuration(conf)
        self.conf = conf
        self.placement = placement
        self.catalog = catalog
        self.rng = rng or random.Random()

    # -- the pipeline ----------------------------------------------------------------
    def select_destinations(self, spec: RequestSpec,
                            confirm: Callable[[], None] | None = None) -> Selection:
        """Claim a host for ``spec.instance_uuid`` and name the alternates. ``confirm``:
        see ``claim``."""
        if spec.rebuild and spec.requested_host:
            return self._same_host_rebuild(spec, spec.requested_host)
        return self._select(spec, claim=True, confirm=confirm)

    def plan(self, spec: RequestSpec) -> Selection:
        """The dry run: the whole pipeline as for a real boot, without the claim. The
        chosen host is the one the claim would try first."""
        return self._select(spec, claim=False)

    def _select(self, spec: RequestSpec, *, claim: bool,
                confirm: Callable[[], None] | None = None) -> Selection:
        hosts = self.catalog.hosts()
        if spec.requested_host and spec.requested_host not in hosts:
            raise NoValidHost(Unschedulable(
                f"requested host {spec.requested_host} is not a known compute host",
                "the requested host is not a known compute host",
                Decisions(deciding="requested_host"), requested_host=spec.requested_host))
        # 1. request filters
        try:
            process_request_spec(spec, FilterContext(self.conf, self.catalog))
        except RequestFilterFailed as exc:
            decisions = Decisions(deciding=f"request filter {exc.name}")
            decisions.exclude(Exclusion("request filter", f"request filter {exc.name}",
                                        exc.name, len(hosts), len(hosts)))
            raise NoValidHost(Unschedulable(exc.reason, exc.reason, decisions,
                                            tuple(spec.filter_records))) from None
        # 2.-4. placement, then the host filters, on a sample of the candidates first
        limits = self._limits(spec)
        for attempt, limit in enumerate(limits):
            offer = self._offer(spec, hosts, limit)
            if offer.passing or attempt == len(limits) - 1 or not offer.truncated:
                break
            LOG.info("no host of a sample of %d passed the filters for %s; asking placement "
                     "for up to %d", limit, spec.instance_uuid, limits[-1])
        decisions = offer.decisions
        details = offer.query
        if len(limits) > 1:
            details = replace(details, sample=limits[0], widened=offer.limit != limits[0])
        if not offer.passing:
            filtered = [e for e in decisions.exclusions if e.stage in ("host filter", "request")]
            decisions.deciding = max(filtered, key=lambda e: e.excluded).key if filtered \
                else "host filters"
            raise self._no_valid_host(
                describe_rejections(len(offer.hosts), offer.rejections), details,
                decisions, describe_rejections(len(offer.hosts), offer.rejections,
                                               self._floor))
        # 5. weighers (by root provider: a host may offer several nodes)
        by_root = {h.root_uuid: h for h in offer.hosts}
        order, weighed = self._order(offer.passing, offer.candidates.summaries,
                                     spec.server_group)
        names = {s.provider_uuid: s.name for s in offer.passing}
        decisions.weighed = [Weighed(names[w.host], w.weight)
                             for w in weighed[:LISTED_WEIGHED]]
        # 6. claim, 7. alternates
        max_alternates = self.conf.scheduler.max_attempts - 1
        for index, root in enumerate(order):
            destination = by_root[root].destination()
            if not claim or self.claim(spec, destination, confirm):
                alternates = [by_root[r].destination()
                              for r in order[index + 1:][:max_alternates]]
                decisions.chosen = destination.host
                decisions.alternates = [a.host for a in alternates]
                return Selection(destination, alternates,
                                 candidates=len(offer.candidates.allocation_requests),
                                 hosts_passing_filters=len(offer.passing),
                                 decisions=decisions,
                                 differences=() if claim else differences(
                                     self._randomness(), weighed,
                                     {r: h.host for r, h in by_root.items()},
                                     offer.truncated))
            LOG.info("claim on %s for %s lost a race; trying the next host", names[root],
                     spec.instance_uuid)
            decisions.claims_failed.append(names[root])
        decisions.exclude(Exclusion("claim", "claim (resources taken meanwhile)", "claim",
                                    len(order), len(order),
                                    hosts=tuple(decisions.claims_failed)))
        decisions.deciding = "claim"
        raise self._no_valid_host(
            f"all {len(order)} hosts that passed the filters refused the claim: their "
            "resources were taken meanwhile", details, decisions,
            "every host that passed the filters refused the claim: their resources were "
            "taken meanwhile")

    @property
    def _floor(self) -> Floor:
        """The counts users may be told (``[api] capability_host_floor``)."""
        return user_floor(self.conf)

    @staticmethod
    def _no_valid_host(reason: str, query: Unschedulable, decisions: Decisions,
                       user_reason: str | None = None) -> NoValidHost:
        """A NoValidHost of the pipeline: its reasons name constraints and counts, never
        a host; the user's reason (``user_reason``, else the same) tells no count below
        the floor."""
        return NoValidHost(replace(query, reason=reason, user_reason=user_reason or reason,
                                   decisions=decisions))

    def _limits(self, spec: RequestSpec) -> list[int]:
        """How many candidates to ask placement for: a sample first, then (if none of
        it passes the host filters and placement had more) up to
        max_placement_results."""
        ceiling = int(self.conf.scheduler.max_placement_results)
        sample = int(self.conf.scheduler.placement_sample_size)
        if not sample or sample >= ceiling or spec.requested_host \
                or affinity_host(spec.server_group):
            return [ceiling]
        return [sample, ceiling]

    def _offer(self, spec: RequestSpec, hosts: Mapping[str, HostInfo], limit: int) -> _Offer:
        """Stages 2 to 4 with ``limit`` candidates: what placement offered and what the
        host filters made of it."""
        request = self._placement_request(spec, hosts, limit)
        details = Unschedulable("", "", filters=tuple(spec.filter_records),
                                request=request.to_json())  # the reasons come later
        candidates, decisions = self._candidates(spec, request, details)
        # 3. hosts offered, minus those the request excludes
        offered, unowned = self._by_host(candidates, hosts)
        decisions.candidates = len(candidates.allocation_requests)
        details = replace(details, candidates=decisions.candidates)
        if unowned:
            decisions.exclude(Exclusion("request", "no compute service owns the node",
                                        "unknown_node", unowned, unowned + len(offered)))
        if not offered:
            decisions.deciding = "unknown_node"
            raise self._no_valid_host(
                f"placement returned {len(candidates.allocation_requests)} allocation "
                "candidates, none on a node of a known compute service", details, decisions,
                "placement's allocation candidates were on no node of a known compute "
                "service")
        states = [HostState(hosts[h.host], self.catalog.aggregates_of(h.host), h.node,
                            h.root_uuid) for h in offered]
        kept, excluded = _excluded(spec, states)
        # 4. host filters
        filters = enabled_filters(self.conf.filter_scheduler.enabled_filters)
        passing, rejected = run_filters(kept, spec, filters, FilterOptions.from_conf(self.conf))
        for exclusion in (filter_exclusions("request", len(states), excluded)
                          + filter_exclusions("host filter", len(kept), rejected,
                                              constraint_labels(filters, spec))):
            decisions.exclude(exclusion)
        decisions.passing = len(passing)
        truncated = request.limit is not None and len(
            candidates.allocation_requests) >= request.limit
        return _Offer(candidates, offered, passing, excluded + rejected, details, decisions,
                      limit, truncated)

    def claim(self, spec: RequestSpec, destination: Destination,
              confirm: Callable[[], None] | None = None) -> bool:
        """Claim ``destination``'s allocation request for the instance; False when it no
        longer fits (or the instance's allocations changed meanwhile).

        ``confirm`` (the caller's check that the work is still its own) runs right
        before each write: the candidates were asked for first, and a caller paused
        meanwhile must not claim behind whoever took its work over. A server that holds
        nothing (a build's first claim, an alternate after a release) claims at once
        as a new consumer, which placement refuses if the consumer exists: nothing is
        overwritten. Then its generation is read and the claim made at it, after the
        check again: whoever changed the consumer after that makes this claim fail on
        its generation rather than be overwritten by it."""
        if confirm is not None:
            confirm()
        outcome = self.placement.claim_new(spec.instance_uuid, destination.allocation_request,
                                           spec.project_id, spec.user_id)
        if outcome is not None:
            return outcome
        _, generation = self.placement.allocations(spec.instance_uuid)
        if confirm is not None:
            confirm()
        return self.placement.claim(spec.instance_uuid, destination.allocation_request,
                                    spec.project_id, spec.user_id, generation)

    def move_claim(self, spec: RequestSpec, destination: Destination, generation: int,
                   confirm: Callable[[], None] | None = None) -> bool | None:
        """Replace what the instance holds (a failed host's claim, the consumer at
        ``generation``) with ``destination``'s allocation request, in one request
        instead of a release and a claim. True: claimed (the consumer is now at
        ``generation + 1``). False: it no longer fits, and the old claim is still
        held. None: the consumer is not at ``generation``; nothing changed.
        ``confirm``: see ``claim``."""
        if confirm is not None:
            confirm()
        return self.placement.claim_at(spec.instance_uuid, destination.allocation_request,
                                       spec.project_id, spec.user_id, generation)

    def verify_rebuild(self, spec: RequestSpec, host: str) -> None:
        """Can ``host`` (where the server is) take the new image? No candidates query,
        no claim: the image's required traits must not be forbidden by the flavor and
        must be on the providers the server holds, and the host filters that run on
        rebuild must pass. With the prefilters on, the traits they would require
        (device models, disk format) are checked as well, which upstream skips."""
        image = spec.image
        forbidden = sorted(image.properties.traits_required & spec.flavor.traits("forbidden"))
        if forbidden:
            reason = f"{REBUILD_FORBIDDEN} (forbidden: {', '.join(forbidden)})"
            raise NoValidHost(Unschedulable(reason, reason, Decisions(deciding="rebuild"),
                                            host=host, forbidden_image_traits=tuple(forbidden)))
        needed = {t: Origin.image_trait(t) for t in image.properties.traits_required}
        sched = self.conf.scheduler
        if sched.image_metadata_prefilter:
            needed.update(image_metadata_traits(image.properties).traits)
        if sched.query_placement_for_image_type_support and not spec.is_bfv:
            needed[image_type_trait(image.disk_format)] = Origin(
                OriginKind.IMAGE, "disk_format", image.disk_format)
        held, _ = self.placement.allocations(spec.instance_uuid)
        on_providers: set[str] = set()
        for traits in self.placement.concurrently(self.placement.traits, list(held)):
            on_providers |= set(traits)
        missing = sorted(set(needed) - on_providers)
        if missing:
            named = ", ".join(f"{t} (from {needed[t].describe()})" for t in missing)
            raise NoValidHost(Unschedulable(
                f"{REBUILD_UNSATISFIED} Missing on host {host}: {named}",
                f"{REBUILD_UNSATISFIED} Missing on the server's host: {named}",
                Decisions(deciding="rebuild"), host=host, missing_traits=tuple(missing),
                providers=tuple(sorted(held))))
        info = self.catalog.hosts().get(host)
        if info is None:
            raise NoValidHost(Unschedulable(
                f"host {host} is not a known compute host",
                "the server's host is not a known compute host",
                Decisions(deciding="rebuild"), host=host))
        state = HostState(info, self.catalog.aggregates_of(host))
        rebuild_filters = [f for f in enabled_filters(self.conf.filter_scheduler.enabled_filters)
                           if f.run_on_rebuild]
        _, rejections = run_filters([state], spec, rebuild_filters,
                                    FilterOptions.from_conf(self.conf))
        if rejections:
            reason = describe_rejections(1, rejections)
            raise NoValidHost(Unschedulable(reason, describe_rejections(1, rejections,
                                                                        self._floor),
                                            Decisions(deciding="rebuild"),
                                            host=host, rejections=tuple(rejections)))

    # -- stages -----------------------------------------------------------------------
    def _same_host_rebuild(self, spec: RequestSpec, host: str) -> Selection:
        """Upstream's rebuild short-cut: only the checks, and the host it is on."""
        self.verify_rebuild(spec, host)
        held, _ = self.placement.allocations(spec.instance_uuid)
        info = self.catalog.hosts()[host]
        node = next((n for n in info.nodes if provider_uuid(n) in held),
                    info.nodes[0] if info.nodes else host)
        root = provider_uuid(node)
        return Selection(Destination(host, node, root, held), [], candidates=0,
                         hosts_passing_filters=1, decisions=Decisions(chosen=host, passing=1))

    def _placement_request(self, spec: RequestSpec, hosts: Mapping[str, HostInfo],
                           limit: int) -> ResourceRequest:
        """The query; a requested host of one node narrows it to that node's tree (and a
        host of several nodes lifts the limit, so none of its nodes is cut off)."""
        request = resource_request(spec, limit=limit)
        target = _narrowed_to(spec, hosts)
        if target:
            nodes = list(hosts[target].nodes)
            if len(nodes) == 1:
                request.unnumbered.in_tree = provider_uuid(nodes[0])
                if "" not in request.groups:
                    LOG.debug("no unnumbered group to narrow to %s", target)
            else:
                request = resource_request(spec, limit=None)
        return request

    def _candidates(self, spec: RequestSpec, request: ResourceRequest,
                    details: Unschedulable) -> tuple[Candidates, Decisions]:
        """Placement's answer, and its count of what each constraint excluded (the
        Moorage-Explain extension; a placement without it is asked, only when it
        offers nothing, which required traits no provider has)."""
        try:
            # The host filters and weighers read no trait from the summaries.
            candidates = self.placement.allocation_candidates_for(
                request.query_params(), explain=int(self.conf.scheduler.decision_hosts_listed),
                traits=False)
        except PlacementError as exc:
            if exc.status == 400:
                # A trait or resource class placement does not know, a malformed group.
                described = describe_request(request, spec, self._aggregate_names())
                decisions = Decisions(deciding="placement refused")
                raise self._no_valid_host(
                    f"placement refused the request for: {described}: {exc}", details,
                    decisions) from None
            raise
        explained = candidates.explanation
        if explained is None and not candidates.allocation_requests:
            # A placement without Moorage's explanation (upstream's): counted here, only
            # now, at a bounded number of reads.
            explained, left_out = self._probe(request)
        else:
            left_out = ()
        decisions = (placement_decisions(explained, spec, self._host_of,
                                         self._aggregate_names)
                     if explained is not None else Decisions())
        if left_out:
            decisions.notes = [f"counted by probing placement, without {', '.join(left_out)}"]
        if not candidates.allocation_requests:
            described = describe_request(request, spec, self._aggregate_names())
            reason = user_reason = "placement returned no allocation candidates for: " + described
            said = decisions.explanation()
            if said:
                reason += ". " + said
                user_reason += ". " + decisions.explanation(floor=self._floor)
            decisions.deciding = deciding_key(decisions)
            raise self._no_valid_host(reason, details, decisions, user_reason)
        return candidates, decisions

    def _host_of(self, root_uuid: str) -> str:
        """The host owning a root provider, by name (its uuid when no service owns it)."""
        node = self.catalog.node_of_provider(root_uuid)
        return node[0] if node is not None else root_uuid

    def _probe(self, request: ResourceRequest) -> tuple[ExplanationJSON | None, tuple[str, ...]]:
        """Placement's explanation worked out from ``GET /resource_providers`` reads
        (``probed_explanation``), and what of the request it leaves out; None when
        placement cannot be read."""
        planned = probes(request)
        queries = [ProviderQuery(), ProviderQuery(required=[SHARES]),
                   *(p.query for p in planned.probes)]
        try:
            answers = self.placement.concurrently(self.placement.providers, queries)
        except PlacementError as exc:
            LOG.warning("could not count what excluded each host: %s", exc)
            return None, ()
        every, sharing, *found = answers
        lenders = {p.uuid for p in sharing}
        hosts = frozenset(p.uuid for p in every if p.uuid == p.root_uuid
                          and p.uuid not in lenders)
        probed = [(probe, satisfying(probe, [(p.uuid, p.root_uuid) for p in providers], hosts))
                  for probe, providers in zip(planned.probes, found, strict=True)]
        listed = int(self.conf.scheduler.decision_hosts_listed)
        return explanation(sorted(hosts), probed, listed), planned.left_out

    def _by_host(self, candidates: Candidates, hosts: Mapping[str, HostInfo]
                 ) -> tuple[list[HostCandidates], int]:
        """Allocation requests grouped by the host owning their root provider, in the
        order placement gave them, and how many roots no compute service owns (left
        out). An allocation request's root is that of its first provider by uuid (a
        request may hold a sharing provider of another tree besides its host's)."""
        summaries: Mapping[str, ProviderSummary] = candidates.summaries
        grouped: dict[str, list[AllocationRequest]] = {}
        for request in candidates.allocation_requests:
            rp = min(request) if len(request) > 1 else next(iter(request))
            summary = summaries.get(rp)
            root = rp if summary is None else summary.root_uuid
            found = grouped.get(root)
            if found is None:
                grouped[root] = [request]
            else:
                found.append(request)
        node_of = self._nodes_by_root(grouped, hosts)
        offered = [HostCandidates(*node_of[root], root, tuple(requests))
                   for root, requests in grouped.items() if root in node_of]
        return offered, len(grouped) - len(offered)

    def _nodes_by_root(self, roots: Iterable[str], hosts: Mapping[str, HostInfo]
                       ) -> dict[str, tuple[str, str]]:
        """root provider uuid -> (host, node). Compute agents name a node's provider
        after the node (uuid derived from the name), which the catalog maps; a root
        not found that way is looked up by name."""
        found: dict[str, tuple[str, str]] = {}
        unknown = []
        for root in roots:
            node = self.catalog.node_of_provider(root)
            if node is not None and node[0] in hosts:
                found[root] = node
            else:
                unknown.append(root)
        if not unknown:
            return found
        by_name = {node: (h.host, node) for h in hosts.values() for node in h.nodes}

        def name_of(root: str) -> str | None:
            try:
                return self.placement.provider(root).name
            except PlacementError:
                return None

        unknown.sort()
        for root, name in zip(unknown, self.placement.concurrently(name_of, unknown),
                              strict=True):
            if name in by_name:
                found[root] = by_name[name]
        return found

    def _randomness(self) -> Randomness:
        """The options that make a boot's choice of host random. Placement's own is read
        from this configuration: one file for every service, or ``[placement]`` set
        to what the placement service runs with."""
        fs = self.conf.filter_scheduler
        return Randomness(
            randomized_candidates=bool(option_value(self.conf, "placement",
                                                    "randomize_allocation_candidates")),
            shuffle_best=fs.shuffle_best_same_weighed_hosts,
            subset_size=fs.host_subset_size)

    def _aggregate_names(self) -> dict[str, str]:
        return {agg.uuid: agg.name for agg in self.catalog.aggregates()}

    def _order(self, passing: Sequence[HostState], summaries: Mapping[str, ProviderSummary],
               group: GroupPlacement | None) -> tuple[list[str], list[WeighedHost]]:
        """Root providers in the order to try them, and their weights, best first."""
        roots = [s.provider_uuid for s in passing]
        by_root = free_by_root(summaries)
        free = {root: by_root.get(root, {}) for root in roots}
        soft = server_group_weigher(self.conf, [s.info.host for s in passing], group)
        weighed = weigh(roots, free, multipliers_from_conf(self.conf),
                        () if soft is None else (soft,))
        fs = self.conf.filter_scheduler
        return choose_order(weighed, subset_size=fs.host_subset_size,
                            shuffle_best=fs.shuffle_best_same_weighed_hosts,
                            rng=self.rng), weighed


def _narrowed_to(spec: RequestSpec, hosts: Mapping[str, HostInfo]) -> str | None:
    """The one host the query is narrowed to: the requested host, else the host of
    the server's affinity group (when it is a known host; ServerGroupAffinityFilter
    names the group when it is not)."""
    if spec.requested_host:
        return spec.requested_host
    host = affinity_host(spec.server_group)
    return host if host in hosts else None


def _excluded(spec: RequestSpec, states: Sequence[HostState]
              ) -> tuple[list[HostState], list[Rejection]]:
    """Hosts the request itself rules out, recorded like filter rejections."""
    kept: list[HostState] = []
    out: list[Rejection] = []
    for state in states:
        if state.info.host in spec.ignore_hosts:
            out.append(Rejection("ignore_hosts", state.name, "excluded by the request"))
        elif spec.requested_host and state.info.host != spec.requested_host:
            out.append(Rejection("requested_host", state.name, "not the requested host"))
        else:
            kept.append(state)
    return kept, out



