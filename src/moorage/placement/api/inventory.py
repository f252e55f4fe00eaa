"""/resource_providers/{uuid}/inventories and .../inventories/{resource_class}.

PUTs name the provider generation they were computed from and fail with 409
placement.concurrent_update when it moved; POST and DELETE take none, as
upstream. Every write increments the generation. Error texts are upstream's:
clients and operators match on them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NotRequired, TypedDict

from moorage.jsonvalue import JSONValue
from moorage.placement import errors
from moorage.placement.answers import InventoryJSON
from moorage.placement.api.common import provider_or_404
from moorage.placement.api.schema import RC_PATTERN, Body, Schema
from moorage.placement.http import (
    BadRequest,
    Conflict,
    NotFound,
    Request,
    Response,
    since,
)
from moorage.placement.storage import inventories, providers
from moorage.placement.storage.database import Writer
from moorage.placement.storage.providers import ProviderRow
from moorage.placement.storage.records import Inventory

MAX_INT = 0x7FFFFFFF
# Largest single-precision float: upstream's column type bounds allocation_ratio.
MAX_FLOAT = 3.40282e38



# An inventory as a request body gives it, in the shape placement answers with: the
# fields left out take their defaults (``inventory_from``).
InventoryFields = InventoryJSON


class InventoryRecord(InventoryFields):
    """One of the inventories of PUT .../inventories."""

    resource_provider_generation: NotRequired[int]


class InventoryUpdate(InventoryFields):
    """PUT .../inventories/{resource_class}."""

    resource_provider_generation: int


class NewInventory(InventoryFields):
    """POST .../inventories."""

    resource_provider_generation: NotRequired[int]
    resource_class: str


class ProviderInventories(TypedDict):
    """PUT .../inventories: all of a provider's inventories."""

    resource_provider_generation: int
    inventories: dict[str, InventoryRecord]


_FIELDS: Schema = {
    "resource_provider_generation": {"type": "integer"},
    "total": {"type": "integer", "maximum": MAX_INT, "minimum": 1},
    "reserved": {"type": "integer", "maximum": MAX_INT, "minimum": 0},
    "min_unit": {"type": "integer", "maximum": MAX_INT, "minimum": 1},
    "max_unit": {"type": "integer", "maximum": MAX_INT, "minimum": 1},
    "step_size": {"type": "integer", "maximum": MAX_INT, "minimum": 1},
    "allocation_ratio": {"type": "number", "maximum": MAX_FLOAT},
}
_ONE: Schema = {
    "type": "object",
    "properties": _FIELDS,
    "required": ["total", "resource_provider_generation"],
    "additionalProperties": False,
}
_POST: Schema = {
    **_ONE,
    "properties": {**_FIELDS, "resource_class": {"type": "string", "pattern": RC_PATTERN}},
    "required": ["total", "resource_class"],
}
_RECORD: Schema = {**_ONE, "required": ["total"]}
_ALL: Schema = {
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "inventories": {
            "type": "object",
            "patternProperties": {RC_PATTERN: _RECORD},
            # Upstream leaves other names unchecked here and fails on them later as
            # unknown classes; checking their values too turns a 500 into a 400.
            "additionalProperties": _RECORD,
        },
    },
    "required": ["resource_provider_generation", "inventories"],
    "additionalProperties": False,
}

PUT_ONE = Body(_ONE, InventoryUpdate)
POST = Body(_POST, NewInventory)
PUT_ALL = Body(_ALL, ProviderInventories)

LIST = "placement:resource_providers:inventories:list"
CREATE = "placement:resource_providers:inventories:create"
SHOW = "placement:resource_providers:inventories:show"
UPDATE = "placement:resource_providers:inventories:update"
DELETE = "placement:resource_providers:inventories:delete"


def inventory_from(data: InventoryFields) -> Inventory:
    """An inventory from validated request fields, with the defaults upstream gives
    the fields a client leaves out. (JSON Schema's integers include 1.0: int().)"""
    return Inventory(
        total=int(data["total"]),
        reserved=int(data.get("reserved", 0)),
        min_unit=int(data.get("min_unit", 1)),
        max_unit=int(data.get("max_unit", MAX_INT)),
        step_size=int(data.get("step_size", 1)),
        allocation_ratio=float(data.get("allocation_ratio", 1.0)),
    )


def serialize(inventory: Inventory) -> dict[str, int | float]:
    return inventory.fields()


def _check_capacity(req: Request, uuid: str, items: Iterable[tuple[str, Inventory]],
                    prefix: str) -> None:
    """400 for an inventory with nothing to allocate (reserved == total allowed from 1.26)."""
    strict = req.version < (1, 26)
    for resource_class, inventory in items:
        if inventory.capacity < 0 or (strict and inventory.capacity == 0):
            relation = "greater than or equal to" if strict else "greater than"
            raise BadRequest(
                f"{prefix}: Invalid inventory for '{resource_class}' on resource provider "
                f"'{uuid}'. The reserved value is {relation} total."
            )


def _locked_provider(w: Writer, uuid: str) -> ProviderRow:
    provider = providers.find(w.conn, uuid, lock=True)
    if provider is None:
        raise NotFound(f"No resource provider with uuid {uuid} found")
    return provider


