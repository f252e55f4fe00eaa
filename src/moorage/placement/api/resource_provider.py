"""/resource_providers and /resource_providers/{uuid}."""

from __future__ import annotations

import functools
import uuid as uuidlib
from typing import NotRequired, TypedDict

from moorage.jsonvalue import JSONValue
from moorage.placement.api import params
from moorage.placement.api.common import latest
from moorage.placement.api.schema import Body, Schema, canonical_uuid, validator
from moorage.placement.engine.index import ProviderIndex
from moorage.placement.engine.provider_filter import ProviderFilter, matching_providers
from moorage.placement.http import (
    BadRequest,
    JSONPieces,
    NotFound,
    Request,
    Response,
    json_fragment,
)
from moorage.placement.microversion import Version
from moorage.placement.storage import providers
from moorage.placement.storage.records import ProviderRecord


class NewProvider(TypedDict):
    """POST /resource_providers (a parent from 1.14)."""

    name: str
    uuid: NotRequired[str]
    parent_provider_uuid: NotRequired[str | None]


class ProviderUpdate(TypedDict):
    """PUT /resource_providers/{uuid} (a parent from 1.14)."""

    name: str
    parent_provider_uuid: NotRequired[str | None]


def _provider_body(properties: Schema) -> Schema:
    return {"type": "object", "properties": properties, "required": ["name"],
            "additionalProperties": False}


_NAME: Schema = {"type": "string", "maxLength": 200}
_UUID: Schema = {"type": "string", "format": "uuid"}
_PARENT: Schema = {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]}
POST = Body(_provider_body({"name": _NAME, "uuid": _UUID}), NewProvider)
POST_1_14 = Body(_provider_body({"name": _NAME, "uuid": _UUID, "parent_provider_uuid": _PARENT}),
                 NewProvider)
PUT = Body(_provider_body({"name": _NAME}), ProviderUpdate)
PUT_1_14 = Body(_provider_body({"name": _NAME, "parent_provider_uuid": _PARENT}), ProviderUpdate)

# GET /resource_providers: the filters each microversion added.
_LIST: Schema = {"name": {"type": "string"}, "uuid": {"type": "string", "format": "uuid"}}
_LIST_1_3: Schema = {**_LIST, "member_of": {"type": "string"}}
_LIST_1_4: Schema = {**_LIST_1_3, "resources": {"type": "string"}}
_LIST_1_14: Schema = {**_LIST_1_4, "in_tree": {"type": "string", "format": "uuid"}}
_LIST_1_18: Schema = {**_LIST_1_14, "required": {"type": "string"}}
LIST_SCHEMAS = tuple(
    (version, validator({"type": "object", "properties": filters, "additionalProperties": False}))
    for version, filters in (((1, 18), _LIST_1_18), ((1, 14), _LIST_1_14), ((1, 4), _LIST_1_4),
                             ((1, 3), _LIST_1_3), ((1, 0), _LIST))
)


class _Changes(TypedDict, total=False):
    """The keyword arguments of ``providers.update`` a PUT asks for."""

    name: str | None
    parent_uuid: str | None


def provider_url(uuid: str) -> str:
    return f"/resource_providers/{uuid}"


def serialize(req: Request, index: ProviderIndex, record: ProviderRecord
              ) -> dict[str, JSONValue]:
    """A provider as the requested microversion shows it."""
    return _representation(req.version, record, *_tree_uuids(index, record))


def _tree_uuids(index: ProviderIndex, record: ProviderRecord) -> tuple[str | None, str]:
    """The uuids of ``record``'s parent (None for a root) and root."""
    parent = index.by_id.get(record.parent_id) if record.parent_id else None
    root = index.by_id.get(record.root_id)
    return parent.uuid if parent else None, root.uuid if root else record.uuid


@functools.cache
def _fragment_key(version: Version) -> tuple[object, ...]:
    """The cache key of a provider's rendering at ``version``: one tuple per shape,
    shared by every record's cache rather than one more object per provider."""
    return ("provider", version >= (1, 1), version >= (1, 6), version >= (1, 11),
            version >= (1, 14))


def serialized(version: Version, index: ProviderIndex, record: ProviderRecord) -> bytes:
    """``serialize`` as JSON, cached on the (immutable) record: listings of thousands of
    providers render each one once per snapshot."""
    key = _fragment_key(version)
    cached = record.fragments.get(key)
    if cached is None:
        cached = record.fragments[key] = json_fragment(
            _representation(version, record, *_tree_uuids(index, record)))
    return cached


def _representation(version: Version, record: ProviderRecord, parent_uuid: str | None,
                    root_uuid: str) -> dict[str, JSONValue]:
    url = provider_url(record.uuid)
    rels = ["inventories", "usages"]
    if version >= (1, 1):
        rels.append("aggregates")
    if version >= (1, 6):
        rels.append("traits")
    if version >= (1, 11):
        rels.append("allocations")
    data: dict[str, JSONValue] = {
        "uuid": record.uuid,
        "name": record.name,
        "generation": record.generation,
        "links": [{"rel": "self", "href": url}] + [
            {"rel": rel, "href": f"{url}/{rel}"} for rel in rels
        ],
    }
    if version >= (1, 14):
        data["parent_provider_uuid"] = parent_uuid
        data["root_provider_uuid"] = root_uuid
    return data


