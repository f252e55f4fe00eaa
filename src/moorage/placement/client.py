"""A typed client of the placement API, for Moorage's own services and commands.

The compute agents, the scheduler and the ``moorage placement`` commands all talk
to placement through it, over HTTP like any OpenStack client. It speaks the
latest microversion and turns every failure into a ``PlacementError`` whose
message is one line an operator can act on ("placement at URL is not reachable:
connection refused", or the API's own error detail) and whose ``code`` is
placement's error code (``placement.concurrent_update``, ...). Per-provider reads
for many providers run concurrently, sharing one pool of keep-alive connections.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, TypeVar
from urllib.parse import urlencode

import orjson
from oslo_config import cfg

from moorage import service_auth, transport
from moorage.conf.placement import DEVELOPMENT_URL
from moorage.jsonvalue import JSONValue
from moorage.placement.answers import (
    Aggregates,
    ConsumerAllocations,
    ExplanationJSON,
    Inventories,
    InventoryJSON,
    ProviderJSON,
    Providers,
    TraitNames,
    Traits,
    Usages,
)
from moorage.placement.answers import (
    Candidates as CandidatesJSON,
)
from moorage.placement.storage.records import Inventory

URL_ENV = "MOORAGE_PLACEMENT_URL"
TOKEN_ENV = "MOORAGE_PLACEMENT_TOKEN"
DEFAULT_URL = DEVELOPMENT_URL
# The development noauth2 mode reads the token as "user[:project]"; the token
# "admin" is an administrator. A keystone-protected service needs a real token.
DEFAULT_TOKEN = "admin"
MICROVERSION = "latest"
# Claims pin 1.38: consumer generations (1.28) and consumer types (1.38), as nova.
CLAIM_MICROVERSION = "1.38"
# The Moorage extension of GET /allocation_candidates: each constraint counted on its own.
EXPLAIN_HEADER = "Moorage-Explain"
# Provider summaries of resources and tree only (no traits): Moorage's placement.
SUMMARIES_HEADER = "Moorage-Summaries"
SUMMARIES_WITHOUT_TRAITS = "resources"
CONSUMER_TYPE_INSTANCE = "INSTANCE"
# Worker threads (and keep-alive connections) for per-provider reads.
CONCURRENCY = 16
# From this many providers on, reading traits one trait at a time may take fewer calls.
_TRAIT_QUERIES_FROM = 64

_T = TypeVar("_T")
_R = TypeVar("_R")


class PlacementError(Exception):
    """A request failed; ``str()`` is one line saying what went wrong."""

    def __init__(self, message: str, status: int | None = None, code: str | None = None
                 ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code

    @property
    def concurrent_update(self) -> bool:
        """A generation moved under us: re-read and try again."""
        return self.status == 409 and self.code == "placement.concurrent_update"


@dataclass(frozen=True)
class Provider:
    """A resource provider as GET /resource_providers shows it."""

    uuid: str
    name: str
    generation: int
    parent_uuid: str | None
    root_uuid: str

    @classmethod
    def from_json(cls, data: ProviderJSON) -> Provider:
        return cls(
            uuid=data["uuid"],
            name=data["name"],
            generation=int(data["generation"]),
            parent_uuid=data.get("parent_provider_uuid"),
            root_uuid=data.get("root_provider_uuid") or data["uuid"],
        )


@dataclass(frozen=True)
class ProviderDetail:
    """A provider with those of its sub-resources that were asked for (None: not read)."""

    provider: Provider
    inventories: dict[str, Inventory] | None = None
    usages: dict[str, int] | None = None
    traits: list[str] | None = None
    aggregates: list[str] | None = None


class ProviderSummary(NamedTuple):
    """What an allocation-candidates answer says about one provider. A named tuple,
    not a frozen dataclass: the scheduler makes one per provider of every answer,
    and a frozen dataclass's constructor costs three times a tuple's."""

    uuid: str
    root_uuid: str
    parent_uuid: str | None
    traits: list[str]
    # resource class -> (used, capacity)
    resources: dict[str, tuple[int, int]]


# A named tuple made from its values in field order, without its constructor's call.
_new_tuple = tuple.__new__


@dataclass(frozen=True)
class Candidates:
    """GET /allocation_candidates: each request is {provider uuid: {class: amount}}."""

    allocation_requests: list[dict[str, dict[str, int]]]
    summaries: dict[str, ProviderSummary] = field(default_factory=dict)
    # Each constraint counted on its own (a Moorage placement, when asked; else None).
    explanation: ExplanationJSON | None = None


@dataclass(frozen=True)
class ProviderQuery:
    """Filters of GET /resource_providers and GET /allocation_candidates.

    ``required`` entries are sent as repeated ``required`` parameters (all must hold;
    each may be ``!TRAIT`` or ``in:A,B``); so are ``member_of`` entries.
    """

    name: str | None = None
    resources: Mapping[str, int] = field(default_factory=dict)
    required: Sequence[str] = ()
    member_of: Sequence[str] = ()
    in_tree: str | None = None

    def params(self) -> list[tuple[str, str]]:
        query: list[tuple[str, str]] = []
        if self.name:
            query.append(("name", self.name))
        if self.resources:
            query.append(("resources", resources_param(self.resources)))
        query.extend(("required", trait) for trait in self.required)
        query.extend(("member_of", aggregate) for aggregate in self.member_of)
        if self.in_tree:
            query.append(("in_tree", self.in_tree))
        return query


def resources_param(resources: Mapping[str, int]) -> str:
    """{"VCPU": 2, "MEMORY_MB": 512} -> "VCPU:2,MEMORY_MB:512"."""
    return ",".join(f"{rc}:{amount}" for rc, amount in resources.items())


def inventory_from_json(data: InventoryJSON) -> Inventory:
    return Inventory(
        total=int(data["total"]),
        reserved=int(data.get("reserved", 0)),
        min_unit=int(data.get("min_unit", 1)),
        max_unit=int(data.get("max_unit", data["total"])),
        step_size=int(data.get("step_size", 1)),
        allocation_ratio=float(data.get("allocation_ratio", 1.0)),
    )


_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


class PlacementClient:
    """Talks to one placement service, at the latest microversion, as ``credentials``
    say (moorage.service_auth: Keystone's renewed tokens and catalog), or as the one
    ``token`` at ``url`` (DEVELOPMENT; the environment's, then the defaults)."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        credentials: service_auth.Credentials | None = None,
        timeout: float = 30.0,
        concurrency: int = CONCURRENCY,
    ) -> None:
        self.credentials = credentials or service_auth.DevelopmentToken(
            (url or os.environ.get(URL_ENV) or DEFAULT_URL),
            token or os.environ.get(TOKEN_ENV) or DEFAULT_TOKEN)
        self.concurrency = concurrency
        self._endpoint = service_auth.Endpoint(self.credentials, timeout=timeout,
                                               maxsize=concurrency)
        self.timeout = self._endpoint.timeout
        self._headers = {
            "openstack-api-version": f"placement {MICROVERSION}",
            "accept": "application/json",
        }

    @property
    def url(self) -> str:
        """Placement's endpoint (Keystone's catalog asked the first time);
        PlacementError when it cannot be found."""
        try:
            return self._endpoint.url
        except ValueError as exc:  # CredentialsError, or not an http(s) URL
            raise PlacementError(str(exc)) from None

    # -- transport ------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        params: Sequence[tuple[str, str]] = (),
        json: JSONValue = None,
        microversion: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Send one request; the decoded JSON body (None when empty), or PlacementError.
        Typed by the caller, which knows the answer's shape (the typed methods below
        annotate it with the TypedDicts above).

        ``microversion`` pins the request to one version (the latest by default). A
        request whose token is refused (401) is sent once more when the credentials
        have a newer one."""
        url = path + (("&" if "?" in path else "?") + urlencode(params) if params else "")
        body = None if json is None else orjson.dumps(json)
        sent = self._headers
        if headers or body is not None or microversion is not None:
            sent = {**sent, **(headers or {})}
            if body is not None:
                sent["content-type"] = "application/json"
            if microversion is not None:
                sent["openstack-api-version"] = f"placement {microversion}"
        try:
            # A request safe to repeat is sent once more should the server close a
            # kept-alive connection just as it went out on it.
            response = self._endpoint.request(method, url, body=body, headers=sent,
                                              resend=method in _IDEMPOTENT)
        except ValueError as exc:  # CredentialsError, or not an http(s) URL
            raise PlacementError(str(exc)) from None
        except transport.TransportError as exc:
            where = self._endpoint.url
            if exc.unreachable:
                raise PlacementError(f"placement at {where} is not reachable: {exc}"
                                     ) from None
            if exc.timed_out:
                raise PlacementError(
                    f"placement at {where} did not answer {method} {path} "
                    f"within {self.timeout:g}s"
                ) from None
            raise PlacementError(
                f"placement at {where}: {method} {path} failed: {exc}") from None
        if response.status >= 400:
            raise PlacementError(
                f"{method} {path}: {response.status} {response.reason}: "
                f"{_error_detail(response.data)}",
                status=response.status,
                code=_error_code(response.data),
            )
        if not response.data:
            return None
        try:
            return orjson.loads(response.data)
        except orjson.JSONDecodeError:
            raise PlacementError(
                f"{method} {path}: {self._endpoint.url} answered {response.status} with a "
                "body that is not JSON; is it a placement service?"
            ) from None

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, *, timeout: float = 30.0) -> PlacementClient:
        """The client ``[placement]`` configures (Keystone's tokens and catalog when
        ``auth_type`` is set; else DEVELOPMENT's token to ``endpoint_override``).
        CredentialsError, a ValueError of one line, for an unusable configuration."""
        return cls(credentials=service_auth.from_conf(conf, "placement",
                                                      development_url=DEFAULT_URL),
                   timeout=timeout)

    def concurrently(self, function: Callable[[_T], _R], items: Iterable[_T]) -> list[_R]:
        """``[function(item) for item in items]``, run on the worker threads."""
        items = list(items)
        if len(items) <= 1:
            return [function(item) for item in items]
        with ThreadPoolExecutor(min(self.concurrency, len(items))) as pool:
            return list(pool.map(function, items))

    # -- reads ------------------------------------------------------------------
    def providers(self, query: ProviderQuery | None = None) -> list[Provider]:
        body: Providers = self.request("GET", "/resource_providers",
                                        params=(query or ProviderQuery()).params())
        return [Provider.from_json(rp) for rp in body["resource_providers"]]

    def provider(self, uuid: str) -> Provider:
        body: ProviderJSON = self.request("GET", f"/resource_providers/{uuid}")
        return Provider.from_json(body)

    def inventories(self, uuid: str) -> dict[str, Inventory]:
        return self.inventories_with_generation(uuid)[0]

    def inventories_with_generation(self, uuid: str) -> tuple[dict[str, Inventory], int]:
        """A provider's inventories and the generation they were read at."""
        body: Inventories = self.request("GET", f"/resource_providers/{uuid}/inventories")
        return ({rc: inventory_from_json(inv) for rc, inv in body["inventories"].items()},
                int(body["resource_provider_generation"]))

    def usages(self, uuid: str) -> dict[str, int]:
        body: Usages = self.request("GET", f"/resource_providers/{uuid}/usages")
        return {rc: int(used) for rc, used in body["usages"].items()}

    def traits(self, uuid: str) -> list[str]:
        body: Traits = self.request("GET", f"/resource_providers/{uuid}/traits")
        return sorted(body["traits"])

    def aggregates(self, uuid: str) -> list[str]:
        body: Aggregates = self.request("GET", f"/resource_providers/{uuid}/aggregates")
        return sorted(body["aggregates"])

    def aggregates_with_generation(self, uuid: str) -> tuple[set[str], int]:
        """A provider's aggregates and the generation they were read at."""
        body: Aggregates = self.request("GET", f"/resource_providers/{uuid}/aggregates")
        return set(body["aggregates"]), int(body["resource_provider_generation"])

    def set_aggregates(self, uuid: str, generation: int, aggregates: Iterable[str]) -> int:
        """Replace a provider's aggregates; the new generation. 409 if ``generation`` moved."""
        body: Aggregates = self.request("PUT", f"/resource_providers/{uuid}/aggregates", json={
            "resource_provider_generation": generation, "aggregates": sorted(aggregates)})
        return int(body["resource_provider_generation"])

    def detail(
        self,
        provider: Provider,
        *,
        inventories: bool = True,
        usages: bool = True,
        traits: bool = True,
        aggregates: bool = False,
    ) -> ProviderDetail:
        """Read the asked-for sub-resources of one provider (one GET each)."""
        uuid = provider.uuid
        return ProviderDetail(
            provider=provider,
            inventories=self.inventories(uuid) if inventories else None,
            usages=self.usages(uuid) if usages else None,
            traits=self.traits(uuid) if traits else None,
            aggregates=self.aggregates(uuid) if aggregates else None,
        )

    def details(
        self,
        providers: Sequence[Provider],
        *,
        inventories: bool = True,
        usages: bool = True,
        traits: bool = True,
        aggregates: bool = False,
        listed_by: ProviderQuery | None = None,
    ) -> list[ProviderDetail]:
        """``detail`` of each provider, concurrently: the API has no bulk read of
        inventories or usages. Traits of many providers are read one trait at a time
        instead when that takes fewer calls; ``listed_by`` (the query that found
        ``providers``) narrows those answers. A provider deleted meanwhile is left out."""
        traits_of = self.traits_by_trait(providers, listed_by) if traits else None

        def read(provider: Provider) -> ProviderDetail | None:
            try:
                detail = self.detail(provider, inventories=inventories, usages=usages,
                                     traits=traits and traits_of is None,
                                     aggregates=aggregates)
            except PlacementError as exc:
                if exc.status == 404:
                    return None
                raise
            if traits_of is not None:
                detail = replace(detail, traits=traits_of[provider.uuid])
            return detail

        return [d for d in self.concurrently(read, providers) if d is not None]

    def traits_by_trait(
        self, providers: Sequence[Provider], listed_by: ProviderQuery | None
    ) -> dict[str, list[str]] | None:
        """The traits of ``providers`` from one GET /resource_providers?required=T per
        trait in use, or None when one GET per provider would take fewer calls."""
        if len(providers) < _TRAIT_QUERIES_FROM:
            return None
        associated: TraitNames = self.request("GET", "/traits", params=[("associated", "true")])
        in_use = associated["traits"]
        if 2 * len(in_use) >= len(providers):
            return None
        # The listing's filters on names, aggregates and trees keep each answer small;
        # not its resources and traits filters, which change with what is being read.
        base = ProviderQuery(name=listed_by.name, member_of=listed_by.member_of,
                             in_tree=listed_by.in_tree) if listed_by else ProviderQuery()
        holders = self.concurrently(
            lambda trait: self.providers(replace(base, required=[trait])), in_use)
        traits_of: dict[str, list[str]] = {p.uuid: [] for p in providers}
        for trait, having in zip(in_use, holders, strict=True):
            for provider in having:
                if provider.uuid in traits_of:
                    traits_of[provider.uuid].append(trait)
        return {uuid: sorted(names) for uuid, names in traits_of.items()}

    def provider_traits(self, uuid: str) -> tuple[set[str], int]:
        """A provider's traits and the generation they were read at."""
        body: Traits = self.request("GET", f"/resource_providers/{uuid}/traits")
        return set(body["traits"]), int(body["resource_provider_generation"])

    # -- writes -------------------------------------------------------------------
    def create_provider(self, name: str, uuid: str, parent_uuid: str | None = None
                        ) -> Provider:
        body: dict[str, JSONValue] = {"name": name, "uuid": uuid}
        if parent_uuid is not None:
            body["parent_provider_uuid"] = parent_uuid
        created: ProviderJSON = self.request("POST", "/resource_providers", json=body)
        return Provider.from_json(created)

    def set_inventories(self, uuid: str, generation: int,
                        inventories: Mapping[str, Inventory]) -> int:
        """Replace a provider's inventories; the new generation. 409 if ``generation`` moved."""
        body: Inventories = self.request("PUT", f"/resource_providers/{uuid}/inventories", json={
            "resource_provider_generation": generation,
            "inventories": {rc: inv.fields() for rc, inv in inventories.items()},
        })
        return int(body["resource_provider_generation"])

    def set_traits(self, uuid: str, generation: int, traits: Iterable[str]) -> int:
        """Replace a provider's traits; the new generation. 409 if ``generation`` moved."""
        body: Traits = self.request("PUT", f"/resource_providers/{uuid}/traits", json={
            "resource_provider_generation": generation, "traits": sorted(traits)})
        return int(body["resource_provider_generation"])

    def ensure_trait(self, name: str) -> None:
        """Create a CUSTOM_* trait unless it exists."""
        self.request("PUT", f"/traits/{name}")

    def ensure_resource_class(self, name: str) -> None:
        """Create a CUSTOM_* resource class unless it exists."""
        self.request("PUT", f"/resource_classes/{name}")

    def allocation_candidates(
        self, query: ProviderQuery, *, limit: int | None = None
    ) -> Candidates:
        params = query.params()
        if limit is not None:
            params.append(("limit", str(limit)))
        return self.allocation_candidates_for(params)

    def allocation_candidates_for(self, params: Sequence[tuple[str, str]],
                                  explain: int | None = None,
                                  traits: bool = True) -> Candidates:
        """GET /allocation_candidates with query parameters already rendered: the
        scheduler's requests use granular groups, root_required and group_policy,
        which ``ProviderQuery`` does not express.

        ``explain``: ask (Moorage-Explain header) for each constraint's count, naming
        up to that many excluded hosts; a placement without the extension ignores
        the header and the answer's ``explanation`` is None.

        ``traits`` False: the summaries need not list the providers' traits (their
        ``traits`` are then empty; an upstream placement sends them anyway)."""
        headers = {} if explain is None else {EXPLAIN_HEADER: str(explain)}
        if not traits:
            headers[SUMMARIES_HEADER] = SUMMARIES_WITHOUT_TRAITS
        body: CandidatesJSON = self.request("GET", "/allocation_candidates", params=params,
                                         headers=headers or None)
        # JSON numbers decode to int already: an answer of 1,000 candidates is read
        # on the scheduler's hot path, so no per-number conversion here.
        requests_ = [
            {rp: alloc["resources"] for rp, alloc in ar["allocations"].items()}
            for ar in body["allocation_requests"]
        ]
        # Each summary made as its tuple, in ProviderSummary's field order: the named
        # tuple's own constructor is a Python call per provider (a quarter of this
        # conversion, measured on 50 summaries).
        summaries = {
            uuid: _new_tuple(ProviderSummary, (
                uuid,
                summary.get("root_provider_uuid") or uuid,
                summary.get("parent_provider_uuid"),
                summary.get("traits", []),
                {rc: (r["used"], r["capacity"]) for rc, r in summary["resources"].items()},
            ))
            for uuid, summary in body["provider_summaries"].items()
        }
        return Candidates(requests_, summaries, body.get("moorage_explanation"))

    # -- allocations (the scheduler's claims) ----------------------------------------
    def allocations(self, consumer_uuid: str
                    ) -> tuple[dict[str, dict[str, int]], int | None]:
        """What a consumer holds ({provider: {class: amount}}) and its generation
        (None when the consumer holds nothing: a new consumer)."""
        body: ConsumerAllocations = self.request("GET", f"/allocations/{consumer_uuid}",
                                                  microversion=CLAIM_MICROVERSION)
        held = {rp: {rc: int(n) for rc, n in alloc["resources"].items()}
                for rp, alloc in body["allocations"].items()}
        generation = body.get("consumer_generation")
        return held, (int(generation) if held and generation is not None else None)

    def claim(self, consumer_uuid: str, allocation_request: Mapping[str, Mapping[str, int]],
              project_id: str, user_id: str, consumer_generation: int | None) -> bool:
        """Replace what an instance holds with ``allocation_request`` (PUT
        /allocations/{consumer} at 1.38). False when placement refuses with 409: the
        resources are no longer free, or the consumer's generation moved."""
        try:
            self.request("PUT", f"/allocations/{consumer_uuid}", microversion=CLAIM_MICROVERSION,
                         json=_claim_body(allocation_request, project_id, user_id,
                                          consumer_generation))
        except PlacementError as exc:
            if exc.status == 409:
                return False
            raise
        return True

    def claim_new(self, consumer_uuid: str,
                  allocation_request: Mapping[str, Mapping[str, int]], project_id: str,
                  user_id: str) -> bool | None:
        """``claim`` for a consumer believed to hold nothing (consumer_generation null):
        one request instead of two. None when placement says the consumer exists (its
        generation must be read and the claim made with it); False when the resources
        are no longer free."""
        return self.claim_at(consumer_uuid, allocation_request, project_id, user_id, None)

    def claim_at(self, consumer_uuid: str,
                 allocation_request: Mapping[str, Mapping[str, int]], project_id: str,
                 user_id: str, consumer_generation: int | None) -> bool | None:
        """``claim`` for a consumer believed to be at ``consumer_generation`` (None: to
        hold nothing). None when placement says it is not (nothing changed: read its
        generation and claim again); False when the resources are no longer free
        (what the consumer held, it still holds)."""
        try:
            self.request("PUT", f"/allocations/{consumer_uuid}", microversion=CLAIM_MICROVERSION,
                         json=_claim_body(allocation_request, project_id, user_id,
                                          consumer_generation))
        except PlacementError as exc:
            if exc.status != 409:
                raise
            return None if exc.concurrent_update else False
        return True

    def holding(self, consumer_uuid: str) -> Holding | None:
        """What a consumer holds, at which generation and for whom; None when it holds
        nothing."""
        body = self.request("GET", f"/allocations/{consumer_uuid}",
                            microversion=CLAIM_MICROVERSION)
        held = {rp: {rc: int(n) for rc, n in alloc["resources"].items()}
                for rp, alloc in body["allocations"].items()}
        if not held:
            return None
        return Holding(held, int(body["consumer_generation"]), str(body["project_id"]),
                       str(body["user_id"]))

    def clear_at(self, consumer_uuid: str, holding: Holding,
                 confirm: Callable[[], None] | None = None) -> bool:
        """Remove what a consumer holds if it is still at ``holding``'s generation (PUT
        /allocations/{consumer} with nothing, at 1.38); False when its generation
        moved (nothing changed). ``confirm``: the caller's check that the work is
        still its own, right before the write."""
        if confirm is not None:
            confirm()
        return self.claim_at(consumer_uuid, {}, holding.project_id, holding.user_id,
                             holding.generation) is not None

    def rewrite_at(self, consumer_uuid: str, holding: Holding,
                   confirm: Callable[[], None] | None = None) -> bool | None:
        """Write what a consumer holds again, unchanged, if it is still at ``holding``'s
        generation: the generation moves on, so a write someone prepared at it fails.
        None when its generation had moved already (nothing changed); False when
        placement refuses the same amounts (a provider's inventory shrank below
        them). ``confirm`` as for ``clear_at``."""
        if confirm is not None:
            confirm()
        return self.claim_at(consumer_uuid, holding.allocations, holding.project_id,
                             holding.user_id, holding.generation)

    def delete_allocations(self, consumer_uuid: str) -> None:
        """Remove everything a consumer holds; nothing held is fine too."""
        try:
            self.request("DELETE", f"/allocations/{consumer_uuid}")
        except PlacementError as exc:
            if exc.status != 404:
                raise

    def move_allocations(self, source_consumer: str, target_consumer: str,
                         project_id: str, user_id: str,
                         confirm: Callable[[], None] | None = None) -> bool:
        """Hand everything ``source_consumer`` holds to ``target_consumer`` in one
        POST /allocations (1.38), as a migration takes over its instance's allocations.
        False when either consumer's generation moved meanwhile (409); True also when
        the source holds nothing (then nothing moves). ``confirm``: the caller's check
        that the work is still its own, once the generations are read (a change made
        after it makes the move fail on them)."""
        held, source_generation = self.allocations(source_consumer)
        if not held:
            return True
        _, target_generation = self.allocations(target_consumer)
        if confirm is not None:
            confirm()
        body: dict[str, JSONValue] = {
            source_consumer: _claim_body({}, project_id, user_id, source_generation),
            target_consumer: _claim_body(held, project_id, user_id, target_generation),
        }
        try:
            self.request("POST", "/allocations", microversion=CLAIM_MICROVERSION, json=body)
        except PlacementError as exc:
            if exc.status == 409:
                return False
            raise
        return True


@dataclass(frozen=True)
class Holding:
    """What one consumer holds in placement, at which generation, for whom."""

    allocations: Mapping[str, Mapping[str, int]]
    generation: int
    project_id: str
    user_id: str


def _claim_body(allocation_request: Mapping[str, Mapping[str, int]], project_id: str,
                user_id: str, consumer_generation: int | None) -> dict[str, JSONValue]:
    """One consumer's claim as PUT and POST /allocations take it at 1.38."""
    return {
        "allocations": {rp: {"resources": dict(amounts)}
                        for rp, amounts in allocation_request.items()},
        "project_id": project_id,
        "user_id": user_id,
        "consumer_generation": consumer_generation,
        "consumer_type": CONSUMER_TYPE_INSTANCE,
    }


def _error_code(body: bytes) -> str | None:
    try:
        code = orjson.loads(body)["errors"][0].get("code")
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError):
        return None
    return str(code) if code else None


def _error_detail(body: bytes) -> str:
    """The API's error detail on one line (placement's body is
    {"errors": [{"title", "detail"}]}; the detail repeats the title's explanation
    in a first paragraph)."""
    try:
        error = orjson.loads(body)["errors"][0]
        detail = str(error.get("detail") or error.get("title") or "")
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError):
        detail = body[:200].decode(errors="replace")
    paragraphs = [p for p in detail.split("\n\n") if p.strip()]
    text = paragraphs[-1] if paragraphs else detail
    return " ".join(text.split()) or "(no detail)"
