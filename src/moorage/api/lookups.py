"""One-call reads for handlers: a flavor, an image, the hosts, the availability zones.

NotFound (naming the id) when there is none, or when the caller may not see it: a
private flavor is an administrator's and its projects', a private image its owner
project's (and an administrator's), as upstream decides on every path, show and boot, rebuild and
resize alike. Flavors and images come from
``Definitions``, a cache every boot reads through: a flavor or image write bumps the
catalog's definitions version, and the cache is dropped whenever it moved (one small
read per lookup), so a lookup never answers from before the last committed change.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from moorage.api.catalog import ApiCatalog
from moorage.api.errors import NotFound
from moorage.api.storage import aggregates as aggregate_store
from moorage.api.storage import flavors as flavor_store
from moorage.api.storage import images as image_store
from moorage.api.storage.catalog_state import VERSIONS_SQL, CatalogVersions
from moorage.api.storage.flavors import FlavorRecord
from moorage.api.storage.images import ImageRecord
from moorage.db.database import Database
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.scheduler.types import HostInfo

if TYPE_CHECKING:
    from moorage.api.context import RequestContext
    from moorage.api.glance_images import GlanceImages


class Definitions:
    """Flavors and images by id (with who may see them), remembered until one of them
    changes."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._version: int | None = None
        self._flavors: dict[str, FlavorRecord] = {}
        self._images: dict[str, ImageRecord] = {}
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

    def flavor(self, flavor_id: str, *, refreshed: bool = False) -> FlavorRecord:
        if not refreshed:
            self.refresh()
        found = self._flavors.get(flavor_id)
        if found is None:
            with self._database.reader() as conn:
                found = flavor_store.load_flavor(conn, flavor_id)
            self._flavors[flavor_id] = found
        return found

    def image(self, image_id: str, *, refreshed: bool = False) -> ImageRecord:
        if not refreshed:
            self.refresh()
        found = self._images.get(image_id)
        if found is None:
            with self._database.reader() as conn:
                found = image_store.load_image_record(conn, image_id)
            self._images[image_id] = found
        return found


class Sources(Protocol):
    """What the lookups read of the API's state (``ApiState``, which holds the
    ``Definitions`` cache and so sits above this module)."""

    @property
    def definitions(self) -> Definitions: ...

    @property
    def catalog(self) -> ApiCatalog: ...

    @property
    def database(self) -> Database: ...

    @property
    def glance(self) -> GlanceImages | None: ...


def flavor(state: Sources, flavor_id: str, context: RequestContext, *,
           refreshed: bool = False) -> Flavor:
    """The flavor, if ``context`` may use it; NotFound (the same as no such flavor, so
    a private flavor's existence is not disclosed) otherwise."""
    record = state.definitions.flavor(flavor_id, refreshed=refreshed)
    if not flavor_visible(record, context):
        raise NotFound(f"Flavor {flavor_id} could not be found.")
    return record.flavor


def image(state: Sources, image_id: str, context: RequestContext, *,
          refreshed: bool = False) -> Image:
    """The image, if ``context`` may use it; NotFound as for no such image otherwise.
    With an existing Glance (``[api] image_service = glance``), Glance's answer to the
    caller's token."""
    if state.glance is not None:
        return state.glance.image(image_id, context)
    record = state.definitions.image(image_id, refreshed=refreshed)
    if not record.visible_to(context.project_id, context.is_admin):
        raise NotFound(f"Image {image_id} could not be found.")
    return record.image


def flavor_visible(record: FlavorRecord, context: RequestContext) -> bool:
    """Upstream's rule: public flavors for everyone, a private one for administrators
    and the projects it is shared with (os-flavor-access)."""
    return (record.is_public or context.is_admin
            or (context.project_id is not None and context.project_id in record.projects))


def hosts(state: Sources) -> Mapping[str, HostInfo]:
    """Every compute host the API knows, with whether it is up and enabled."""
    return state.catalog.hosts()


def availability_zones(state: Sources) -> frozenset[str]:
    """The zones aggregates define (nova lists only those with hosts; we accept any
    zone an aggregate names)."""
    with state.database.reader() as conn:
        return frozenset(a.availability_zone for a in aggregate_store.list_aggregates(conn)
                         if a.availability_zone)
