"""/allocations, /allocations/{consumer_uuid} and /resource_providers/{uuid}/allocations.

The body of a claim changed shape over the microversions:
- < 1.12: a list of ``{"resource_provider": {"uuid"}, "resources"}``;
- 1.8: ``project_id`` and ``user_id`` required (before, the configured
  ``[placement] incomplete_consumer_*`` ids are recorded);
- 1.12: a dict keyed by provider uuid, like GET shows it;
- 1.13: POST /allocations writes several consumers at once (all or nothing);
- 1.28: ``consumer_generation`` required (null for a new consumer); an empty
  ``allocations`` removes the consumer's allocations;
- 1.34: ``mappings`` accepted (and not stored, as upstream);
- 1.38: ``consumer_type`` required.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NotRequired, TypedDict, TypeVar

from moorage.jsonvalue import JSONValue
from moorage.placement.api.params import is_uuid_like
from moorage.placement.api.schema import (
    CONSUMER_TYPE_PATTERN,
    GROUP_SUFFIX_1_33,
    RC_PATTERN,
    UUID_PATTERN,
    Body,
    Schema,
    canonical_uuid,
)
from moorage.placement.http import BadRequest, Conflict, NotFound, Request, Response, since
from moorage.placement.microversion import VERSIONS, Version
from moorage.placement.storage import allocations, providers
from moorage.placement.storage.allocations import Claim
from moorage.placement.storage.consumers import UNKNOWN_TYPE

LIST = "placement:allocations:list"
MANAGE = "placement:allocations:manage"
UPDATE = "placement:allocations:update"
DELETE = "placement:allocations:delete"
PROVIDER_LIST = "placement:resource_providers:allocations:list"

T = TypeVar("T")


# -- request bodies ----------------------------------------------------------------------
class ProviderRef(TypedDict):
    uuid: str


class ListedAllocation(TypedDict):
    resource_provider: ProviderRef
    resources: dict[str, int]


class ListedClaim(TypedDict):
    """One consumer's claim before 1.12: a list; its owner required from 1.8."""

    allocations: list[ListedAllocation]
    project_id: NotRequired[str]
    user_id: NotRequired[str]


class ProviderAllocation(TypedDict):
    generation: NotRequired[int]
    resources: dict[str, int]


class ConsumerClaim(TypedDict):
    """One consumer's claim from 1.12, keyed by provider uuid."""

    allocations: dict[str, ProviderAllocation]
    project_id: str
    user_id: str
    consumer_generation: NotRequired[int | None]  # required from 1.28
    # From 1.34; accepted, not stored. As upstream's schema, a key that is not a group's
    # suffix may hold anything.
    mappings: NotRequired[dict[str, JSONValue]]
    consumer_type: NotRequired[str]  # required from 1.38


_AMOUNTS: Schema = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {RC_PATTERN: {"type": "integer", "minimum": 1}},
    "additionalProperties": False,
}
_EXTERNAL_ID: Schema = {"type": "string", "minLength": 1, "maxLength": 255}


def _listed_schema(*, with_owner: bool) -> Schema:
    """The list-shaped claim (before 1.12); ``with_owner``: from 1.8."""
    properties: Schema = {
        "allocations": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "resource_provider": {
                        "type": "object",
                        "properties": {"uuid": {"type": "string", "format": "uuid"}},
                        "additionalProperties": False,
                        "required": ["uuid"],
                    },
                    "resources": _AMOUNTS,
                },
                "required": ["resource_provider", "resources"],
                "additionalProperties": False,
            },
        },
    }
    required = ["allocations"]
    if with_owner:
        properties.update(project_id=_EXTERNAL_ID, user_id=_EXTERNAL_ID)
        required += ["project_id", "user_id"]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


LISTED = Body(_listed_schema(with_owner=False), ListedClaim)
LISTED_1_8 = Body(_listed_schema(with_owner=True), ListedClaim)
_MAPPINGS: Schema = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {
        GROUP_SUFFIX_1_33: {
            "type": "array", "minItems": 1, "items": {"type": "string", "format": "uuid"},
        },
    },
}


