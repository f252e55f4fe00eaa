"""One-call reads for handlers: a flavor, an image, the hosts, the availability zones.

Each opens its own read transaction; NotFound (naming the id) when there is none.
"""

from __future__ import annotations

from collections.abc import Mapping

from moorage.api.state import ApiState
from moorage.api.storage import aggregates as aggregate_store
from moorage.api.storage import flavors as flavor_store
from moorage.api.storage import images as image_store
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.scheduler.types import HostInfo


def flavor(state: ApiState, flavor_id: str) -> Flavor:
    with state.database.reader() as conn:
        return flavor_store.load_flavor(conn, flavor_id).flavor


def image(state: ApiState, image_id: str) -> Image:
    with state.database.reader() as conn:
        return image_store.load_image(conn, image_id)


def hosts(state: ApiState) -> Mapping[str, HostInfo]:
    """Every compute host the API knows, with whether it is up and enabled."""
    return state.catalog.hosts()


def availability_zones(state: ApiState) -> frozenset[str]:
    """The zones aggregates define (nova lists only those with hosts; we accept any
    zone an aggregate names)."""
    with state.database.reader() as conn:
        return frozenset(a.availability_zone for a in aggregate_store.list_aggregates(conn)
                         if a.availability_zone)
