"""The ids in os-services and os-hypervisors paths, read as nova reads them: an integer
before microversion 2.53, a uuid from 2.53. Each function says only whether the text
is one; the handler answers as nova does for that route when it is not."""

from __future__ import annotations

import re
import uuid as uuidlib

from moorage.placement.api.params import is_uuid_like

# nova's ``validate_integer`` takes what ``int()`` takes; Moorage takes ASCII digits only
# ("³" and "٣" are digits to Python, and no id of ours).
_INTEGER = re.compile(r"^\s*[+-]?[0-9]+\s*$")


def integer_id(text: str) -> int | None:
    """``text`` as an integer id, or None when it is not an integer."""
    return int(text) if text.isascii() and _INTEGER.match(text) else None


def uuid_id(text: str) -> str | None:
    """``text`` in the dashed lower-case spelling when it is uuid-like (any spelling
    oslo.utils takes: braces, no dashes, upper case), None otherwise."""
    return str(uuidlib.UUID(text)) if is_uuid_like(text) else None
