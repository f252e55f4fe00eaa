"""Building blocks for the JSON schemas of request bodies and query strings."""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

import jsonschema

from moorage.placement.api.params import is_uuid_like

UUID_PATTERN = "^[0-9a-fA-F-]{36}$"
RC_PATTERN = "^[A-Z0-9_]+$"
CONSUMER_TYPE_PATTERN = "^[A-Z0-9_]+$"
GROUP_SUFFIX = r"[1-9][0-9]*"
GROUP_SUFFIX_1_33 = r"[a-zA-Z0-9_-]{1,64}"

FORMAT_CHECKER = jsonschema.FormatChecker()


@FORMAT_CHECKER.checks("uuid")
def _uuid_format(instance: object) -> bool:
    return not isinstance(instance, str) or is_uuid_like(instance)


def validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    """A compiled validator that checks the ``uuid`` format as upstream does."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    cls.check_schema(schema)
    return cls(schema, format_checker=FORMAT_CHECKER)


def canonical_uuid(value: str) -> str:
    """The dashed lower-case spelling of a uuid-like string."""
    return str(uuidlib.UUID(value))
