"""Glance's JSON patch of an image: a list of changes applied to the image's flat
attributes (``moorage.image.attributes.attributes_of``). Pure.

A change's form is the media type's, as glance reads it: RFC 6902's
``{"op": add|replace|remove, "path": "/name", "value": ...}`` in
``application/openstack-images-v2.1-json-patch``; the older draft's
``{"replace": "/name", "value": ...}`` (the operation is the key, the path its value)
in ``application/openstack-images-v2.0-json-patch``, which Tempest's client sends.

Glance's rules: a path names one top-level attribute (``/tags`` is the whole list);
``add`` sets (in the v2.0 media type, an attribute already there is a 409);
``replace`` needs the attribute to exist (409); ``remove`` takes properties only (a
core attribute is a 403, a property not there a 409); read-only and reserved
attributes are a 403 whatever the operation.
"""

from __future__ import annotations

from dataclasses import dataclass

from moorage.image.attributes import CORE, refuse_unwritable
from moorage.image.errors import BadRequest, Conflict, Forbidden
from moorage.jsonvalue import JSONValue

PATCH_V21 = "application/openstack-images-v2.1-json-patch"
PATCH_V20 = "application/openstack-images-v2.0-json-patch"
MEDIA_TYPES = (PATCH_V21, PATCH_V20)
OPERATIONS = ("add", "replace", "remove")


@dataclass(frozen=True)
class Change:
    op: str
    name: str
    value: JSONValue = None


def _name(path: JSONValue) -> str:
    """The attribute a JSON pointer names: ``/name`` -> ``name`` (``~1`` is ``/``)."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise BadRequest(f"Invalid path {path!r}: allowed: a JSON pointer such as /name.")
    segments = path[1:].split("/")
    if len(segments) != 1 or not segments[0]:
        raise BadRequest(f"Invalid path {path}: nested paths are not allowed.")
    return segments[0].replace("~1", "/").replace("~0", "~")


def _rfc6902(raw: dict[str, JSONValue]) -> tuple[str, JSONValue]:
    """A v2.1 change's operation and path: its ``op`` and ``path`` members."""
    op = raw.get("op")
    if op not in OPERATIONS:
        raise BadRequest(f"Invalid operation {op!r}: allowed: {', '.join(OPERATIONS)}.")
    if "path" not in raw:
        raise BadRequest(f"Operation {op} needs a path, such as /name.")
    return str(op), raw["path"]


def _older_draft(raw: dict[str, JSONValue]) -> tuple[str, JSONValue]:
    """A v2.0 change's operation and path: its one member named after an operation,
    whose value is the path."""
    named = [op for op in OPERATIONS if op in raw]
    if len(named) != 1:
        raise BadRequest(f"Invalid change {raw!r}: allowed: an object with exactly one of "
                         f"{', '.join(OPERATIONS)}, whose value is the path.")
    return named[0], raw[named[0]]


# How each media type spells a change.
FORMS = {PATCH_V21: _rfc6902, PATCH_V20: _older_draft}


def parse(body: JSONValue, media_type: str = PATCH_V21) -> list[Change]:
    """The changes of a patch body in ``media_type``'s form; 400 naming what is
    malformed, 403 for a read-only or reserved attribute."""
    if not isinstance(body, list):
        raise BadRequest("The request body must be a JSON array of changes.")
    operation_and_path = FORMS[media_type]
    changes = []
    for raw in body:
        if not isinstance(raw, dict):
            raise BadRequest(f"Invalid change {raw!r}: allowed: an object with an "
                             "operation and a path.")
        op, path = operation_and_path(raw)
        name = _name(path)
        refuse_unwritable(name)
        if op != "remove" and "value" not in raw:
            raise BadRequest(f"Operation {op} on /{name} needs a value.")
        changes.append(Change(op, name, raw.get("value")))
    return changes


def apply(attributes: dict[str, JSONValue], changes: list[Change], *,
          strict_add: bool = False) -> dict[str, JSONValue]:
    """``attributes`` after ``changes``, in order (a new dict)."""
    result = dict(attributes)
    for change in changes:
        present = change.name in result
        if change.op == "add":
            if strict_add and present and (change.name not in CORE):
                raise Conflict(f"Property {change.name} already present.")
            result[change.name] = change.value
        elif change.op == "replace":
            if not present:
                raise Conflict(f"Property {change.name} does not exist.")
            result[change.name] = change.value
        else:
            if change.name in CORE:
                raise Forbidden(f"Property {change.name} may not be removed.")
            if not present:
                raise Conflict(f"Property {change.name} does not exist.")
            del result[change.name]
    return result
