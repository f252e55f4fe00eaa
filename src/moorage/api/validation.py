"""Request bodies checked against the schemas /openapi.json publishes
(``moorage.api.schemas``), before the handler runs.

The validators are made once, at import (a few microseconds: checking the schemas
against the draft's metaschema would cost a tenth of a second at every start, so the
unit tests do that instead, tests/unit/api/test_request_schemas.py).
A body that does not validate is a 400 in nova's shape whose message names the field
(its path in the body) and says what is allowed there.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from moorage.api.errors import BadRequest
from moorage.api.microversion import Version
from moorage.api.schemas import REQUEST_SCHEMAS, VERSIONED, Schema
from moorage.json_schema import Checked
from moorage.jsonvalue import JSONValue

# Formats checked: ipv4 and ipv6 (accessIPv4/6, fixed_ip), as nova's schemas do.
_FORMATS = jsonschema.FormatChecker(["ipv4", "ipv6"])


def _compile(schema: Schema) -> Checked:
    return Checked(jsonschema.Draft202012Validator(schema, format_checker=_FORMATS))


# By handler name (the operationId of the route in /openapi.json).
VALIDATORS: dict[str, Checked] = {
    name: _compile(schema) for name, schema in REQUEST_SCHEMAS.items()}


@functools.cache
def _versioned(handler: str, version: Version) -> Checked:
    return _compile(VERSIONED[handler](version))


def validator(handler: str, version: Version) -> Checked | None:
    """The validator of ``handler``'s body at ``version``, if it takes a body."""
    if handler in VERSIONED:
        return _versioned(handler, version)
    return VALIDATORS.get(handler)


def takes_no_body(validator: Checked) -> bool:
    """A body this schema refuses unless it is null may be absent (nova's PUT of one
    tag takes none)."""
    schema = validator.schema
    return isinstance(schema, Mapping) and schema.get("type") == "null"


def validate(validator: Checked, body: JSONValue) -> None:
    """400 naming what is wrong with ``body``, if anything."""
    error = best_match(validator.iter_errors(body))
    if error is not None:
        raise BadRequest(explain(error))


_TYPE_NAMES = {"object": "an object", "array": "a list", "string": "a string",
               "integer": "an integer", "number": "a number", "boolean": "a boolean",
               "null": "null"}


_BOUNDS = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "more than",
           "exclusiveMaximum": "less than", "minItems": "at least this many items:",
           "maxItems": "at most this many items:"}


def _short(value: object, limit: int = 60) -> str:
    """``value`` as shown in a message: its repr, cut to ``limit`` characters."""
    shown = repr(value)
    return shown if len(shown) <= limit else shown[:limit - 3] + "..."


def _path(error: ValidationError) -> str:
    """Where in the body: ``server.block_device_mapping_v2[0].volume_size``."""
    text = ""
    for part in error.absolute_path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _allowed(schema: Mapping[str, Any]) -> str:
    return ", ".join(sorted(schema.get("properties") or {}))


def _one_of_keys(error: ValidationError) -> str | None:
    """The message for an object that takes exactly one key (``schemas.choice``)."""
    schema = error.schema
    if error.validator not in ("additionalProperties", "minProperties", "maxProperties") or \
            not isinstance(schema, Mapping) or not schema.get("properties") or not (
            schema.get("minProperties") == schema.get("maxProperties") == 1):
        return None
    title = schema.get("title", "property")
    allowed = _allowed(schema)
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        unknown = sorted(set(error.instance) - set(schema.get("properties") or {}))
        return f"There is no such {title}: {unknown[0]}; give exactly one of: {allowed}."
    count = len(error.instance) if isinstance(error.instance, Mapping) else 0
    return f"Give exactly one {title} of: {allowed} ({count} given)."


def _detail(error: ValidationError) -> str:
    """What is wrong with the value and what is allowed, for each kind of rule."""
    rule, value = error.validator, error.instance
    expected: Any = error.validator_value
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    shown = _short(value)
    if rule == "type":
        names = [expected] if isinstance(expected, str) else list(expected)
        return f"must be {' or '.join(_TYPE_NAMES.get(n, n) for n in names)}, not {shown}"
    if rule == "additionalProperties":
        return f"{error.message}; allowed: {_allowed(schema)}"
    if rule == "minProperties" and expected == 1 and schema.get("properties"):
        return f"Give at least one of: {_allowed(schema)}"
    if "description" in schema:  # the schema says in words what it allows
        return f"{shown} is not valid; allowed: {schema['description']}"
    if rule == "enum":
        allowed = ", ".join(str(v) for v in expected if v is not None)
        return f"{shown} is not valid; allowed: {allowed}{' (or null)' * (None in expected)}"
    if rule in _BOUNDS:
        return f"{shown} is not valid; allowed: {_BOUNDS[rule]} {expected}"
    if rule == "maxLength":
        return f"{shown} is longer than {expected} characters"
    message = error.message
    return message if len(message) <= 200 else message[:197] + "..."


def explain(error: ValidationError) -> str:
    """The user's message for a validation error, in the words of nova's ("Invalid
    input for field ...") and of the handlers' own checks."""
    choice = _one_of_keys(error)
    if choice is not None:
        return choice
    detail = _detail(error)
    path = _path(error)
    if error.validator in ("required", "additionalProperties", "minProperties"):
        return f"{detail} (in {path or 'the request body'})." if path else f"{detail}."
    if not path:
        return f"Invalid request body: {detail}."
    field = next((str(p) for p in reversed(error.absolute_path) if isinstance(p, str)), path)
    where = "" if field == path else f" at {path}"
    return f"Invalid input for field {field!r}{where}: {detail}."
