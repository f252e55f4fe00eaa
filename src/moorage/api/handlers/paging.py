"""Paging a listing as nova pages one: ``limit`` and ``marker`` in, a ``next`` link out.

Why one module: flavors and migrations (and whatever lists next) read the page length
the same way (nova's ``common.get_limit_and_marker``) and link to the next page the
same way (its ``ViewBuilder._get_collection_links``). The page itself is cut by the
store's query, never from a list loaded whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from moorage.api.handlers.common import invalid_query, once
from moorage.api.http import ApiRequest, QueryParams
from moorage.jsonvalue import JSONValue

# One item of a list, as its view made it.
View = dict[str, JSONValue]

# nova's [api] max_limit default: no page is longer, asked for or not.
MAX_LIMIT = 1000


def _limit(text: str) -> int:
    """``limit``'s value: a non-negative integer, at most MAX_LIMIT; 400 otherwise."""
    if not (text.isascii() and text.isdigit()):  # "٣".isdigit(), and "-1" is refused
        raise invalid_query("limit", text, f"{text!r} is not a non-negative integer.")
    return min(int(text), MAX_LIMIT)


def page_limit(query: QueryParams) -> int:
    """The length of the page asked for (``limit``, a non-negative integer), at most
    MAX_LIMIT; MAX_LIMIT when none is asked for. 400 naming a bad value."""
    text = query.get("limit")
    return MAX_LIMIT if text is None else _limit(text)


@dataclass(frozen=True)
class Paging:
    """What a list was asked for: at most ``limit`` items after ``marker``. ``limit``
    None: no limit asked (every item; the lists nova does not cap)."""

    limit: int | None = None
    marker: str | None = None


def paging(query: QueryParams, *, strict: bool) -> Paging:
    """``limit`` and ``marker`` as asked, uncapped when no limit is given; ``strict``:
    each at most once (nova's query schemas from the version that made them strict)."""
    read = (lambda name: once(query, name)) if strict else query.get
    text, marker = read("limit"), read("marker")
    return Paging(None if text is None else _limit(text), marker)


def link_after(req: ApiRequest, collection: str, marker: str) -> list[dict[str, str]]:
    """nova's ``<collection>_links``: the same query, with ``marker`` the last item."""
    params = {name: req.query.get(name) or "" for name in sorted(req.query)}
    params["marker"] = marker
    href = req.absolute_url(f"/v2.1/{collection}") + "?" + urlencode(sorted(params.items()))
    return [{"rel": "next", "href": href}]


def page_body(req: ApiRequest, collection: str, key: str, views: list[View],
              last: str | None) -> dict[str, JSONValue]:
    """nova's list body: ``{key: views}``, and ``<key>_links`` with a ``next`` link when
    the page is full (``last``: the id of the last item; None for a list that is not
    paged at the asked version)."""
    body: dict[str, JSONValue] = {key: views}
    links = next_links(req, collection, len(views), last)
    if links:
        body[f"{key}_links"] = links
    return body


def next_links(req: ApiRequest, collection: str, shown: int,
               last: str | None) -> list[dict[str, str]]:
    """nova's ``<collection>_links``: a ``next`` link when the page is full (``shown``
    items, ``last`` the id of the last), to the same query with ``marker=last``. Empty
    otherwise: a client stops at a page shorter than asked for."""
    size = page_limit(req.query)
    if not size or shown != size or last is None:
        return []
    return link_after(req, collection, last)
