"""Glance v2's image routes.

    GET    /v2/images        list, filtered, sorted and paged (moorage.image.query)
    POST   /v2/images        create (queued, no data): glance's attributes and any
                             string property as a top-level key
    GET    /v2/images/{id}   show
    PATCH  /v2/images/{id}   a JSON patch (moorage.image.patch)
    DELETE /v2/images/{id}   soft delete, and its data; a protected image is a 403
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from urllib.parse import urlencode

from moorage.db.clock import utcnow
from moorage.image import attributes, patch, query, store
from moorage.image.common import (
    authorize_visibility,
    refuse_foreign_owner,
    visible_image,
)
from moorage.image.errors import Conflict, Forbidden, NotFound, image_not_found
from moorage.image.http import Answer, ImageRequest, json_response, no_content
from moorage.image.records import ImageStatus, StoredImage, Visibility
from moorage.image.views import image_path, image_view
from moorage.jsonvalue import JSONValue

# Formats an image keeps once it has data (glance: only a queued image's change).
FROZEN_WITH_DATA = ("disk_format", "container_format")


def list_images(req: ImageRequest) -> Answer:
    req.authorize("get_images")
    wanted = query.parse(req.query)
    listing = store.Listing(req.caller.project_id, req.caller.is_admin, wanted.visibility,
                            wanted.member_status)
    with req.service.database.reader() as conn:
        found = store.select(conn, [store.listable(listing), *store.query_clauses(wanted)],
                             wanted.tags)
    found = query.ordered(query.with_properties(found, wanted.properties), wanted.sort)
    chosen, more = query.page(found, wanted.marker, wanted.limit)
    body: dict[str, JSONValue] = {"images": [image_view(i) for i in chosen],
                                  "first": "/v2/images", "schema": "/v2/schemas/images"}
    if more and chosen:
        kept = [(k, v) for k, v in req.query if k != "marker"]
        body["next"] = "/v2/images?" + urlencode([*kept, ("marker", chosen[-1].id)])
    return json_response(body)


def _admit(req: ImageRequest, image: StoredImage, before: StoredImage | None) -> None:
    reason = req.service.admit(image.as_model(), None if before is None else before.as_model())
    if reason is not None:
        raise Conflict(reason)


def create_image(req: ImageRequest) -> Answer:
    req.authorize("add_image")
    body = req.json_object()
    for name in body:
        if name != "id":
            attributes.refuse_unwritable(name)
    image_id = attributes.image_id(body["id"]) if "id" in body else str(uuid.uuid4())
    now = utcnow()
    base = StoredImage(id=image_id, name=None, status=ImageStatus.QUEUED,
                       visibility=Visibility.SHARED, owner=req.caller.project_id,
                       disk_format=None, container_format=None, min_disk=0, min_ram=0,
                       protected=False, os_hidden=False, created_at=now, updated_at=now)
    image = attributes.apply(base, {k: v for k, v in body.items() if k != "id"})
    refuse_foreign_owner(req, image.owner)
    authorize_visibility(req, image.visibility, image.owner)
    _admit(req, image, None)
    with req.service.database.writer() as writer:
        if store.id_taken(writer.conn, image_id):
            raise Conflict(f"Image with identifier {image_id} already exists!")
        store.insert(writer.conn, image, req.service.changed)
    return json_response(image_view(image), status=201,
                         headers=[("Location", req.absolute_url(image_path(image_id)))])


def show_image(req: ImageRequest) -> Answer:
    req.authorize("get_image")
    return json_response(image_view(visible_image(req)))


def update_image(req: ImageRequest) -> Answer:
    changes = patch.parse(req.json(patch.MEDIA_TYPES), req.media_type)
    image = visible_image(req)
    req.authorize("modify_image", owner=image.owner)
    edited = patch.apply(attributes.attributes_of(image), changes,
                         strict_add=req.media_type == patch.PATCH_V20)
    updated = attributes.apply(image, edited)
    if image.status is not ImageStatus.QUEUED:
        for name in FROZEN_WITH_DATA:
            if getattr(updated, name) != getattr(image, name):
                raise Forbidden(f"Attribute {name} can be only replaced for a queued image.")
    if updated.owner != image.owner:
        refuse_foreign_owner(req, updated.owner)
    if updated.visibility is not image.visibility:
        authorize_visibility(req, updated.visibility, image.owner)
    _admit(req, updated, image)
    with req.service.database.writer() as writer:
        if not store.save(writer.conn, updated, req.service.changed):
            raise image_not_found(image.id)
        saved = store.load(writer.conn, image.id)
    return json_response(image_view(saved or updated))


def delete_image(req: ImageRequest) -> Answer:
    image = visible_image(req)
    req.authorize("delete_image", owner=image.owner)
    if image.protected:
        raise Forbidden(f"Image {image.id} is protected and cannot be deleted.")
    with req.service.database.writer() as writer:
        if not store.mark_deleted(writer.conn, image.id, req.service.changed):
            raise image_not_found(image.id)
    req.service.files.delete(image.id)
    return no_content()


def add_tag(req: ImageRequest) -> Answer:
    image = visible_image(req)
    req.authorize("modify_image", owner=image.owner)
    tagged = attributes.apply(image, {**image.properties,
                                      "tags": [*image.tags, req.params["tag"]]})
    with req.service.database.writer() as writer:
        if not store.save(writer.conn, tagged, req.service.changed):
            raise image_not_found(image.id)
    return no_content()


def delete_tag(req: ImageRequest) -> Answer:
    image = visible_image(req)
    req.authorize("modify_image", owner=image.owner)
    tag = req.params["tag"]
    if tag not in image.tags:
        raise NotFound(f"Tag {tag} not found.")
    untagged = replace(image, tags=tuple(t for t in image.tags if t != tag))
    with req.service.database.writer() as writer:
        if not store.save(writer.conn, untagged, req.service.changed):
            raise image_not_found(image.id)
    return no_content()

