"""An image's attributes as a client writes them (a create body, the object a JSON patch
edits), checked and turned into a ``StoredImage``. Pure functions.

Glance's split: core attributes with their types; read-only ones (status, size,
hashes, timestamps, links) a client may not write (403); reserved names (``deleted``,
``os_glance_*``) nobody may (403); every other top-level key is a property, a string.
Properties are held to ``moorage.image.properties``'s rules (``hw_*`` enums,
``trait:NAME=required``): a bad one is a 400 naming it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import replace

from moorage.image.errors import BadRequest, Forbidden
from moorage.image.properties import check_properties
from moorage.image.records import StoredImage, Visibility
from moorage.jsonvalue import JSONValue
from moorage.model.image import CONTAINER_FORMATS, DISK_FORMATS, InvalidImageProperty

# What a client may set, beside properties.
CORE = ("name", "visibility", "protected", "os_hidden", "min_disk", "min_ram",
        "disk_format", "container_format", "tags", "owner")
READ_ONLY = frozenset({"id", "status", "size", "virtual_size", "checksum", "os_hash_algo",
                       "os_hash_value", "created_at", "updated_at", "self", "file",
                       "schema", "direct_url", "locations", "stores"})
RESERVED = frozenset({"deleted", "deleted_at", "location"})
RESERVED_PREFIX = "os_glance"
MAX_NAME = 255
MAX_PROPERTY_NAME = 255
MAX_PROPERTY_VALUE = 65535
MAX_TAGS = 128
MAX_INT = 2**31 - 1
UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                  r"[0-9a-fA-F]{12}$")


def refuse_unwritable(name: str) -> None:
    """403 for a name no client writes."""
    if name in READ_ONLY:
        raise Forbidden(f"Attribute '{name}' is read-only.")
    if name in RESERVED or name.startswith(RESERVED_PREFIX):
        raise Forbidden(f"Attribute '{name}' is reserved.")


def image_id(value: JSONValue) -> str:
    """A create's ``id``: a UUID, in its canonical spelling."""
    if not isinstance(value, str) or not UUID.match(value):
        raise BadRequest(f"Invalid value for id: {value!r}; allowed: a UUID.")
    return str(uuid.UUID(value))


def attributes_of(image: StoredImage) -> dict[str, JSONValue]:
    """What a JSON patch edits: the core attributes and the properties, flat."""
    return {
        **dict(image.properties),
        "name": image.name, "visibility": image.visibility.value,
        "protected": image.protected, "os_hidden": image.os_hidden,
        "min_disk": image.min_disk, "min_ram": image.min_ram,
        "disk_format": image.disk_format, "container_format": image.container_format,
        "tags": list(image.tags), "owner": image.owner,
    }


def _string(name: str, value: JSONValue, limit: int, nullable: bool) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str) or len(value) > limit:
        kind = "a string" + (" or null" if nullable else "")
        raise BadRequest(f"Invalid value for {name}: {value!r}; allowed: {kind} of at "
                         f"most {limit} characters.")
    return value


def _choice(name: str, value: JSONValue, allowed: tuple[str, ...]) -> str | None:
    if value is None:
        return None
    if value not in allowed:
        raise BadRequest(f"Invalid value for {name}: {value!r}; allowed: "
                         f"{', '.join(allowed)} or null.")
    return str(value)


def _boolean(name: str, value: JSONValue) -> bool:
    if not isinstance(value, bool):
        raise BadRequest(f"Invalid value for {name}: {value!r}; allowed: true, false.")
    return value


def _count(name: str, value: JSONValue) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
        raise BadRequest(f"Invalid value for {name}: {value!r}; allowed: an integer from 0 "
                         f"to {MAX_INT}.")
    return value


def _tags(value: JSONValue) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise BadRequest(f"Invalid value for tags: {value!r}; allowed: a list of strings.")
    tags = [_string("tags", tag, MAX_NAME, nullable=False) or "" for tag in value]
    if len(set(tags)) > MAX_TAGS:
        raise BadRequest(f"Too many tags: {len(set(tags))}; allowed: at most {MAX_TAGS}.")
    return tuple(sorted(set(tags)))


def _properties(attributes: Mapping[str, JSONValue]) -> dict[str, str]:
    properties: dict[str, str] = {}
    for name, value in attributes.items():
        if name in CORE:
            continue
        refuse_unwritable(name)
        if not name or len(name) > MAX_PROPERTY_NAME:
            raise BadRequest(f"Invalid property name {name!r}: allowed: 1 to "
                             f"{MAX_PROPERTY_NAME} characters.")
        if not isinstance(value, str) or len(value) > MAX_PROPERTY_VALUE:
            raise BadRequest(f"Invalid value for property {name}: {value!r}; allowed: a "
                             f"string of at most {MAX_PROPERTY_VALUE} characters.")
        properties[name] = value
    try:
        check_properties(properties)
    except InvalidImageProperty as exc:
        raise BadRequest(f"Invalid image property {exc}") from None
    return properties


def apply(base: StoredImage, attributes: Mapping[str, JSONValue]) -> StoredImage:
    """``base`` with ``attributes`` (core ones and properties; the properties given are
    all the image has) checked and set; 400 or 403 naming the first bad one."""
    changed = replace(base, properties=_properties(attributes))
    for name in CORE:
        if name not in attributes:
            continue
        value = attributes[name]
        if name == "name":
            changed = replace(changed, name=_string(name, value, MAX_NAME, nullable=True))
        elif name == "visibility":
            chosen = _choice(name, value, tuple(Visibility))
            if chosen is None:
                raise BadRequest(f"Invalid value for visibility: null; allowed: "
                                 f"{', '.join(Visibility)}.")
            changed = replace(changed, visibility=Visibility(chosen))
        elif name == "protected":
            changed = replace(changed, protected=_boolean(name, value))
        elif name == "os_hidden":
            changed = replace(changed, os_hidden=_boolean(name, value))
        elif name == "min_disk":
            changed = replace(changed, min_disk=_count(name, value))
        elif name == "min_ram":
            changed = replace(changed, min_ram=_count(name, value))
        elif name == "disk_format":
            changed = replace(changed, disk_format=_choice(name, value, DISK_FORMATS))
        elif name == "container_format":
            changed = replace(changed,
                              container_format=_choice(name, value, CONTAINER_FORMATS))
        elif name == "tags":
            changed = replace(changed, tags=_tags(value))
        elif name == "owner":
            changed = replace(changed, owner=_string(name, value, MAX_NAME, nullable=True))
    return changed
