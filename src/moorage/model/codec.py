"""Flavors, images and guests as JSON, for the services that pass them over HTTP."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from moorage.model.flavor import Flavor
from moorage.model.image import Image

Json = dict[str, Any]


def flavor_to_json(flavor: Flavor) -> Json:
    return {
        "name": flavor.name,
        "vcpus": flavor.vcpus,
        "memory_mb": flavor.memory_mb,
        "root_gb": flavor.root_gb,
        "ephemeral_gb": flavor.ephemeral_gb,
        "swap_mb": flavor.swap_mb,
        "extra_specs": dict(flavor.extra_specs),
    }


def flavor_from_json(data: Mapping[str, Any]) -> Flavor:
    return Flavor(
        name=data["name"],
        vcpus=int(data["vcpus"]),
        memory_mb=int(data["memory_mb"]),
        root_gb=int(data.get("root_gb", 0)),
        ephemeral_gb=int(data.get("ephemeral_gb", 0)),
        swap_mb=int(data.get("swap_mb", 0)),
        extra_specs=dict(data.get("extra_specs", {})),
    )


def image_to_json(image: Image) -> Json:
    """The image's JSON; ``size`` only for an image with data (Glance's field)."""
    return {
        "id": image.id,
        "name": image.name,
        "disk_format": image.disk_format,
        "container_format": image.container_format,
        "min_disk": image.min_disk_gb,
        "min_ram": image.min_ram_mb,
        "properties": image.properties.raw(),
        **({"size": image.size} if image.size is not None else {}),
    }


def image_from_json(data: Mapping[str, Any]) -> Image:
    """An image from JSON; InvalidImageProperty if its properties are not valid."""
    return Image.create(
        data["id"],
        data["name"],
        data.get("disk_format", "qcow2"),
        data.get("container_format", "bare"),
        data.get("properties", {}),
        min_disk_gb=int(data.get("min_disk", 0)),
        min_ram_mb=int(data.get("min_ram", 0)),
        size=None if data.get("size") is None else int(data["size"]),
    )
