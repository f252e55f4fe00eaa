"""Nova's image metadata proxy (``/images/{id}/metadata[/{key}]``) until microversion
2.39 removed it (404 from there, as nova's routes are): an image's properties, the
image service's (``moorage.image``), as nova's metadata. Nova asks glance with the
caller's token; here the same rows are read and written with the same rules.

    GET    /images/{id}/metadata         {"metadata": {key: value}}
    POST   /images/{id}/metadata         {"metadata": {...}} merged in; all of them back
    PUT    /images/{id}/metadata         {"metadata": {...}} replaces them; those back
    GET    /images/{id}/metadata/{key}   {"meta": {key: value}}
    PUT    /images/{id}/metadata/{key}   {"meta": {key: value}}, the URL's key
    DELETE /images/{id}/metadata/{key}   204

Reads need glance's ``get_image`` (anyone, by default), and an image the caller
cannot see is a 404. A write needs glance's ``modify_image`` (the
owner or an administrator: 403), keeps the image's properties within the caller's
``metadata_items`` quota (403, nova's "Image metadata limit exceeded"), holds each
property to the image service's rules (``moorage.image.attributes``: 400 or 403
naming it; the image's own attributes, such as ``name``, are not metadata: 400),
passes the image admission, and tells the compute API's image cache, as the image
service's PATCH does. Keys and values are checked by their schemas first
(``moorage.api.schemas.image_metadata``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from moorage.api import image_admission, image_service
from moorage.api.errors import ApiError, BadRequest, Forbidden, NotFound
from moorage.api.http import ApiRequest, json_response, no_content
from moorage.api.microversion import IMAGE_METADATA_REMOVED
from moorage.api.quotas import engine
from moorage.image import attributes, store
from moorage.image.errors import ImageError
from moorage.image.records import StoredImage
from moorage.web import Response

# The image's properties after a write, from those it has.
Change = Callable[[Mapping[str, str]], dict[str, str]]


def _refuse_removed(req: ApiRequest) -> None:
    """The routes are gone from 2.39: a 404 before anything is read."""
    if req.at(IMAGE_METADATA_REMOVED):
        raise NotFound("The resource could not be found.")


def _image(req: ApiRequest) -> StoredImage:
    """The image of the URL, if the caller may see it (and the route is there)."""
    _refuse_removed(req)
    req.authorize("get_image")
    with req.state.database.reader() as conn:
        image = store.load(conn, req.params["image_id"])
        if image is None or not store.visible(conn, image, req.context.project_id,
                                              req.context.is_admin):
            raise NotFound("Image not found.")
    return image


def _with_properties(image: StoredImage, properties: dict[str, str], limit: int
                     ) -> StoredImage:
    """``image`` carrying exactly ``properties``, checked as the image service checks
    them and against the metadata_items ``limit``."""
    for name in properties:
        if name in attributes.CORE:
            raise BadRequest(f"Invalid metadata key {name!r}: it is an attribute of the "
                             f"image, not a property; allowed: any key but "
                             f"{', '.join(attributes.CORE)}.")
    try:
        engine.check_metadata_items(limit, len(properties))
    except engine.OverQuota:
        raise Forbidden(f"Image metadata limit exceeded: {len(properties)} items; "
                        f"allowed: at most {limit} (the metadata_items quota).") from None
    try:
        return attributes.apply(image, properties)
    except ImageError as exc:
        raise ApiError(exc.status, exc.message) from None


def _write(req: ApiRequest, image: StoredImage, change: Change) -> StoredImage:
    """Store ``change`` of ``image``'s properties: checked and admitted as read, then
    applied again to the row as the write transaction finds it."""
    req.authorize("modify_image", {"project_id": image.owner})
    with req.state.database.reader() as conn:
        limit = engine.metadata_items_limit(conn, req.state.conf,
                                            req.context.project_id or "", req.context.user_id)
    updated = _with_properties(image, change(image.properties), limit)
    image_admission.admit(req.state, updated.as_model(), image.as_model(), req.floor())
    with req.state.database.writer() as writer:
        current = store.load(writer.conn, image.id)
        if current is None:
            raise NotFound("Image not found.")
        updated = _with_properties(current, change(current.properties), limit)
        store.save(writer.conn, updated, image_service.definitions_changed)
    return updated


def list_image_metadata(req: ApiRequest) -> Response:
    """An image's properties."""
    return json_response({"metadata": dict(_image(req).properties)})


def show_image_metadata_item(req: ApiRequest) -> Response:
    """One property of an image."""
    key = req.params["key"]
    properties = _image(req).properties
    if key not in properties:
        raise NotFound(f"Image metadata item {key!r} was not found.")
    return json_response({"meta": {key: properties[key]}})


def create_image_metadata(req: ApiRequest) -> Response:
    """Add or change the properties given, keeping the others; all of them back."""
    _refuse_removed(req)
    metadata = req.json_object("metadata")
    image = _write(req, _image(req), lambda properties: {**properties, **metadata})
    return json_response({"metadata": dict(image.properties)})


def replace_image_metadata(req: ApiRequest) -> Response:
    """Replace an image's properties with those given."""
    _refuse_removed(req)
    metadata = req.json_object("metadata")
    _write(req, _image(req), lambda properties: dict(metadata))
    return json_response({"metadata": metadata})


def update_image_metadata_item(req: ApiRequest) -> Response:
    """Create or replace one property; the body's key is the URL's."""
    _refuse_removed(req)
    key = req.params["key"]
    meta = req.json_object("meta")
    if key not in meta:
        raise BadRequest(f"Request body and URI mismatch: the URI names {key!r}, the "
                         f"body {', '.join(repr(k) for k in meta)}.")
    _write(req, _image(req), lambda properties: {**properties, **meta})
    return json_response({"meta": meta})


def delete_image_metadata_item(req: ApiRequest) -> Response:
    """Delete one property (204)."""
    key = req.params["key"]
    image = _image(req)
    if key not in image.properties:
        raise NotFound(f"Invalid metadata key {key!r}: the image has no such property.")

    def without(properties: Mapping[str, str]) -> dict[str, str]:
        if key not in properties:
            raise NotFound(f"Invalid metadata key {key!r}: the image has no such property.")
        return {k: v for k, v in properties.items() if k != key}

    _write(req, image, without)
    return no_content()
