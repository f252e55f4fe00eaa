"""/traits, /traits/{name} and /resource_providers/{uuid}/traits (microversion 1.6+)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import jsonschema

from moorage.jsonvalue import JSONValue
from moorage.model.vocabulary import CUSTOM_PATTERN
from moorage.placement import errors
from moorage.placement.api.common import GENERATION_CONFLICT, latest
from moorage.placement.api.schema import Body, Schema, validator
from moorage.placement.http import (
    BadRequest,
    Conflict,
    NotFound,
    Request,
    Response,
    since,
)
from moorage.placement.storage import providers
from moorage.placement.storage import traits as trait_store
from moorage.placement.storage.database import Writer

_TRAIT: Schema = {"type": "string", "minLength": 1, "maxLength": 255}
CUSTOM_TRAIT = validator({**_TRAIT, "pattern": CUSTOM_PATTERN})


class ProviderTraits(TypedDict):
    traits: list[str]
    resource_provider_generation: int


SET_PROVIDER_TRAITS = Body({
    "type": "object",
    "properties": {
        "traits": {"type": "array", "items": _TRAIT},
        "resource_provider_generation": {"type": "integer"},
    },
    "required": ["traits", "resource_provider_generation"],
    "additionalProperties": False,
}, ProviderTraits)
LIST_QUERY = validator({
    "type": "object",
    "properties": {"name": {"type": "string"}, "associated": {"type": "string"}},
    "additionalProperties": False,
})


def trait_url(name: str) -> str:
    return f"/traits/{name}"


def _body(traits: Sequence[trait_store.Trait]) -> dict[str, list[str]]:
    return {"traits": sorted(t.name for t in traits)}


def _locked_provider(w: Writer, uuid: str) -> providers.ProviderRow:
    """The provider's row, locked until commit; 404 as upstream words it (no error code)."""
    provider = providers.find(w.conn, uuid, lock=True)
    if provider is None:
        raise NotFound(f"No resource provider with uuid {uuid} found")
    return provider


class _Filters(TypedDict, total=False):
    """The keyword arguments of ``traits.listing`` a query asks for."""

    names: list[str]
    prefix: str
    associated: bool


def _name_filter(value: str) -> _Filters:
    """``in:A,B`` or ``startswith:PREFIX`` as keyword arguments of ``traits.listing``.

    Any other operator filters nothing, as upstream.
    """
    op, sep, operand = value.partition(":")
    if not sep:
        raise BadRequest(
            "Badly formatted name parameter. Expected name query string parameter in form: "
            f'?name=[in|startswith]:[name1,name2|prefix]. Got: "{value}"'
        )
    if op == "in":
        return {"names": operand.split(",")}
    if op == "startswith":
        return {"prefix": operand}
    return {}


@since("1.6")
def list_traits(req: Request) -> Response:
    req.require_accept_json()
    req.authorize("placement:traits:list")
    req.validate_query(LIST_QUERY)
    query = req.query_dict()
    filters: _Filters = _name_filter(query["name"]) if "name" in query else {}
    if "associated" in query:
        associated = query["associated"].lower()
        if associated not in ("true", "false"):
            raise BadRequest('The query parameter "associated" only accepts "true" or "false"')
        filters["associated"] = associated == "true"
    with req.service.db.reader() as conn:
        found = trait_store.listing(conn, **filters)
    return req.json_response(_body(found), last_modified=latest(t.modified for t in found))


@since("1.6")
def show_trait(req: Request) -> Response:
    req.authorize("placement:traits:show")
    name = req.path_params["name"]
    created_at = None
    if req.version >= (1, 15):
        # The last-modified header is the trait's creation time: read its row.
        with req.service.db.reader() as conn:
            trait = trait_store.find(conn, name)
        found, created_at = trait is not None, trait.created_at if trait else None
    else:
        with req.service.index.fresh() as index:
            found = name in index.catalog.trait_ids
    if not found:
        raise NotFound(f"No such trait(s): {name}.")
    response = req.empty_response(204)
    req.add_cache_headers(response, created_at)
    return response


@since("1.6")
def put_trait(req: Request) -> Response:
    req.authorize("placement:traits:update")
    name = req.path_params["name"]
    try:
        CUSTOM_TRAIT.validate(name)
    except jsonschema.ValidationError:
        raise BadRequest(
            "The trait is invalid. A valid trait must be no longer than 255 characters, start "
            'with the prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"'
        ) from None
    with req.service.index.fresh() as index:
        known = name in index.catalog.trait_ids
    trait, created = None, False
    if not known:
        with req.service.db.writer() as w:
            trait, created = trait_store.ensure(w, name)
    elif req.version >= (1, 15):
        with req.service.db.reader() as conn:
            trait = trait_store.find(conn, name)
    response = req.empty_response(201 if created else 204, [("location", trait_url(name))])
    req.add_cache_headers(response, trait.created_at if trait else None)
    return response


@since("1.6")
def delete_trait(req: Request) -> Response:
    req.authorize("placement:traits:delete")
    with req.service.db.writer() as w:
        trait_store.delete(w, req.path_params["name"])
    return req.empty_response(204)


@since("1.6")
def list_provider_traits(req: Request) -> Response:
    req.require_accept_json()
    req.authorize("placement:resource_providers:traits:list")
    uuid = req.path_params["uuid"]
    with req.service.index.fresh() as index:
        record = index.by_uuid.get(uuid)
        if record is None:
            raise NotFound(
                f"No resource provider with uuid {uuid} found: No resource provider with "
                f"uuid {uuid} found"
            )
        names, generation = index.ordered_traits(record), record.generation
    body: dict[str, JSONValue] = {"traits": names, "resource_provider_generation": generation}
    last_modified = None
    if names and req.version >= (1, 15):
        with req.service.db.reader() as conn:
            last_modified = latest(t.modified for t in trait_store.listing(conn, names=names))
    return req.json_response(body, last_modified=last_modified)


@since("1.6")
def set_provider_traits(req: Request) -> Response:
    req.require_json_content()
    req.authorize("placement:resource_providers:traits:update")
    data = req.json_body(SET_PROVIDER_TRAITS)
    with req.service.db.writer() as w:
        provider = _locked_provider(w, req.path_params["uuid"])
        if provider.generation != data["resource_provider_generation"]:
            raise Conflict(GENERATION_CONFLICT, code=errors.CONCURRENT_UPDATE)
        traits, generation = trait_store.set_for_provider(w, provider, data["traits"])
    body: dict[str, JSONValue] = {
        "traits": [t.name for t in traits], "resource_provider_generation": generation}
    return req.json_response(body, last_modified=latest(t.modified for t in traits))


@since("1.6")
def delete_provider_traits(req: Request) -> Response:
    req.authorize("placement:resource_providers:traits:delete")
    with req.service.db.writer() as w:
        provider = _locked_provider(w, req.path_params["uuid"])
        trait_store.set_for_provider(w, provider, ())
    return req.empty_response(204)