def list_inventories(req: Request) -> Response:
    req.require_accept_json()
    req.authorize(LIST)
    with req.service.index.fresh() as index:
        record = provider_or_404(index, req.path_params["uuid"])
        body: dict[str, JSONValue] = {
            "resource_provider_generation": record.generation,
            "inventories": {rc: serialize(inv) for rc, inv in record.inventories.items()},
        }
        # Every inventory change bumps the generation and stamps the provider.
        modified = record.updated_at or record.created_at
    return req.json_response(body, last_modified=modified)


def show_inventory(req: Request) -> Response:
    req.require_accept_json()
    req.authorize(SHOW)
    uuid, resource_class = req.path_params["uuid"], req.path_params["resource_class"]
    with req.service.index.fresh() as index:
        record = provider_or_404(index, uuid)
        inventory = record.inventories.get(resource_class)
        if inventory is None:
            raise NotFound(f"No inventory of class {resource_class} for {uuid}")
        body = {**serialize(inventory), "resource_provider_generation": record.generation}
        modified = record.updated_at or record.created_at
    return req.json_response(body, last_modified=modified)


def create_inventory(req: Request) -> Response:
    req.require_json_content()
    req.authorize(CREATE)
    uuid = req.path_params["uuid"]
    prefix = f"Unable to create inventory for resource provider {uuid}"
    with req.service.db.writer() as w:
        provider = _locked_provider(w, uuid)
        data = req.json_body(POST)
        resource_class = data["resource_class"]
        # As upstream, a generation in the body is accepted and not compared.
        inventory = inventory_from(data)
        _check_capacity(req, uuid, [(resource_class, inventory)], prefix)
        try:
            generation = inventories.add(w, provider, resource_class, inventory)
        except inventories.UnknownResourceClass as exc:
            raise BadRequest(f"{prefix}: {exc.message}") from None
        except inventories.DuplicateInventory as exc:
            raise Conflict(f"Update conflict: {exc.message}", code=exc.code) from None
    location = f"/resource_providers/{uuid}/inventories/{resource_class}"
    return req.json_response(
        {**serialize(inventory), "resource_provider_generation": generation},
        status=201, headers=[("location", location)], last_modified=w.now,
    )


def update_inventory(req: Request) -> Response:
    req.require_json_content()
    req.authorize(UPDATE)
    uuid, resource_class = req.path_params["uuid"], req.path_params["resource_class"]
    with req.service.db.writer() as w:
        provider = _locked_provider(w, uuid)
        data = req.json_body(PUT_ONE)
        inventories.check_generation(provider, data["resource_provider_generation"])
        inventory = inventory_from(data)
        _check_capacity(req, uuid, [(resource_class, inventory)],
                        f"Unable to update inventory for resource provider {uuid}")
        try:
            generation = inventories.update(w, provider, resource_class, inventory)
        except inventories.UnknownResourceClass as exc:
            raise NotFound(exc.message) from None
        except inventories.NoInventory as exc:
            raise BadRequest(
                "No inventory record with resource class for resource provider "
                f"{uuid}: {exc.message}"
            ) from None
    return req.json_response(
        {**serialize(inventory), "resource_provider_generation": generation},
        last_modified=w.now,
    )


def set_inventories(req: Request) -> Response:
    req.require_json_content()
    req.authorize(UPDATE)
    uuid = req.path_params["uuid"]
    with req.service.db.writer() as w:
        provider = _locked_provider(w, uuid)
        data = req.json_body(PUT_ALL)
        inventories.check_generation(provider, data["resource_provider_generation"])
        wanted = {rc: inventory_from(values) for rc, values in data["inventories"].items()}
        _check_capacity(req, uuid, wanted.items(),
                        f"Unable to update inventory for resource provider {uuid}")
        try:
            generation = inventories.replace(w, provider, wanted)
        except inventories.UnknownResourceClass as exc:
            raise BadRequest(
                f"Unknown resource class in inventory for resource provider {uuid}: "
                f"{exc.message}"
            ) from None
        except inventories.InventoryInUse as exc:
            raise Conflict(f"update conflict: {exc.message}", code=exc.code) from None
    body: dict[str, JSONValue] = {
        "resource_provider_generation": generation,
        "inventories": {rc: serialize(inventory) for rc, inventory in wanted.items()},
    }
    return req.json_response(body, last_modified=w.now)


@since("1.5", status=405)
def delete_inventories(req: Request) -> Response:
    req.authorize(DELETE)
    with req.service.db.writer() as w:
        provider = _locked_provider(w, req.path_params["uuid"])
        inventories.replace(w, provider, {})
    return req.empty_response(204)


def delete_inventory(req: Request) -> Response:
    req.authorize(DELETE)
    uuid, resource_class = req.path_params["uuid"], req.path_params["resource_class"]
    with req.service.db.writer() as w:
        provider = _locked_provider(w, uuid)
        try:
            inventories.delete(w, provider, resource_class)
        except (inventories.UnknownResourceClass, inventories.NoInventory) as exc:
            raise NotFound(
                f"No inventory of class {resource_class} found for delete: {exc.message}"
            ) from None
        except inventories.InventoryInUse as exc:
            # Upstream gives this one conflict the concurrent-update code; kept for
            # clients that branch on it.
            raise Conflict(
                f"Unable to delete inventory of class {resource_class}: {exc.message}",
                code=errors.CONCURRENT_UPDATE,
            ) from None
    return req.empty_response(204)
