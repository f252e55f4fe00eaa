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

import copy
from collections.abc import Callable, Iterable
from typing import Any

import jsonschema

from moorage.placement.api.params import is_uuid_like
from moorage.placement.api.schema import (
    CONSUMER_TYPE_PATTERN,
    GROUP_SUFFIX_1_33,
    RC_PATTERN,
    UUID_PATTERN,
    canonical_uuid,
    validator,
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

# -- request bodies ----------------------------------------------------------------------
_AMOUNTS = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {RC_PATTERN: {"type": "integer", "minimum": 1}},
    "additionalProperties": False,
}
_EXTERNAL_ID = {"type": "string", "minLength": 1, "maxLength": 255}
_LISTED: dict[str, Any] = {
    "type": "object",
    "properties": {
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
    },
    "required": ["allocations"],
    "additionalProperties": False,
}
_LISTED_1_8 = copy.deepcopy(_LISTED)
_LISTED_1_8["properties"].update(project_id=_EXTERNAL_ID, user_id=_EXTERNAL_ID)
_LISTED_1_8["required"] += ["project_id", "user_id"]
_MAPPINGS = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {
        GROUP_SUFFIX_1_33: {
            "type": "array", "minItems": 1, "items": {"type": "string", "format": "uuid"},
        },
    },
}


def consumer_schema(version: Version, *, allow_empty: bool) -> dict[str, Any]:
    """The dict-shaped (1.12+) claim of one consumer, as ``version`` accepts it."""
    properties: dict[str, Any] = {
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


def consumers_schema(version: Version, *, min_consumers: int) -> dict[str, Any]:
    """Claims of several consumers keyed by consumer uuid (POST /allocations, reshaper)."""
    return {
        "type": "object",
        "minProperties": min_consumers,
        "additionalProperties": False,
        "patternProperties": {UUID_PATTERN: consumer_schema(version, allow_empty=True)},
    }


def _put_schema(version: Version) -> dict[str, Any]:
    if version < (1, 8):
        return _LISTED
    if version < (1, 12):
        return _LISTED_1_8
    return consumer_schema(version, allow_empty=version >= (1, 28))


def by_version(
    build: Callable[[Version], dict[str, Any]], changes: Iterable[tuple[int, int]]
) -> dict[Version, jsonschema.protocols.Validator]:
    """A validator for every microversion from the first of ``changes`` on, compiling
    one per version at which the schema changes."""
    changed = set(changes)
    made: dict[Version, jsonschema.protocols.Validator] = {}
    current: jsonschema.protocols.Validator | None = None
    for version in VERSIONS:
        if version in changed:
            current = validator(build(version))
        if current is not None:
            made[version] = current
    return made


PUT_SCHEMAS = by_version(_put_schema, [(1, 0), (1, 8), (1, 12), (1, 28), (1, 34), (1, 38)])
POST_SCHEMAS = by_version(
    lambda v: consumers_schema(v, min_consumers=1), [(1, 13), (1, 28), (1, 34), (1, 38)]
)


def claim_from(req: Request, consumer_uuid: str, data: dict[str, Any]) -> Claim:
    """The claim of one consumer from its validated body (either shape)."""
    amounts = data["allocations"]
    if isinstance(amounts, list):
        # Before 1.12; a provider listed twice keeps its last entry, as upstream.
        resources = {item["resource_provider"]["uuid"]: item["resources"] for item in amounts}
    else:
        resources = {rp_uuid: item["resources"] for rp_uuid, item in amounts.items()}
    project_id, user_id = data.get("project_id"), data.get("user_id")
    if project_id is None or user_id is None:
        conf = req.service.conf.placement
        project_id = conf.incomplete_consumer_project_id
        user_id = conf.incomplete_consumer_user_id
    return Claim(
        consumer_uuid=consumer_uuid,
        project_id=project_id,
        user_id=user_id,
        resources=resources,
        check_generation=req.version >= (1, 28),
        expected_generation=data.get("consumer_generation"),
        consumer_type=data.get("consumer_type"),
    )


# -- writes ------------------------------------------------------------------------------------
def _claim(req: Request, claims: list[Claim], unknown_class_prefix: str) -> Response:
    """Write the claims, with the error texts upstream gives PUT and POST."""
    try:
        with req.service.db.writer() as w:
            allocations.replace(w, claims)
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
    data = req.json_body(PUT_SCHEMAS[req.version])
    claim = claim_from(req, consumer_uuid, data)
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
    body: dict[str, Any] = {
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
    consumers: dict[str, Any] = {}
    for consumer_uuid, (generation, amounts) in held.consumers.items():
        entry: dict[str, Any] = {"resources": amounts}
        if with_generation:
            entry["consumer_generation"] = generation
        consumers[consumer_uuid] = entry
    body = {"allocations": consumers, "resource_provider_generation": provider.generation}
    return req.json_response(body, last_modified=held.last_modified)
