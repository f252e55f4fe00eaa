"""The version documents (``/`` and ``/v2.1``): what a client reads first, and where it
learns the microversions served (moorage.api.microversion)."""

from __future__ import annotations

from typing import Any

from moorage.api.http import ApiRequest, json_response
from moorage.api.microversion import MAX_VERSION, MIN_VERSION
from moorage.web import Response


def _version(req: ApiRequest) -> dict[str, Any]:
    return {
        "id": "v2.1", "status": "CURRENT", "version": str(MAX_VERSION),
        "min_version": str(MIN_VERSION),
        "updated": "2013-07-23T11:33:21Z",
        "links": [{"rel": "self", "href": req.absolute_url("/v2.1/")},
                  {"rel": "describedby", "type": "application/json",
                   "href": req.absolute_url("/openapi.json")}],
        "media-types": [{"base": "application/json",
                         "type": "application/vnd.openstack.compute+json;version=2.1"}],
    }


def versions(req: ApiRequest) -> Response:
    """The API versions this service offers."""
    return json_response({"versions": [_version(req)]})


def version_v21(req: ApiRequest) -> Response:
    """The v2.1 version document."""
    return json_response({"version": _version(req)})
