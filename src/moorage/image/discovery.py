"""What a client reads before anything else: the API versions (``GET /image`` and
``/image/versions``, public, as glance lists them), the schemas
(``GET /v2/schemas/{name}``) and the import methods (``GET /v2/info/import``: none,
as image import is not served)."""

from __future__ import annotations

from moorage.image.errors import NotFound
from moorage.image.http import Answer, ImageRequest, json_response
from moorage.image.schemas import SCHEMAS

# Glance's v2 minor versions; the newest is CURRENT.
CURRENT = (2, 16)
MINORS = range(CURRENT[1], -1, -1)


def _versions(req: ImageRequest) -> dict[str, object]:
    href = req.absolute_url("/v2/")
    return {"versions": [
        {"id": f"v2.{minor}", "status": "CURRENT" if minor == CURRENT[1] else "SUPPORTED",
         "links": [{"rel": "self", "href": href}]}
        for minor in MINORS]}


def root(req: ImageRequest) -> Answer:
    """Glance answers its root with 300 Multiple Choices."""
    return json_response(_versions(req), status=300)  # type: ignore[arg-type]


def versions(req: ImageRequest) -> Answer:
    return json_response(_versions(req))  # type: ignore[arg-type]


def schema(req: ImageRequest) -> Answer:
    build = SCHEMAS.get(req.params["name"])
    if build is None:
        raise NotFound(f"No schema {req.params['name']}; allowed: {', '.join(SCHEMAS)}.")
    return json_response(build())


def import_methods(req: ImageRequest) -> Answer:
    """Glance's discovery of the interoperable import methods: none is enabled here."""
    return json_response({"import-methods": {"description": "Import methods available.",
                                             "type": "array", "value": []}})
