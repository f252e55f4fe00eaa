"""Parsing helpers the handlers share: integers, strings and booleans from JSON bodies
and query strings, each failing with a 400 that names the field."""

from __future__ import annotations

import datetime
from collections.abc import Collection, Mapping
from typing import Any

from moorage.api.errors import BadRequest
from moorage.api.http import QueryParams

# nova's words for a boolean (oslo's strutils), in a body or a query string.
TRUE_WORDS = ("1", "t", "true", "on", "y", "yes")
FALSE_WORDS = ("0", "f", "false", "off", "n", "no")


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
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS:
        return value.strip().lower() in TRUE_WORDS
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


# -- query strings, refused in the words of nova's query schemas -------------------------


def invalid_query(name: str, value: object, why: str) -> BadRequest:
    """nova's 400 for a query parameter its schema refuses."""
    return BadRequest(f"Invalid input for query parameters {name}. Value: {value}. {why}")


def only_known(query: QueryParams, known: Collection[str]) -> None:
    """400 naming the parameters not in ``known``, as a strict query schema of nova's
    (``additionalProperties: false``) refuses them."""
    unknown = [name for name in query if name not in known]
    if len(unknown) == 1:
        raise BadRequest(f"Additional properties are not allowed ({unknown[0]!r} was "
                         "unexpected)")
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise BadRequest(f"Additional properties are not allowed ({names} were unexpected)")


def once(query: QueryParams, name: str) -> str | None:
    """A parameter nova takes at most once (its ``single_param``): 400 when repeated."""
    values = query.getall(name)
    if len(values) > 1:
        raise invalid_query(name, values, f"{name} may be given only once.")
    return values[0] if values else None


def moment(name: str, text: str) -> datetime.datetime:
    """An ISO 8601 date and time (nova's ``date-time`` format: ``2026-11-24T18:00:00Z``,
    an offset, or none for UTC), as the naive UTC the database keeps."""
    try:
        found = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise invalid_query(name, text, f"{text!r} is not a 'date-time'.") from None
    if found.tzinfo is not None:
        found = found.astimezone(datetime.UTC).replace(tzinfo=None)
    return found


def flag(query: QueryParams, name: str, *, strict: bool) -> bool:
    """A boolean query parameter (``with_servers=true``), false when absent; ``strict``:
    given at most once."""
    text = once(query, name) if strict else query.get(name)
    return False if text is None else boolean(text, name)


def changes_window(query: QueryParams, *, before: bool
                   ) -> tuple[datetime.datetime | None, datetime.datetime | None]:
    """``changes-since`` and (``before``: the version reads it) ``changes-before``, each
    at most once; 400 when the window ends before it starts, in nova's words."""
    since_text = once(query, "changes-since")
    since = moment("changes-since", since_text) if since_text is not None else None
    until: datetime.datetime | None = None
    if before:
        before_text = once(query, "changes-before")
        until = moment("changes-before", before_text) if before_text is not None else None
    if since is not None and until is not None and until < since:
        raise BadRequest("The value of changes-since must be less than or equal to "
                         "changes-before.")
    return since, until
