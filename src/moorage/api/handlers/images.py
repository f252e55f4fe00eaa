"""Moorage's own image routes under the compute API (``/v2.1/images``), kept beside the
image service (``/image``, glance v2) for the clients written against them. Reads
without ``Moorage-Additions: 1`` are nova's image proxy (``image_proxy``).

    POST  /v2.1/images       {"name", "disk_format", "container_format", "min_disk",
                              "min_ram", "visibility", "id"?, "properties": {...}}
    GET   /v2.1/images       {"images": [image, ...]}
    GET   /v2.1/images/{id}  image
    PATCH /v2.1/images/{id}  a JSON merge patch of the same fields; in "properties",
                             a null value removes the property
    DELETE /v2.1/images/{id}   as the image service deletes: soft, with its data

An image is shown flat, as glance shows it: its fields, ``properties`` (canonical
spellings), ``owner``, ``status`` (the image service's: queued until its data is
uploaded there; "active" for an image made here, without data).
Properties are validated when written: ``hw_*`` enums with upstream's aliases,
``trait:NAME`` = required with NAME an os-traits name or CUSTOM_*; a bad one is a 400
naming the property and the allowed values, and nothing is stored.

The answer to a create or change carries ``moorage:bootable``, how many enabled hosts
can boot the image (``image_admission``); with ``[api] refuse_unbootable_images`` an
image none can boot is a 409 and nothing is stored.
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import replace
from typing import Any

from moorage.api import image_admission, image_service
from moorage.api.errors import BadRequest, Conflict, Forbidden, NotFound
from moorage.api.handlers import image_proxy
from moorage.api.handlers.common import integer, string
from moorage.api.http import ApiRequest, json_response, no_content
from moorage.api.storage import images as store
from moorage.api.storage.images import VISIBILITIES, ImageRecord
from moorage.image.properties import check_properties
from moorage.model.image import Image, InvalidImageProperty
from moorage.web import Response


def _view(req: ApiRequest, record: ImageRecord) -> dict[str, Any]:
    image = record.image
    return {
        "id": image.id,
        "name": image.name,
        "status": record.status,
        "disk_format": image.disk_format,
        "container_format": image.container_format,
        "min_disk": image.min_disk_gb,
        "min_ram": image.min_ram_mb,
        "visibility": record.visibility,
        "owner": record.owner,
        "properties": image.properties.raw(),
        "created_at": record.created_at.isoformat() + "Z" if record.created_at else None,
        "updated_at": record.updated_at.isoformat() + "Z" if record.updated_at else None,
        "self": f"/v2.1/images/{image.id}",
        "links": req.link("images", image.id),
    }


def _properties(value: object) -> dict[str, str]:
    """Properties as strings, held to the image service's rules (``check_properties``)."""
    if not isinstance(value, dict):
        raise BadRequest("Invalid input for field 'properties': must be an object of "
                         "strings.")
    properties: dict[str, str] = {}
    for name, raw in value.items():
        if isinstance(raw, bool):
            raw = "true" if raw else "false"
        if not isinstance(raw, str | int | float):
            raise BadRequest(f"Invalid image property {name}: {raw!r} is not a string.")
        properties[name] = str(raw)
    try:
        check_properties(properties)
    except InvalidImageProperty as exc:
        raise BadRequest(f"Invalid image property {exc}") from None
    return properties


def _build(body: dict[str, Any], image_id: str) -> Image:
    """An image from request fields, validated (disk and container formats, properties)."""
    name = string(body, "name", required=True)
    assert name is not None
    try:
        return Image.create(
            image_id, name, str(body.get("disk_format") or "qcow2"),
            str(body.get("container_format") or "bare"),
            _properties(body.get("properties") or {}),
            min_disk_gb=integer(body, "min_disk", default=0),
            min_ram_mb=integer(body, "min_ram", default=0))
    except InvalidImageProperty as exc:
        raise BadRequest(f"Invalid image property {exc}") from None


def _visibility(req: ApiRequest, value: object) -> str:
    if value not in VISIBILITIES:
        raise BadRequest(f"Invalid input for field 'visibility': {value!r}; allowed: "
                         f"{', '.join(VISIBILITIES)}.")
    if value == "public":
        req.authorize("publicize_image")
    return str(value)


