"""Which fields of a record identify a host, and the record without them.

Why: users who may not see the cloud's host identities (nova's
``os_compute_api:servers:show:host_status``) still read why their server failed.
Their view is built by leaving out the fields marked here, never by searching text
for host names: a field that may hold a host's name, node, address or provider (a
driver's own words about it included) is marked where it is declared,

    host: Annotated[str, IDENTIFIES_HOST]

and every record a user reads offers a view made of its other fields.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any


class _IdentifiesHost:
    """The mark of a field that identifies a host."""

    def __repr__(self) -> str:
        return "IDENTIFIES_HOST"


IDENTIFIES_HOST = _IdentifiesHost()


_HOST_FIELDS: dict[type[Any], frozenset[str]] = {}


def host_fields(record_type: type[Any]) -> frozenset[str]:
    """The names of the dataclass ``record_type``'s fields marked ``IDENTIFIES_HOST``
    (read from its annotations once)."""
    found = _HOST_FIELDS.get(record_type)
    if found is None:
        hints = typing.get_type_hints(record_type, include_extras=True)
        found = _HOST_FIELDS[record_type] = frozenset(
            f.name for f in dataclasses.fields(record_type)
            if IDENTIFIES_HOST in getattr(hints.get(f.name), "__metadata__", ()))
    return found


def without_hosts(data: Mapping[str, Any], record_type: type[Any]) -> dict[str, Any]:
    """The JSON form of a ``record_type`` (keyed by its field names) without the fields
    that identify a host."""
    hidden = host_fields(record_type)
    return {key: value for key, value in data.items() if key not in hidden}
