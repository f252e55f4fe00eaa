"""Paging a listing as nova pages one: ``limit`` and ``marker`` in, a ``next`` link out.

Why one module: flavors and migrations (and whatever lists next) read the page length
the same way (nova's ``common.get_limit_and_marker``) and link to the next page the
same way (its ``ViewBuilder._get_collection_links``). The page itself is cut by the
store's query, never from a list loaded whole.
"""

from __future__ import annotations

from urllib.parse import urlencode

from moorage.api.handlers.common import invalid_query
from moorage.api.http import ApiRequest, QueryParams

# nova's [api] max_limit default: no page is longer, asked for or not.
MAX_LIMIT = 1000


def page_limit(query: QueryParams) -> int:
    """The length of the page asked for (``limit``, a non-negative integer), at most
    MAX_LIMIT; MAX_LIMIT when none is asked for. 400 naming a bad value."""
    text = query.get("limit")
    if text is None:
        return MAX_LIMIT
    if not (text.isascii() and text.isdigit()):  # "٣".isdigit(), and "-1" is refused
        raise invalid_query("limit", text, f"{text!r} is not a non-negative integer.")
    return min(int(text), MAX_LIMIT)


def next_links(req: ApiRequest, collection: str, shown: int,
               last: str | None) -> list[dict[str, str]]:
    """nova's ``<collection>_links``: a ``next`` link when the page is full (``shown``
    items, ``last`` the id of the last), to the same query with ``marker=last``. Empty
    otherwise: a client stops at a page shorter than asked for."""
    size = page_limit(req.query)
    if not size or shown != size or last is None:
        return []
    params = {name: req.query.get(name) or "" for name in sorted(req.query)}
    params["marker"] = last
    href = req.absolute_url(f"/v2.1/{collection}") + "?" + urlencode(sorted(params.items()))
    return [{"rel": "next", "href": href}]
