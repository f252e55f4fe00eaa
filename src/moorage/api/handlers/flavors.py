"""Flavors and their extra specs, in nova's shapes (``/flavors``,
``/flavors/{id}/os-extra_specs``). Extra specs are validated when written
(``moorage.api.extra_specs``); a bad one is a 400 and nothing is stored."""

from __future__ import annotations

import re
import uuid as uuidlib
from typing import Any

from moorage.api import lookups
from moorage.api.errors import BadRequest, NotFound
from moorage.api.extra_specs import InvalidExtraSpec, validate_extra_spec, validate_extra_specs
from moorage.api.handlers.common import boolean, integer, string
from moorage.api.http import ApiRequest, json_response, no_content
from moorage.api.storage import flavors as store
from moorage.api.storage.flavors import FlavorRecord
from moorage.model.flavor import Flavor
from moorage.web import Response

# Nova's flavor id: printable, no leading or trailing space.
FLAVOR_ID = re.compile(r"^(?! )[a-zA-Z0-9. _-]+(?<! )$")


def _brief(req: ApiRequest, record: FlavorRecord) -> dict[str, Any]:
    return {"id": record.id, "name": record.flavor.name,
            "description": record.description, "links": req.link("flavors", record.id)}


def _detail(req: ApiRequest, record: FlavorRecord) -> dict[str, Any]:
    flavor = record.flavor
    return {
        **_brief(req, record),
        "ram": flavor.memory_mb,
        "vcpus": flavor.vcpus,
        "disk": flavor.root_gb,
        "OS-FLV-EXT-DATA:ephemeral": flavor.ephemeral_gb,
        "swap": flavor.swap_mb,
        "rxtx_factor": 1.0,
        "OS-FLV-DISABLED:disabled": False,
        "os-flavor-access:is_public": record.is_public,
        "extra_specs": dict(flavor.extra_specs),
    }


def _list(req: ApiRequest) -> list[FlavorRecord]:
    min_ram = req.query.get("minRam")
    min_disk = req.query.get("minDisk")
    query = {"minRam": min_ram, "minDisk": min_disk}
    with req.state.database.reader() as conn:
        return store.list_flavors(
            conn, include_private=req.context.is_admin,
            min_ram=integer(query, "minRam", default=0) if min_ram is not None else None,
            min_disk=integer(query, "minDisk", default=0) if min_disk is not None else None)


def list_flavors(req: ApiRequest) -> Response:
    """List flavors (id, name, links)."""
    return json_response({"flavors": [_brief(req, r) for r in _list(req)]})


def list_flavors_detail(req: ApiRequest) -> Response:
    """List flavors with their sizes and extra specs."""
    return json_response({"flavors": [_detail(req, r) for r in _list(req)]})


def show_flavor(req: ApiRequest) -> Response:
    """Show one flavor with its extra specs."""
    return json_response({"flavor": _detail(req, _visible_flavor(req))})


def _visible_flavor(req: ApiRequest) -> FlavorRecord:
    """The flavor of the path, if the caller may see it (a private flavor is an
    administrator's): 404 as for no such flavor otherwise."""
    with req.state.database.reader() as conn:
        record = store.load_flavor(conn, req.params["flavor_id"])
    if not lookups.flavor_visible(record, req.context):
        raise NotFound(f"Flavor {record.id} could not be found.")
    return record


def _flavor_id(body: dict[str, Any]) -> str:
    value = body.get("id")
    if value is None:
        return str(uuidlib.uuid4())
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not 1 <= len(value) <= 255 or not FLAVOR_ID.match(value):
        raise BadRequest(f"Invalid input for field 'id': {value!r}; allowed: 1 to 255 of "
                         "letters, digits, '.', ' ', '_' and '-', not starting or ending "
                         "with a space.")
    return value


