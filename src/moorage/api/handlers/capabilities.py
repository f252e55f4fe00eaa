"""The capability catalogue (``/capabilities``): what the cloud offers any user, as
standard traits grouped by family, with how many hosts offer each and their free
capacity, and which image properties need which trait. JSON, or the same as an HTML
page for a client that prefers text/html (a browser).

The answer is the same for every caller, administrators included: it never names a
host, a provider or a version, and never shows a host count below ``[api]
capability_host_floor`` (``moorage.api.capabilities.catalogue``).
"""

from __future__ import annotations

from moorage.api.capabilities import catalogue, page
from moorage.api.capabilities.census import read_census
from moorage.api.http import ApiRequest, json_response
from moorage.conf.api import user_floor
from moorage.web import JSON, Response, media_ranges, quality

HTML = "text/html"
# The same URL answers in two media types; neither may be kept for another caller.
_HEADERS = [("vary", "Accept"), ("cache-control", "private, no-store"),
            ("x-content-type-options", "nosniff")]


def prefers_html(accept: str | None) -> bool:
    """True when the Accept header ranks text/html above JSON (as browsers send it);
    no header, ``*/*`` or a tie is JSON."""
    if not accept:
        return False
    ranges = media_ranges(accept)
    return quality(ranges, HTML) > quality(ranges, JSON)


def list_capabilities(req: ApiRequest) -> Response:
    """List the capabilities the cloud offers, as standard traits (no host is named)."""
    req.authorize("moorage:capabilities:index")
    state = req.state
    conf = state.conf
    census = state.capabilities.get(
        float(conf.api.capability_cache_seconds),
        lambda: read_census(state.placement, state.catalog))
    shown = catalogue.build(census, user_floor(conf).hosts,
                            catalogue.prefiltered_properties(
                                conf.scheduler.query_placement_for_image_type_support,
                                conf.scheduler.image_metadata_prefilter))
    if prefers_html(req.header("Accept")):
        return Response(body=page.render(shown).encode(), content_type=f"{HTML}; charset=utf-8",
                        headers=[*_HEADERS, ("content-security-policy",
                                             page.CONTENT_SECURITY_POLICY),
                                 ("referrer-policy", "no-referrer")])
    return json_response({"capabilities": catalogue.to_json(shown)}, headers=list(_HEADERS))
