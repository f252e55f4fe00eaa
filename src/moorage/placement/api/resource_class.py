"""/resource_classes and /resource_classes/{name} (microversion 1.2+).

PUT renames a custom class up to 1.6; from 1.7 it is a bodiless create-or-verify.
"""

from __future__ import annotations

import datetime
from typing import TypedDict

import jsonschema

from moorage.db.clock import utcnow
from moorage.jsonvalue import JSONValue
from moorage.model.vocabulary import CUSTOM_PATTERN
from moorage.placement.api.schema import Body
from moorage.placement.http import BadRequest, NotFound, Request, Response, since
from moorage.placement.storage import resource_classes as rc_store


class Named(TypedDict):
    name: str


NAMED = Body({
    "type": "object",
    "properties": {"name": {"type": "string", "pattern": CUSTOM_PATTERN, "maxLength": 255}},
    "required": ["name"],
    "additionalProperties": False,
}, Named)


def class_url(name: str) -> str:
    return f"/resource_classes/{name}"


def _serialize(name: str) -> dict[str, JSONValue]:
    return {"name": name, "links": [{"rel": "self", "href": class_url(name)}]}


def _last_modified(rc: rc_store.ResourceClass) -> datetime.datetime:
    """A custom class's own time; for a standard class, which no one changes, now (as
    upstream intends)."""
    if rc.is_standard:
        return utcnow()
    return rc.updated_at or rc.created_at or utcnow()


@since("1.2")
def list_classes(req: Request) -> Response:
    req.require_accept_json()
    req.authorize("placement:resource_classes:list")
    with req.service.db.reader() as conn:
        found = rc_store.listing(conn)
    body = {"resource_classes": [_serialize(rc.name) for rc in found]}
    return req.json_response(body, last_modified=max(map(_last_modified, found), default=None))


@since("1.2")
def show_class(req: Request) -> Response:
    req.require_accept_json()
    req.authorize("placement:resource_classes:show")
    name = req.path_params["name"]
    last_modified = None
    if req.version >= (1, 15):
        # The last-modified header needs the class's timestamps: read its row.
        with req.service.db.reader() as conn:
            rc = rc_store.find(conn, name)
        found = rc is not None
        last_modified = _last_modified(rc) if rc else None
    else:
        with req.service.index.fresh() as index:
            found = name in index.catalog.rc_ids
    if not found:
        raise NotFound(f"No such resource class {name}.")
    return req.json_response(_serialize(name), last_modified=last_modified)


@since("1.2")
def create_class(req: Request) -> Response:
    req.require_json_content()
    req.authorize("placement:resource_classes:create")
    name = req.json_body(NAMED)["name"]
    with req.service.db.writer() as w:
        rc_store.create(w, name)
    return req.empty_response(201, [("location", class_url(name))])


@since("1.2")
def update_class(req: Request) -> Response:
    if req.version >= (1, 7):
        return _ensure_class(req)
    req.require_json_content()
    req.authorize("placement:resource_classes:update")
    new_name = req.json_body(NAMED)["name"]
    with req.service.db.writer() as w:
        rc_store.rename(w, req.path_params["name"], new_name)
    return req.json_response(_serialize(new_name))


def _ensure_class(req: Request) -> Response:
    """PUT from 1.7: 201 if this created the custom class, 204 if it existed."""
    req.authorize("placement:resource_classes:update")
    name = req.path_params["name"]
    try:
        NAMED.validator.validate({"name": name})
    except jsonschema.ValidationError as exc:
        raise BadRequest(f"JSON does not validate: {exc}") from None
    with req.service.index.fresh() as index:
        created = False
        known = name in index.catalog.rc_ids
    if not known:
        with req.service.db.writer() as w:
            created = rc_store.ensure(w, name)
    return req.empty_response(201 if created else 204, [("location", class_url(name))])


@since("1.2")
def delete_class(req: Request) -> Response:
    req.authorize("placement:resource_classes:delete")
    with req.service.db.writer() as w:
        rc_store.delete(w, req.path_params["name"])
    return req.empty_response(204)
