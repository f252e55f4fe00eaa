"""Building blocks for the JSON schemas of request bodies and query strings, and
``Body``: a body's schema with the type of the documents it admits."""

from __future__ import annotations

import uuid as uuidlib
from typing import Generic, TypeVar

import jsonschema

from moorage.json_schema import Checked
from moorage.jsonvalue import JSONValue
from moorage.placement.api.params import is_uuid_like

# A JSON schema (a dict: jsonschema's check_schema takes no other mapping).
Schema = dict[str, JSONValue]
T = TypeVar("T")

UUID_PATTERN = "^[0-9a-fA-F-]{36}$"
RC_PATTERN = "^[A-Z0-9_]+$"
CONSUMER_TYPE_PATTERN = "^[A-Z0-9_]+$"
GROUP_SUFFIX = r"[1-9][0-9]*"
GROUP_SUFFIX_1_33 = r"[a-zA-Z0-9_-]{1,64}"

FORMAT_CHECKER = jsonschema.FormatChecker()


@FORMAT_CHECKER.checks("uuid")
def _uuid_format(instance: object) -> bool:
    return not isinstance(instance, str) or is_uuid_like(instance)


def validator(schema: Schema) -> Checked:
    """A compiled validator that checks the ``uuid`` format as upstream does."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    cls.check_schema(schema)
    return Checked(cls(schema, format_checker=FORMAT_CHECKER))


class Body(Generic[T]):
    """A request body's schema, compiled, and ``shape``: the type (a TypedDict, mostly)
    of every document the schema admits. ``Request.json_body`` returns that type, so
    mypy checks what a handler reads from a body against what the schema lets in;
    tests/unit/placement/test_body_shapes.py holds each shape to its schema."""

    __slots__ = ("schema", "shape", "validator")

    def __init__(self, schema: Schema, shape: type[T]) -> None:
        self.schema = schema
        self.shape = shape
        self.validator = validator(schema)


def canonical_uuid(value: str) -> str:
    """The dashed lower-case spelling of a uuid-like string."""
    return str(uuidlib.UUID(value))
