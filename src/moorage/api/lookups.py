"""One-call reads for handlers: a flavor, an image, the hosts, the availability zones.

NotFound (naming the id) when there is none. Flavors and images come from
``Definitions``, a cache every boot reads through: a flavor or image write bumps the
catalog's definitions version, and the cache is dropped whenever it moved (one small
read per lookup), so a lookup never answers from before the last committed change.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from moorage.api.storage import aggregates as aggregate_store
from moorage.api.storage import flavors as flavor_store
from moorage.api.storage import images as image_store
from moorage.api.storage.catalog_state import VERSIONS_SQL, CatalogVersions
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.placement.storage.database import Database
from moorage.scheduler.types import HostInfo

if TYPE_CHECKING:
    from moorage.api.state import ApiState


class Definitions:
    """Flavors and images by id, remembered until one of them changes."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._version: int | None = None
        self._flavors: dict[str, Flavor] = {}
        self._images: dict[str, Image] = {}
        self._lock = threading.Lock()

    def refresh(self) -> None:
        """Forget what was remembered if a flavor or an image changed since (one
        small read). A caller that looks up several definitions at once calls this
        first and then passes ``refreshed=True`` (a boot: its flavor and its image)."""
        version = CatalogVersions.of(self._database.poll(VERSIONS_SQL)).definitions
        if version != self._version:
            with self._lock:
                self._flavors, self._images = {}, {}
                self._version = version

    def flavor(self, flavor_id: str, *, refreshed: bool = False) -> Flavor:
        if not refreshed:
            self.refresh()
        found = self._flavors.get(flavor_id)
        if found is None:
            with self._database.reader() as conn:
                found = flavor_store.load_flavor(conn, flavor_id).flavor
            self._flavors[flavor_id] = found
        return found

    def image(self, image_id: str, *, refreshed: bool = False) -> Image:
        if not refreshed:
            self.refresh()
        found = self._images.get(image_id)
        if found is None:
            with self._database.reader() as conn:
                found = image_store.load_image(conn, image_id)
            self._images[image_id] = found
        return found


def flavor(state: ApiState, flavor_id: str, *, refreshed: bool = False) -> Flavor:
    return state.definitions.flavor(flavor_id, refreshed=refreshed)


def image(state: ApiState, image_id: str, *, refreshed: bool = False) -> Image:
    return state.definitions.image(image_id, refreshed=refreshed)


def hosts(state: ApiState) -> Mapping[str, HostInfo]:
    """Every compute host the API knows, with whether it is up and enabled."""
    return state.catalog.hosts()


def availability_zones(state: ApiState) -> frozenset[str]:
    """The zones aggregates define (nova lists only those with hosts; we accept any
    zone an aggregate names)."""
    with state.database.reader() as conn:
        return frozenset(a.availability_zone for a in aggregate_store.list_aggregates(conn)
                         if a.availability_zone)
