"""GET /: the version document. No authentication needed."""

from __future__ import annotations

from moorage.placement.http import Request, Response
from moorage.placement.microversion import MAX_VERSION, MIN_VERSION


def home(req: Request) -> Response:
    return req.json_response(
        {
            "versions": [
                {
                    "id": f"v{MIN_VERSION}",
                    "max_version": str(MAX_VERSION),
                    "min_version": str(MIN_VERSION),
                    "status": "CURRENT",
                    "links": [{"rel": "self", "href": ""}],
                }
            ]
        }
    )
