"""The compute API's view of the image service's rows (``moorage.image.schema``):
``ImageRecord``, the ``moorage.model.Image`` the scheduler and the agents use, plus who
owns it and who may see it. Deleted images are not found. An image whose formats are
not set yet (a glance image just created) reads as the model's defaults (qcow2, bare);
the legacy ``/v2.1/images`` writes (``create_image``, ``update_image``) keep every
other image service column at its default."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.api.errors import NotFound
from moorage.api.storage import catalog_state
from moorage.api.storage.schema import image_members, images
from moorage.db.clock import utcnow
from moorage.image import store as image_service_store
from moorage.image.records import UNSET_CONTAINER_FORMAT, UNSET_DISK_FORMAT
from moorage.model.image import Image

VISIBILITIES = ("public", "private", "shared", "community")
# The image service's columns a legacy create sets: an image without data, bootable.
_LEGACY_DEFAULTS = {"status": "active", "protected": False, "os_hidden": False,
                    "deleted": False}


@dataclass(frozen=True)
class ImageRecord:
    image: Image
    owner: str | None
    visibility: str = "public"
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None
    # The projects a shared image is shared with (whatever they answered, as glance
    # shows it to them).
    members: frozenset[str] = frozenset()
    # Not to be deleted (set through the image service).
    protected: bool = False
    # The image service's state: "active" once it has data (or made here, without).
    status: str = "active"

    @property
    def id(self) -> str:
        return self.image.id

    def visible_to(self, project_id: str | None, is_admin: bool) -> bool:
        return is_admin or self.visibility in ("public", "community") or (
            self.owner is not None and self.owner == project_id) or (
            self.visibility == "shared" and project_id in self.members)


def _record(row: sa.Row[tuple[object, ...]], members: frozenset[str] = frozenset()
            ) -> ImageRecord:
    m = row._mapping
    # Stored properties were validated when written; Image.create canonicalizes again.
    image = Image.create(m["id"], m["name"] or "", m["disk_format"] or UNSET_DISK_FORMAT,
                         m["container_format"] or UNSET_CONTAINER_FORMAT,
                         json.loads(m["properties"]), min_disk_gb=m["min_disk"],
                         min_ram_mb=m["min_ram"], size=m["size"])
    return ImageRecord(image=image, owner=m["owner"], visibility=m["visibility"],
                       created_at=m["created_at"], updated_at=m["updated_at"],
                       members=members, protected=bool(m["protected"]),
                       status=m["status"])


def _values(record: ImageRecord) -> dict[str, object]:
    image = record.image
    return {
        "name": image.name, "disk_format": image.disk_format,
        "container_format": image.container_format, "min_disk": image.min_disk_gb,
        "min_ram": image.min_ram_mb, "owner": record.owner, "visibility": record.visibility,
        "properties": json.dumps(image.properties.raw(), sort_keys=True),
    }


def create_image(conn: Connection, record: ImageRecord) -> ImageRecord:
    catalog_state.bump(conn, definitions=True)
    now = utcnow()
    conn.execute(images.insert().values(id=record.id, created_at=now, updated_at=now,
                                        **_LEGACY_DEFAULTS, **_values(record)))
    return load_image_record(conn, record.id)


def exists(conn: Connection, image_id: str) -> bool:
    """Whether an image has (or had: ids of deleted images are not reused) this id."""
    return conn.execute(sa.select(images.c.id).where(images.c.id == image_id)).first() is not None


def load_image_record(conn: Connection, image_id: str) -> ImageRecord:
    row = conn.execute(sa.select(images).where(images.c.id == image_id,
                                               images.c.deleted == sa.false())).first()
    if row is None:
        raise NotFound(f"Image {image_id} could not be found.")
    members: frozenset[str] = frozenset()
    if row._mapping["visibility"] == "shared":
        # SELECT member FROM image_members WHERE image_id = :id
        members = frozenset(conn.execute(sa.select(image_members.c.member).where(
            image_members.c.image_id == image_id)).scalars())
    return _record(row, members)


def load_image(conn: Connection, image_id: str) -> Image:
    """The image with id ``image_id``; NotFound naming it."""
    return load_image_record(conn, image_id).image


def list_images(conn: Connection) -> list[ImageRecord]:
    rows = conn.execute(sa.select(images).where(images.c.deleted == sa.false())
                        .order_by(images.c.created_at, images.c.id))
    return [_record(row) for row in rows]


def update_image(conn: Connection, record: ImageRecord) -> ImageRecord:
    catalog_state.bump(conn, definitions=True)
    conn.execute(images.update().where(images.c.id == record.id, images.c.deleted == sa.false())
                 .values(updated_at=utcnow(), **_values(record)))
    return load_image_record(conn, record.id)


def delete_image(conn: Connection, image_id: str) -> None:
    """Delete as the image service does (``moorage.image.store.mark_deleted``): the row
    stays, deleted, so its id is never reused; NotFound when there is none."""
    if not image_service_store.mark_deleted(conn, image_id, _bump_definitions):
        raise NotFound(f"Image {image_id} could not be found.")


def _bump_definitions(conn: Connection) -> None:
    catalog_state.bump(conn, definitions=True)