def _load_visible(req: ApiRequest) -> ImageRecord:
    image_id = req.params["image_id"]
    with req.state.database.reader() as conn:
        record = store.load_image_record(conn, image_id)
    if not record.visible_to(req.context.project_id, req.context.is_admin):
        raise NotFound(f"Image {image_id} could not be found.")
    return record


def create_image(req: ApiRequest) -> Response:
    """Register an image's metadata (no bytes). Public images are the admin's."""
    req.authorize("add_image")
    body = req.json_object()
    image_id = string(body, "id", max_length=36) or str(uuidlib.uuid4())
    image = _build(body, image_id)
    default_visibility = "public" if req.context.is_admin else "private"
    visibility = _visibility(req, body.get("visibility", default_visibility))
    record = ImageRecord(image=image, owner=req.context.project_id, visibility=visibility)
    with req.state.database.reader() as conn:
        if store.exists(conn, image_id):
            raise Conflict(f"Image with ID {image_id} already exists.")
    bootable = image_admission.admit(req.state, image, floor=req.floor())
    with req.state.database.writer() as writer:
        if store.exists(writer.conn, image_id):
            raise Conflict(f"Image with ID {image_id} already exists.")
        record = store.create_image(writer.conn, record)
    return json_response({**_view(req, record), image_admission.FIELD: bootable}, status=201,
                         headers=[("location", req.absolute_url(f"/v2.1/images/{image_id}"))])


def list_images(req: ApiRequest) -> Response:
    """List the images the caller may see: nova's proxy, or with Moorage's additions
    this module's view."""
    if not req.wants_additions:
        return image_proxy.index(req)
    req.authorize("get_images")
    with req.state.database.reader() as conn:
        records = store.list_images(conn)
    visible = [r for r in records if r.visible_to(req.context.project_id, req.context.is_admin)]
    return json_response({"images": [_view(req, r) for r in visible]})


def list_images_detail(req: ApiRequest) -> Response:
    """Nova's detailed list; with Moorage's additions, this module's list."""
    return image_proxy.detail(req) if not req.wants_additions else list_images(req)


def show_image(req: ApiRequest) -> Response:
    """Show an image: nova's proxy, or with Moorage's additions this module's view."""
    if not req.wants_additions:
        return image_proxy.show(req)
    req.authorize("get_image")
    return json_response(_view(req, _load_visible(req)))


def update_image(req: ApiRequest) -> Response:
    """Change an image with a JSON merge patch; properties set to null are removed."""
    record = _load_visible(req)
    req.authorize("modify_image", {"project_id": record.owner})
    patch = req.json_object()
    image = record.image
    properties: dict[str, Any] = image.properties.raw()
    changes = patch.get("properties")
    if changes is not None:
        if not isinstance(changes, dict):
            raise BadRequest("Invalid input for field 'properties': must be an object.")
        for name, value in changes.items():
            if value is None:
                properties.pop(name, None)
            else:
                properties[name] = value
    merged = {
        "name": patch.get("name", image.name),
        "disk_format": patch.get("disk_format", image.disk_format),
        "container_format": patch.get("container_format", image.container_format),
        "min_disk": patch.get("min_disk", image.min_disk_gb),
        "min_ram": patch.get("min_ram", image.min_ram_mb),
        "properties": properties,
    }
    updated = replace(record, image=_build(merged, image.id))
    if "visibility" in patch and patch["visibility"] != record.visibility:
        updated = replace(updated, visibility=_visibility(req, patch["visibility"]))
    bootable = image_admission.admit(req.state, updated.image, before=image,
                                     floor=req.floor())
    with req.state.database.writer() as writer:
        record = store.update_image(writer.conn, updated)
    return json_response({**_view(req, record), image_admission.FIELD: bootable})


def delete_image(req: ApiRequest) -> Response:
    """Delete an image and its data, as the image service does (a protected one is a
    403). Servers keep their snapshot of it."""
    record = _load_visible(req)
    req.authorize("delete_image", {"project_id": record.owner})
    if record.protected:
        raise Forbidden(f"Image {record.id} is protected and cannot be deleted.")
    with req.state.database.writer() as writer:
        store.delete_image(writer.conn, record.id)
    image_service.data_files(req.state.conf).delete(record.id)
    return no_content()
