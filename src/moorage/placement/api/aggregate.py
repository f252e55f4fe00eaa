"""/resource_providers/{uuid}/aggregates (microversion 1.1+).

Before 1.19 the body is a bare list of uuids and setting aggregates leaves the
provider's generation alone; from 1.19 both bodies carry the generation, a stale
one is a 409, and every PUT increments it (even when nothing changed), as upstream.
"""

from __future__ import annotations

from typing import TypedDict

from moorage.jsonvalue import JSONValue
from moorage.placement import errors
from moorage.placement.api.common import GENERATION_CONFLICT, provider_or_404
from moorage.placement.api.schema import Body, Schema
from moorage.placement.http import BadRequest, Conflict, NotFound, Request, Response, since
from moorage.placement.storage import aggregates as aggregate_store
from moorage.placement.storage import providers

GENERATION_VERSION = (1, 19)

_UUIDS: Schema = {
    "type": "array", "items": {"type": "string", "format": "uuid"}, "uniqueItems": True}


class ProviderAggregates(TypedDict):
    aggregates: list[str]
    resource_provider_generation: int


PUT_1_1 = Body(_UUIDS, list[str])
PUT_1_19 = Body({
    "type": "object",
    "properties": {"aggregates": _UUIDS, "resource_provider_generation": {"type": "integer"}},
    "required": ["aggregates", "resource_provider_generation"],
    "additionalProperties": False,
}, ProviderAggregates)

# The aggregate uuid column is 36 characters wide: the 8-4-4-4-12 spelling.
MAX_UUID_LENGTH = 36


def _body(req: Request, uuids: list[str], generation: int) -> dict[str, JSONValue]:
    body: dict[str, JSONValue] = {"aggregates": uuids}
    if req.version >= GENERATION_VERSION:
        body["resource_provider_generation"] = generation
    return body


@since("1.1")
def list_aggregates(req: Request) -> Response:
    req.require_accept_json()
    req.authorize("placement:resource_providers:aggregates:list")
    with req.service.index.fresh() as index:
        record = provider_or_404(index, req.path_params["uuid"])
        body = _body(req, sorted(record.aggregates), record.generation)
    # Associations carry no meaningful time, so last-modified is now (as upstream).
    return req.json_response(body)


@since("1.1")
def set_aggregates(req: Request) -> Response:
    req.require_json_content()
    req.authorize("placement:resource_providers:aggregates:update")
    uuid = req.path_params["uuid"]
    # Upstream looks the provider up before it validates the body.
    with req.service.index.fresh() as index:
        provider_or_404(index, uuid)
    with_generation = req.version >= GENERATION_VERSION
    expected: int | None = None
    if with_generation:
        data = req.json_body(PUT_1_19)
        uuids, expected = data["aggregates"], data["resource_provider_generation"]
    else:
        uuids = req.json_body(PUT_1_1)
    too_long = [u for u in uuids if len(u) > MAX_UUID_LENGTH]
    if too_long:
        raise BadRequest(
            f"Aggregate uuid {too_long[0]!r} is not in the 8-4-4-4-12 form "
            "(at most 36 characters)"
        )
    with req.service.db.writer() as w:
        provider = providers.find(w.conn, uuid, lock=True)
        if provider is None:
            raise NotFound(f"No resource provider with uuid {uuid} found")
        generation = provider.generation
        if with_generation and generation != expected:
            raise Conflict(GENERATION_CONFLICT, code=errors.CONCURRENT_UPDATE)
        aggregate_store.set_for_provider(w, provider.id, uuids)
        if with_generation:
            generation = providers.bump_generation(w, provider)
    return req.json_response(_body(req, uuids, generation))
