"""POST /reshaper (1.30+): move inventory and allocations between providers at once.

The body names the whole new inventory of some providers (with the generation
the client saw) and the whole new allocations of some consumers, in the shape of
POST /allocations of the same microversion (``mappings`` from 1.34,
``consumer_type`` from 1.38).
"""

from __future__ import annotations

from typing import TypedDict

from moorage.placement.api import allocation, inventory
from moorage.placement.api.schema import UUID_PATTERN, Body
from moorage.placement.http import BadRequest, Conflict, Request, Response, since
from moorage.placement.microversion import Version
from moorage.placement.storage import allocations, reshaper
from moorage.placement.storage.inventories import InventoryInUse
from moorage.placement.storage.reshaper import ProviderInventories

RESHAPE = "placement:reshaper:reshape"


class Reshape(TypedDict):
    """The whole new inventories of some providers, and allocations of some consumers."""

    inventories: dict[str, inventory.ProviderInventories]
    allocations: dict[str, allocation.ConsumerClaim]


def _body(version: Version) -> Body[Reshape]:
    return Body({
        "type": "object",
        "properties": {
            "inventories": {
                "type": "object",
                "patternProperties": {UUID_PATTERN: inventory.PUT_ALL.schema},
                # Without inventories there is nothing to reshape.
                "minProperties": 1,
                "additionalProperties": False,
            },
            "allocations": allocation.consumers_schema(version, min_consumers=0),
        },
        "required": ["inventories", "allocations"],
        "additionalProperties": False,
    }, Reshape)


SCHEMAS = allocation.by_version(_body, [(1, 30), (1, 34), (1, 38)])


@since("1.30")
def reshape(req: Request) -> Response:
    req.require_json_content()
    req.authorize(RESHAPE)
    data = req.json_body(SCHEMAS[req.version])
    wanted = [
        ProviderInventories(
            provider_uuid=rp_uuid,
            generation=body["resource_provider_generation"],
            inventories={rc: inventory.inventory_from(values)
                         for rc, values in body["inventories"].items()},
        )
        for rp_uuid, body in data["inventories"].items()
    ]
    claims = [
        allocation.claim_from(req, consumer_uuid, body)
        for consumer_uuid, body in data["allocations"].items()
    ]
    try:
        with req.service.db.writer() as w:
            reshaper.reshape(w, wanted, claims)
    except allocations.UnknownResourceClass as exc:
        raise BadRequest(f"malformed reshaper data: {exc.message}") from None
    except (InventoryInUse, allocations.ConcurrentClaim) as exc:
        raise Conflict(f"update conflict: {exc.message}", code=exc.code) from None
    except allocations.InvalidAllocation as exc:
        raise Conflict(f"Unable to allocate inventory: {exc.message}") from None
    return req.empty_response(204)
