"""The JSON schemas glance publishes (``GET /v2/schemas/image``, ``images``, ``member``,
``members``): what clients such as python-glanceclient read to learn which keys are
attributes and which are properties. Built from the same names the service checks
(``moorage.image.attributes``)."""

from __future__ import annotations

from moorage.image.attributes import MAX_INT, MAX_NAME, MAX_PROPERTY_VALUE
from moorage.image.records import ImageStatus, MemberStatus, Visibility
from moorage.jsonvalue import JSONValue
from moorage.model.image import CONTAINER_FORMATS, DISK_FORMATS

_READ_ONLY: dict[str, JSONValue] = {"readOnly": True}
_TIME: dict[str, JSONValue] = {"type": "string", "format": "date-time", **_READ_ONLY}
_NULLABLE_STRING: dict[str, JSONValue] = {"type": ["null", "string"], **_READ_ONLY}


def image_schema() -> dict[str, JSONValue]:
    return {
        "name": "image",
        "properties": {
            "id": {"type": "string", "pattern": "^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-"
                   "([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){12}$",
                   "description": "An identifier for the image"},
            "name": {"type": ["null", "string"], "maxLength": MAX_NAME},
            "status": {"type": "string", "enum": [*ImageStatus, "killed",
                                                  "uploading", "importing",
                                                  "pending_delete"], **_READ_ONLY},
            "visibility": {"type": "string", "enum": list(Visibility)},
            "protected": {"type": "boolean"},
            "os_hidden": {"type": "boolean"},
            "checksum": {**_NULLABLE_STRING, "maxLength": 32},
            "os_hash_algo": {**_NULLABLE_STRING, "maxLength": 64},
            "os_hash_value": {**_NULLABLE_STRING, "maxLength": 128},
            "owner": {"type": ["null", "string"], "maxLength": MAX_NAME},
            "size": {"type": ["null", "integer"], **_READ_ONLY},
            "virtual_size": {"type": ["null", "integer"], **_READ_ONLY},
            "container_format": {"type": ["null", "string"],
                                 "enum": [None, *CONTAINER_FORMATS]},
            "disk_format": {"type": ["null", "string"], "enum": [None, *DISK_FORMATS]},
            "created_at": _TIME,
            "updated_at": _TIME,
            "tags": {"type": "array", "items": {"type": "string", "maxLength": MAX_NAME}},
            "direct_url": {"type": "string", **_READ_ONLY},
            "min_ram": {"type": "integer", "minimum": 0, "maximum": MAX_INT},
            "min_disk": {"type": "integer", "minimum": 0, "maximum": MAX_INT},
            "self": {"type": "string", **_READ_ONLY},
            "file": {"type": "string", **_READ_ONLY},
            "schema": {"type": "string", **_READ_ONLY},
            "locations": {"type": "array", "items": {"type": "object"}},
        },
        "additionalProperties": {"type": "string", "maxLength": MAX_PROPERTY_VALUE},
        "links": [
            {"rel": "self", "href": "{self}"},
            {"rel": "enclosure", "href": "{file}"},
            {"rel": "describedby", "href": "{schema}"},
        ],
    }


def images_schema() -> dict[str, JSONValue]:
    return {
        "name": "images",
        "properties": {
            "images": {"type": "array", "items": image_schema()},
            "schema": {"type": "string"},
            "first": {"type": "string"},
            "next": {"type": "string"},
        },
        "links": [
            {"rel": "first", "href": "{first}"},
            {"rel": "next", "href": "{next}"},
            {"rel": "describedby", "href": "{schema}"},
        ],
    }


def member_schema() -> dict[str, JSONValue]:
    return {
        "name": "member",
        "properties": {
            "image_id": {"type": "string"},
            "member_id": {"type": "string"},
            "status": {"type": "string", "enum": list(MemberStatus)},
            "created_at": _TIME,
            "updated_at": _TIME,
            "schema": {"type": "string", **_READ_ONLY},
        },
    }


def members_schema() -> dict[str, JSONValue]:
    return {
        "name": "members",
        "properties": {
            "members": {"type": "array", "items": member_schema()},
            "schema": {"type": "string"},
        },
        "links": [{"rel": "describedby", "href": "{schema}"}],
    }


SCHEMAS = {"image": image_schema, "images": images_schema, "member": member_schema,
           "members": members_schema}
