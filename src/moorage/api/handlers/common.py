"""Parsing helpers the handlers share: integers, strings and booleans from JSON bodies
and query strings, each failing with a 400 that names the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from moorage.api.errors import BadRequest

_TRUE = ("1", "t", "true", "on", "y", "yes")
_FALSE = ("0", "f", "false", "off", "n", "no")


def integer(body: Mapping[str, Any], name: str, *, minimum: int = 0,
            default: int | None = None, maximum: int = 2**31 - 1) -> int:
    """An integer field (a JSON number or a string of digits, as nova accepts)."""
    if name not in body or body[name] is None:
        if default is None:
            raise BadRequest(f"{name!r} is a required property.")
        return default
    value = body[name]
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # 2.0: an integer to JSON Schema, as to nova
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise BadRequest(f"Invalid input for field {name!r}: {value!r} is not an integer.")
    try:
        if isinstance(value, str) and not value.isascii():
            raise ValueError(value)  # int() reads "٣" as 3: the digits are 0-9
        number = int(value)
    except ValueError:
        raise BadRequest(
            f"Invalid input for field {name!r}: {value!r} is not an integer.") from None
    if not minimum <= number <= maximum:
        raise BadRequest(f"Invalid input for field {name!r}: {number} is not between "
                         f"{minimum} and {maximum}.")
    return number


def string(body: Mapping[str, Any], name: str, *, required: bool = False,
           max_length: int = 255, allow_none: bool = False) -> str | None:
    value = body.get(name)
    if value is None:
        if required:
            raise BadRequest(f"{name!r} is a required property.")
        if name in body and not allow_none:
            raise BadRequest(f"Invalid input for field {name!r}: None is not a string.")
        return None
    if not isinstance(value, str):
        raise BadRequest(f"Invalid input for field {name!r}: {value!r} is not a string.")
    if not value.strip() or len(value) > max_length:
        raise BadRequest(f"Invalid input for field {name!r}: must be 1 to {max_length} "
                         "characters, not blank.")
    return value


def boolean(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise BadRequest(f"Invalid input for field {name!r}: {value!r} is not a boolean.")


# The largest id a database integer column holds (PostgreSQL's integer).
MAX_ID = 2**31 - 1


def database_id(text: str) -> int | None:
    """``text`` as a row id when it is one: ASCII digits only (``"³".isdigit()`` is true,
    and ``int("³")`` fails) and within a database integer; None otherwise, for the
    caller to answer as for an id that does not exist."""
    if not (text.isascii() and text.isdigit()) or len(text) > 10 or int(text) > MAX_ID:
        return None
    return int(text)
