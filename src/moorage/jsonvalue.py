"""The type of a JSON document, for the bodies the services send and read.

Why read-only containers (``Mapping``, ``Sequence``): they are covariant, so a body
built as ``{"traits": names}`` with ``names: list[str]`` is a ``JSONValue`` as it
stands, where ``dict``/``list`` would refuse it. A document parsed by ``orjson`` or
``json`` is one too (dicts, lists, strings, numbers, booleans, None); narrow it with
``isinstance`` before reading it. A body whose keys are known (validated against a
schema, or a service's documented answer) is better typed as a ``TypedDict``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

JSONValue: TypeAlias = (
    Mapping[str, "JSONValue"] | Sequence["JSONValue"] | str | int | float | bool | None
)
JSONObject: TypeAlias = Mapping[str, JSONValue]