def _fresh_record(req: Request, uuid: str) -> tuple[ProviderIndex, ProviderRecord]:
    index = req.service.index
    index.catch_up()
    record = index.by_uuid.get(uuid)
    if record is None:
        raise NotFound(f"No resource provider with uuid {uuid} found")
    return index, record


def create_provider(req: Request) -> Response:
    req.require_json_content()
    req.authorize("placement:resource_providers:create")
    data = req.json_body(POST_1_14 if req.version >= (1, 14) else POST)
    uuid = canonical_uuid(data["uuid"]) if data.get("uuid") else str(uuidlib.uuid4())
    with req.service.db.writer() as w:
        new = providers.create(w, uuid, data["name"], data.get("parent_provider_uuid"))
    location = [("location", provider_url(uuid))]
    if req.version < (1, 20):
        return req.empty_response(201, location)
    # Answered from what was written: the index catches up at its next read.
    row = new.row
    record = ProviderRecord(row.id, row.uuid, row.name, row.generation, row.parent_id,
                            row.root_id, created_at=w.now, updated_at=w.now)
    body = _representation(req.version, record, new.parent_uuid, new.root_uuid)
    return req.json_response(body, headers=location, last_modified=w.now)


def show_provider(req: Request) -> Response:
    req.require_accept_json()
    req.authorize("placement:resource_providers:show")
    with req.service.index.fresh() as index:
        uuid = req.path_params["uuid"]
        record = index.by_uuid.get(uuid)
        if record is None:
            raise NotFound(f"No resource provider with uuid {uuid} found")
        body = serialize(req, index, record)
    return req.json_response(body, last_modified=record.updated_at or record.created_at)


def update_provider(req: Request) -> Response:
    uuid = req.path_params["uuid"]
    req.require_json_content()
    req.authorize("placement:resource_providers:update")
    with req.service.db.writer() as w:
        provider = providers.get(w.conn, uuid, lock=True)
        data = req.json_body(PUT_1_14 if req.version >= (1, 14) else PUT)
        changes: _Changes = {"name": data.get("name")}
        if "parent_provider_uuid" in data:
            changes["parent_uuid"] = data["parent_provider_uuid"]
        providers.update(w, provider, allow_reparenting=req.version >= (1, 37), **changes)
    index, record = _fresh_record(req, uuid)
    return req.json_response(serialize(req, index, record), last_modified=record.updated_at)


def delete_provider(req: Request) -> Response:
    req.authorize("placement:resource_providers:delete")
    with req.service.db.writer() as w:
        providers.delete(w, req.path_params["uuid"])
    return req.empty_response(204)


def _provider_filter(req: Request) -> ProviderFilter:
    """The filters of GET /resource_providers, validated for the microversion."""
    for version, schema in LIST_SCHEMAS:
        if req.version >= version:
            req.validate_query(schema)
            break
    query = req.query_dict()
    member_of: list[frozenset[str]] = []
    forbidden_aggs: frozenset[str] = frozenset()
    if "member_of" in query:
        member_of, forbidden_aggs = params.parse_member_of_params(
            req.query_all("member_of"), "",
            allow_multiple=req.version >= (1, 24), allow_forbidden=req.version >= (1, 32),
        )
    required: params.AnyOfTraits = []
    forbidden: frozenset[str] = frozenset()
    if "required" in query:
        required, forbidden = params.parse_required_params(
            req.query_all("required"),
            allow_forbidden=req.version >= (1, 22), allow_any=req.version >= (1, 39),
        )
    resources = params.parse_resources(query["resources"]) if "resources" in query else {}
    return ProviderFilter(
        name=query.get("name"), uuid=query.get("uuid"), in_tree=query.get("in_tree"),
        member_of=member_of, forbidden_aggregates=forbidden_aggs,
        required_traits=required, forbidden_traits=forbidden, resources=resources,
    )


def list_providers(req: Request) -> Response:
    req.require_accept_json()
    req.authorize("placement:resource_providers:list")
    wanted = _provider_filter(req)
    with req.service.index.fresh() as index:
        names = {t for any_of in wanted.required_traits for t in any_of} | wanted.forbidden_traits
        unknown_traits = sorted(names - index.catalog.trait_ids.keys())
        if unknown_traits:
            raise BadRequest(
                'Invalid trait(s) in "required" parameter: No such trait(s): '
                f"{', '.join(unknown_traits)}."
            )
        unknown_rcs = [rc for rc in wanted.resources if rc not in index.catalog.rc_ids]
        if unknown_rcs:
            raise BadRequest(
                "Invalid resource class in resources parameter: No such resource class "
                f"{unknown_rcs[0]}."
            )
        found = matching_providers(index, wanted)
        # Rendered while the index is held; sent (streamed if large) after.
        body = JSONPieces(b'{"resource_providers":[').listing(
            [serialized(req.version, index, record) for record in found]).add(b"]}")
        last_modified = latest(r.updated_at or r.created_at for r in found)
    return req.json_response(body, last_modified=last_modified)