def consumer_schema(version: Version, *, allow_empty: bool) -> Schema:
    """The dict-shaped (1.12+) claim of one consumer, as ``version`` accepts it."""
    properties: Schema = {
        "allocations": {
            "type": "object",
            "minProperties": 0 if allow_empty else 1,
            "patternProperties": {
                UUID_PATTERN: {
                    "type": "object",
                    "properties": {"generation": {"type": "integer"}, "resources": _AMOUNTS},
                    "required": ["resources"],
                    "additionalProperties": False,
                },
            },
            "additionalProperties": False,
        },
        "project_id": _EXTERNAL_ID,
        "user_id": _EXTERNAL_ID,
    }
    required = ["allocations", "project_id", "user_id"]
    if version >= (1, 28):
        properties["consumer_generation"] = {"type": ["integer", "null"]}
        required.append("consumer_generation")
    if version >= (1, 34):
        properties["mappings"] = _MAPPINGS
    if version >= (1, 38):
        properties["consumer_type"] = {
            "type": "string", "pattern": CONSUMER_TYPE_PATTERN, "minLength": 1, "maxLength": 255,
        }
        required.append("consumer_type")
    return {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "required": required,
    }


def consumers_schema(version: Version, *, min_consumers: int) -> Schema:
    """Claims of several consumers keyed by consumer uuid (POST /allocations, reshaper)."""
    return {
        "type": "object",
        "minProperties": min_consumers,
        "additionalProperties": False,
        "patternProperties": {UUID_PATTERN: consumer_schema(version, allow_empty=True)},
    }


def by_version(
    build: Callable[[Version], Body[T]], changes: Iterable[tuple[int, int]]
) -> dict[Version, Body[T]]:
    """A body for every microversion from the first of ``changes`` on, compiling one
    per version at which the schema changes."""
    changed = set(changes)
    made: dict[Version, Body[T]] = {}
    current: Body[T] | None = None
    for version in VERSIONS:
        if version in changed:
            current = build(version)
        if current is not None:
            made[version] = current
    return made


# PUT /allocations/{consumer_uuid} from 1.12 (before: LISTED, LISTED_1_8).
PUT_SCHEMAS = by_version(
    lambda v: Body(consumer_schema(v, allow_empty=v >= (1, 28)), ConsumerClaim),
    [(1, 12), (1, 28), (1, 34), (1, 38)],
)
POST_SCHEMAS = by_version(
    lambda v: Body(consumers_schema(v, min_consumers=1), dict[str, ConsumerClaim]),
    [(1, 13), (1, 28), (1, 34), (1, 38)],
)


def claim_from(req: Request, consumer_uuid: str, data: ConsumerClaim) -> Claim:
    """The claim of one consumer from its validated (1.12+) body."""
    return Claim(
        consumer_uuid=consumer_uuid,
        project_id=data["project_id"],
        user_id=data["user_id"],
        resources={rp_uuid: item["resources"] for rp_uuid, item in data["allocations"].items()},
        check_generation=req.version >= (1, 28),
        expected_generation=data.get("consumer_generation"),
        consumer_type=data.get("consumer_type"),
    )


def _listed_claim(req: Request, consumer_uuid: str, data: ListedClaim) -> Claim:
    """The claim of one consumer from its validated list-shaped body (before 1.12).
    Before 1.8 it names no owner: the configured ``incomplete_consumer_*`` ids are
    recorded."""
    # A provider listed twice keeps its last entry, as upstream.
    resources = {item["resource_provider"]["uuid"]: item["resources"]
                 for item in data["allocations"]}
    conf = req.service.conf.placement
    return Claim(
        consumer_uuid=consumer_uuid,
        project_id=data.get("project_id", conf.incomplete_consumer_project_id),
        user_id=data.get("user_id", conf.incomplete_consumer_user_id),
        resources=resources,
    )


# -- writes ------------------------------------------------------------------------------------
def _claim(req: Request, claims: list[Claim], unknown_class_prefix: str) -> Response:
    """Write the claims, with the error texts upstream gives PUT and POST."""
    try:
        with req.service.db.writer() as w:
            allocations.replace(w, claims)
        req.service.index.written(w.written())
    except allocations.UnknownResourceClass as exc:
        raise BadRequest(f"{unknown_class_prefix}{exc.message}") from None
    except allocations.InvalidAllocation as exc:
        raise Conflict(f"Unable to allocate inventory: {exc.message}") from None
    except allocations.ConcurrentClaim as exc:
        raise Conflict(
            f"Inventory and/or allocations changed while attempting to allocate: {exc.message}",
            code=exc.code,
        ) from None
    return req.empty_response(204)


