"""An image as the image service holds it (glance's fields), and a member of a shared
image. Values, no SQL and no HTTP."""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from moorage.model.image import DEFAULT_CONTAINER_FORMAT, DEFAULT_DISK_FORMAT, Image

# What an image whose formats are not set yet (glance creates images without them) is
# to the scheduler and the compute API: the model's default, as before the service.
UNSET_DISK_FORMAT = DEFAULT_DISK_FORMAT
UNSET_CONTAINER_FORMAT = DEFAULT_CONTAINER_FORMAT


class ImageStatus(enum.StrEnum):
    """Glance's image states that Moorage reaches: created without data (queued), data
    being received (saving), data stored (active), data withheld from all but
    administrators (deactivated: ``moorage.image.actions``), gone (deleted)."""

    QUEUED = "queued"
    SAVING = "saving"
    ACTIVE = "active"
    DEACTIVATED = "deactivated"
    DELETED = "deleted"


class Visibility(enum.StrEnum):
    PUBLIC = "public"
    PRIVATE = "private"
    SHARED = "shared"
    COMMUNITY = "community"


class MemberStatus(enum.StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


@dataclass(frozen=True)
class DataDigest:
    """What an upload stored: its size and hashes (md5 as glance's ``checksum``, the
    multihash with its algorithm), and the virtual size the inspector read."""

    size: int
    checksum: str
    os_hash_algo: str
    os_hash_value: str
    virtual_size: int | None = None


@dataclass(frozen=True)
class StoredImage:
    """One row of ``images`` with its tags: every field glance shows."""

    id: str
    name: str | None
    status: ImageStatus
    visibility: Visibility
    owner: str | None
    disk_format: str | None
    container_format: str | None
    min_disk: int
    min_ram: int
    protected: bool
    os_hidden: bool
    created_at: datetime.datetime
    updated_at: datetime.datetime
    size: int | None = None
    virtual_size: int | None = None
    checksum: str | None = None
    os_hash_algo: str | None = None
    os_hash_value: str | None = None
    tags: tuple[str, ...] = ()
    # Every other property, as the owner set it (strings), hw_* included.
    properties: Mapping[str, str] = field(default_factory=dict)

    def as_model(self) -> Image:
        """The image as the scheduler and the agents know it (properties checked when
        written: ``moorage.image.properties``)."""
        return Image.create(self.id, self.name or "",
                            self.disk_format or UNSET_DISK_FORMAT,
                            self.container_format or UNSET_CONTAINER_FORMAT,
                            self.properties, min_disk_gb=self.min_disk,
                            min_ram_mb=self.min_ram, size=self.size)


@dataclass(frozen=True)
class Member:
    """A project an image is shared with, and whether it accepted."""

    image_id: str
    member: str
    status: MemberStatus
    created_at: datetime.datetime
    updated_at: datetime.datetime
