"""Query parameters as nova's query schemas read them, each refusal a 400 naming the
parameter: the names a route takes at a version (from 2.53 for os-hypervisors, 2.75
for os-services, any other name is refused), a parameter given once, and the values
limit and marker paging takes."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from moorage.api.errors import BadRequest
from moorage.api.handlers.common import boolean
from moorage.api.http import QueryParams


def refuse_unknown(query: QueryParams, allowed: Collection[str]) -> None:
    """400 naming the first parameter not in ``allowed``."""
    for name in query:
        if name not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            raise BadRequest(f"Invalid query parameter {name!r}: additional parameters "
                             f"are not allowed; allowed: {known}.")


def single(query: QueryParams, name: str) -> str | None:
    """The value of ``name``; 400 when it is given more than once."""
    values = query.getall(name)
    if len(values) > 1:
        raise BadRequest(f"Invalid query parameter {name!r}: give it at most once, not "
                         f"{len(values)} times.")
    return values[0] if values else None


def flag(query: QueryParams, name: str, *, once: bool) -> bool:
    """A boolean parameter (``with_servers=true``), false when absent."""
    text = single(query, name) if once else query.get(name)
    return False if text is None else boolean(text, name)


@dataclass(frozen=True)
class Paging:
    """What a list was asked for: at most ``limit`` items after ``marker``. ``limit``
    None: no limit asked (every item)."""

    limit: int | None = None
    marker: str | None = None

    @property
    def asked(self) -> bool:
        return self.limit is not None or self.marker is not None


def paging(query: QueryParams, *, once: bool) -> Paging:
    """limit (a non-negative integer) and marker, as nova's paging parameters."""
    read = (lambda name: single(query, name)) if once else query.get
    limit_text, marker = read("limit"), read("marker")
    limit = None
    if limit_text is not None:
        if not (limit_text.isascii() and limit_text.strip().isdigit()):
            raise BadRequest(f"Invalid query parameter 'limit': {limit_text!r} is not a "
                             "non-negative integer.")
        limit = int(limit_text)
    return Paging(limit, marker)
