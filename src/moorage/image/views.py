"""Images and members as glance v2 shows them. Links are glance's: relative to the
service's endpoint (``/v2/images/ID``), whatever prefix it is mounted at."""

from __future__ import annotations

import datetime

from moorage.image.records import Member, StoredImage
from moorage.jsonvalue import JSONValue


def glance_time(moment: datetime.datetime) -> str:
    """Glance's timestamps: UTC to the second, with a Z."""
    return moment.replace(microsecond=0).isoformat() + "Z"


def image_path(image_id: str) -> str:
    return f"/v2/images/{image_id}"


def image_view(image: StoredImage) -> dict[str, JSONValue]:
    """An image: its properties flat beside glance's attributes."""
    return {
        **dict(image.properties),
        "id": image.id,
        "name": image.name,
        "status": image.status.value,
        "visibility": image.visibility.value,
        "protected": image.protected,
        "os_hidden": image.os_hidden,
        "checksum": image.checksum,
        "os_hash_algo": image.os_hash_algo,
        "os_hash_value": image.os_hash_value,
        "owner": image.owner,
        "size": image.size,
        "virtual_size": image.virtual_size,
        "min_ram": image.min_ram,
        "min_disk": image.min_disk,
        "disk_format": image.disk_format,
        "container_format": image.container_format,
        "created_at": glance_time(image.created_at),
        "updated_at": glance_time(image.updated_at),
        "tags": list(image.tags),
        "self": image_path(image.id),
        "file": f"{image_path(image.id)}/file",
        "schema": "/v2/schemas/image",
    }


def member_view(member: Member) -> dict[str, JSONValue]:
    return {
        "image_id": member.image_id,
        "member_id": member.member,
        "status": member.status.value,
        "created_at": glance_time(member.created_at),
        "updated_at": glance_time(member.updated_at),
        "schema": "/v2/schemas/member",
    }