def set_consumer_allocations(req: Request) -> Response:
    """PUT /allocations/{consumer_uuid}: replace what one consumer holds."""
    req.require_json_content()
    req.authorize(UPDATE)
    consumer_uuid = req.path_params["consumer_uuid"]
    if not is_uuid_like(consumer_uuid):
        raise BadRequest(f"Malformed consumer_uuid: {consumer_uuid}")
    consumer_uuid = canonical_uuid(consumer_uuid)
    if req.version < (1, 12):
        listed = req.json_body(LISTED if req.version < (1, 8) else LISTED_1_8)
        claim = _listed_claim(req, consumer_uuid, listed)
    else:
        claim = claim_from(req, consumer_uuid, req.json_body(PUT_SCHEMAS[req.version]))
    return _claim(req, [claim], f"Unable to allocate inventory for consumer {consumer_uuid}: ")


@since("1.13")
def set_allocations(req: Request) -> Response:
    """POST /allocations: replace what several consumers hold, all or nothing."""
    req.require_json_content()
    req.authorize(MANAGE)
    data = req.json_body(POST_SCHEMAS[req.version])
    claims = [claim_from(req, consumer_uuid, body) for consumer_uuid, body in data.items()]
    return _claim(req, claims, "Unable to allocate inventory ")


def delete_consumer_allocations(req: Request) -> Response:
    """DELETE /allocations/{consumer_uuid}: remove the consumer and all it holds."""
    req.authorize(DELETE)
    consumer_uuid = req.path_params["consumer_uuid"]
    with req.service.db.writer() as w:
        deleted = allocations.delete_consumer(w, consumer_uuid)
    req.service.index.written(w.written())
    if not deleted:
        raise NotFound(f"No allocations for consumer '{consumer_uuid}'")
    return req.empty_response(204)


# -- reads -------------------------------------------------------------------------------------
def list_consumer_allocations(req: Request) -> Response:
    """GET /allocations/{consumer_uuid}: what the consumer holds, by provider."""
    req.require_accept_json()
    req.authorize(LIST)
    with req.service.db.reader() as conn:
        held = allocations.for_consumer(conn, req.path_params["consumer_uuid"])
    if held is None:
        return req.json_response({"allocations": {}})
    body: dict[str, JSONValue] = {
        "allocations": {
            rp_uuid: {"generation": generation, "resources": amounts}
            for rp_uuid, (generation, amounts) in held.providers.items()
        },
    }
    if req.version >= (1, 12):
        body["project_id"] = held.project_id
        body["user_id"] = held.user_id
    if req.version >= (1, 28):
        body["consumer_generation"] = held.generation
    if req.version >= (1, 38):
        body["consumer_type"] = held.consumer_type or UNKNOWN_TYPE
    return req.json_response(body, last_modified=held.last_modified)


def list_provider_allocations(req: Request) -> Response:
    """GET /resource_providers/{uuid}/allocations: who holds what on one provider."""
    req.require_accept_json()
    req.authorize(PROVIDER_LIST)
    uuid = req.path_params["uuid"]
    with req.service.db.reader() as conn:
        provider = providers.find(conn, uuid)
        if provider is None:
            raise NotFound(
                f"Resource provider '{uuid}' not found: No resource provider with uuid {uuid} "
                "found"
            )
        held = allocations.for_provider(conn, provider.id)
    with_generation = req.version >= (1, 28)
    consumers: dict[str, JSONValue] = {}
    for consumer_uuid, (generation, amounts) in held.consumers.items():
        entry: dict[str, JSONValue] = {"resources": amounts}
        if with_generation:
            entry["consumer_generation"] = generation
        consumers[consumer_uuid] = entry
    body: dict[str, JSONValue] = {
        "allocations": consumers, "resource_provider_generation": provider.generation}
    return req.json_response(body, last_modified=held.last_modified)
