"""Images as Glance v2 gives them: a listing (``GET /v2/images``), as the preflight reads
a catalogue that lives in an upstream Glance, and one image's data facts
(``GET /v2/images/{id}``: size and hashes), as a compute host reads them before it
downloads the data.

The format is Glance's own answer, which ``glance image-list``'s API call and
``curl -H "X-Auth-Token: $T" $GLANCE/v2/images`` give::

    {"images": [{"id": "...", "name": "win2019", "status": "active",
                 "disk_format": "vmdk", "container_format": "bare",
                 "visibility": "public", "min_disk": 0, "min_ram": 0, ...,
                 "hw_vif_model": "e1000"}],
     "first": "/v2/images", "schema": "/v2/schemas/images"}

An image's properties are top-level keys beside Glance's own attributes (v2 has no
``properties`` object; one is accepted too, for hand-written files). Only ``active``
images can be booted, so the others are left out. A malformed listing is a
ValueError of one line naming the file, the image and what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from moorage.model.image import Image, InvalidImageProperty

# Glance v2's image attributes (its image schema), which are not image properties.
GLANCE_ATTRIBUTES = frozenset({
    "id", "name", "status", "visibility", "protected", "os_hidden", "checksum",
    "os_hash_algo", "os_hash_value", "owner", "size", "virtual_size", "min_ram",
    "min_disk", "created_at", "updated_at", "tags", "disk_format", "container_format",
    "direct_url", "locations", "self", "file", "schema", "stores", "properties",
})
BOOTABLE_STATUS = "active"


@dataclass(frozen=True)
class GlanceListing:
    """The bootable images of a listing, how many it left out, and the next page's
    link when the listing is one page of several."""

    images: tuple[Image, ...]
    not_active: int
    next_page: str | None


def images_from_listing(data: object, source: str) -> GlanceListing:
    """The images of a decoded ``GET /v2/images`` answer; ValueError naming ``source``
    (the file) and what is wrong."""
    if not isinstance(data, Mapping) or not isinstance(data.get("images"), list):
        raise ValueError(f"{source}: not a Glance image listing: expected the answer of "
                         'GET /v2/images, {"images": [{"id", "name", "disk_format", ...}]}')
    images: list[Image] = []
    not_active = 0
    for index, entry in enumerate(data["images"]):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str):
            raise ValueError(f"{source}: images[{index}] is not an image with an \"id\"")
        if entry.get("status", BOOTABLE_STATUS) != BOOTABLE_STATUS:
            not_active += 1
            continue
        images.append(_image(entry, f"{source}: image {entry['id']}"))
    next_page = data.get("next")
    return GlanceListing(tuple(images), not_active,
                         next_page if isinstance(next_page, str) else None)


def _image(entry: Mapping[str, object], where: str) -> Image:
    properties = {key: str(value) for key, value in entry.items()
                  if key not in GLANCE_ATTRIBUTES and isinstance(value, str | int | float)}
    nested = entry.get("properties")
    if isinstance(nested, Mapping):
        properties.update({str(k): str(v) for k, v in nested.items()})
    disk_format = entry.get("disk_format")
    if not isinstance(disk_format, str):
        raise ValueError(f"{where}: active but has no disk_format")
    size = entry.get("size")
    try:
        return Image.create(str(entry["id"]), str(entry.get("name") or ""), disk_format,
                            str(entry.get("container_format") or "bare"), properties,
                            size=size if isinstance(size, int) else None)
    except InvalidImageProperty as exc:
        raise ValueError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class ImageData:
    """What Glance says of an image's data: enough to download it and check that what
    arrived is what was uploaded. ``size`` None: the image has no data (Glance's
    ``queued``). ``checksum`` is the MD5 hex digest (Glance's legacy field);
    ``os_hash_algo``/``os_hash_value`` the multihash (sha512 by default)."""

    id: str
    status: str
    disk_format: str | None
    size: int | None
    checksum: str | None = None
    os_hash_algo: str | None = None
    os_hash_value: str | None = None


def image_data(entry: object, image_id: str) -> ImageData:
    """The data facts of a decoded ``GET /v2/images/{id}`` answer; ValueError naming
    the field that is missing or of the wrong type."""
    if not isinstance(entry, Mapping) or entry.get("id") != image_id:
        raise ValueError(f"not Glance's record of image {image_id}: expected "
                         '{"id": ..., "status": ..., "size": ..., ...}')
    status = entry.get("status")
    if not isinstance(status, str):
        raise ValueError(f"image {image_id}: status is {status!r}, not a string")
    size = entry.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int)
                             or size < 0):
        raise ValueError(f"image {image_id}: size is {size!r}, not a byte count or null")
    texts: dict[str, str | None] = {}
    for key in ("disk_format", "checksum", "os_hash_algo", "os_hash_value"):
        value = entry.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"image {image_id}: {key} is {value!r}, not a string or null")
        texts[key] = value or None
    return ImageData(image_id, status, texts["disk_format"], size, texts["checksum"],
                     texts["os_hash_algo"], texts["os_hash_value"])