def create_flavor(req: ApiRequest) -> Response:
    """Create a flavor (admin). Extra specs may be given inline and are validated."""
    req.authorize("os_compute_api:os-flavor-manage:create")
    body = req.json_object("flavor")
    name = string(body, "name", required=True)
    assert name is not None
    specs = body.get("extra_specs") or {}
    if not isinstance(specs, dict):
        raise BadRequest("Invalid input for field 'extra_specs': must be an object.")
    try:
        valid_specs = validate_extra_specs(specs)
    except InvalidExtraSpec as exc:
        raise BadRequest(f"Invalid extra spec {exc}") from None
    flavor = Flavor(
        name=name.strip(),
        vcpus=integer(body, "vcpus", minimum=1),
        memory_mb=integer(body, "ram", minimum=1),
        root_gb=integer(body, "disk"),
        ephemeral_gb=integer(body, "OS-FLV-EXT-DATA:ephemeral", default=0),
        swap_mb=integer({"swap": body.get("swap") or 0}, "swap"),
        extra_specs=valid_specs,
    )
    is_public = boolean(body.get("os-flavor-access:is_public", True),
                        "os-flavor-access:is_public")
    description = string(body, "description", max_length=65535, allow_none=True)
    record = FlavorRecord(id=_flavor_id(body), flavor=flavor, is_public=is_public,
                          description=description)
    with req.state.database.writer() as writer:
        record = store.create_flavor(writer.conn, record)
    return json_response({"flavor": _detail(req, record)})


def delete_flavor(req: ApiRequest) -> Response:
    """Delete a flavor (admin). Servers keep their snapshot of it."""
    req.authorize("os_compute_api:os-flavor-manage:delete")
    with req.state.database.writer() as writer:
        store.delete_flavor(writer.conn, req.params["flavor_id"])
    return no_content(202)


# -- os-extra_specs ------------------------------------------------------------


def list_extra_specs(req: ApiRequest) -> Response:
    """List a flavor's extra specs."""
    req.authorize("os_compute_api:os-flavor-extra-specs:index")
    record = _visible_flavor(req)
    return json_response({"extra_specs": dict(record.flavor.extra_specs)})


def show_extra_spec(req: ApiRequest) -> Response:
    """Show one extra spec of a flavor."""
    req.authorize("os_compute_api:os-flavor-extra-specs:show")
    key = req.params["key"]
    record = _visible_flavor(req)
    if key not in record.flavor.extra_specs:
        raise NotFound(f"Flavor {record.id} has no extra spec with key {key}.")
    return json_response({key: record.flavor.extra_specs[key]})


def create_extra_specs(req: ApiRequest) -> Response:
    """Create or replace extra specs (admin): {"extra_specs": {key: value}}."""
    req.authorize("os_compute_api:os-flavor-extra-specs:create")
    specs = req.json_object("extra_specs")
    if not specs:
        raise BadRequest("'extra_specs' must name at least one extra spec.")
    try:
        valid = validate_extra_specs(specs)
    except InvalidExtraSpec as exc:
        raise BadRequest(f"Invalid extra spec {exc}") from None
    with req.state.database.writer() as writer:
        store.set_extra_specs(writer.conn, req.params["flavor_id"], valid)
    return json_response({"extra_specs": valid})


def update_extra_spec(req: ApiRequest) -> Response:
    """Set one extra spec (admin): {key: value}, the key the same as in the URL."""
    req.authorize("os_compute_api:os-flavor-extra-specs:update")
    key = req.params["key"]
    body = req.json_object()
    if list(body) != [key]:
        raise BadRequest(f"The body must be exactly {{{key!r}: value}}, the key of the URL.")
    try:
        value = validate_extra_spec(key, body[key])
    except InvalidExtraSpec as exc:
        raise BadRequest(f"Invalid extra spec {exc}") from None
    with req.state.database.writer() as writer:
        store.set_extra_specs(writer.conn, req.params["flavor_id"], {key: value})
    return json_response({key: value})


def delete_extra_spec(req: ApiRequest) -> Response:
    """Delete one extra spec (admin); 200 with no body, as nova."""
    req.authorize("os_compute_api:os-flavor-extra-specs:delete")
    with req.state.database.writer() as writer:
        store.delete_extra_spec(writer.conn, req.params["flavor_id"], req.params["key"])
    return no_content(200)
