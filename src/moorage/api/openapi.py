"""The OpenAPI 3 document of the compute API, built from the route table so that it
lists every route there is: each operation's summary is its handler's docstring, its
path parameters come from the URL template, and the request body of each write has
the schema dispatch validates it with (``moorage.api.schemas``): OpenAPI 3.1, whose
schemas are JSON Schema 2020-12, so the document's schema is the validator's."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import moorage
from moorage.api import microversion
from moorage.api.http import ApiRequest, Handler, json_response
from moorage.api.schemas import QUERY_PARAMETERS, REQUEST_SCHEMAS
from moorage.web import Response

_OBJECT: dict[str, Any] = {"type": "object"}

_ERROR = {"description": "An error: {\"<fault name>\": {\"code\", \"message\"}}",
          "content": {"application/json": {"schema": _OBJECT}}}


def _operation(method: str, template: str, handler: Handler) -> dict[str, Any]:
    doc = (handler.__doc__ or handler.__name__).strip()
    summary = " ".join(doc.split("\n\n")[0].split())
    module = handler.__module__.rsplit(".", 1)[-1]
    operation: dict[str, Any] = {
        "operationId": handler.__name__,
        "summary": summary,
        "tags": [module],
        "responses": {
            "200": {"description": "Success (201, 202 or 204 where noted by nova)",
                    "content": {"application/json": {"schema": _OBJECT}}},
            "default": _ERROR,
        },
    }
    parameters = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
                  for n in re.findall(r"\{(\w+)\}", template)]
    parameters += [{"name": n, "in": "query", "required": False, "schema": schema}
                   for n, schema in QUERY_PARAMETERS.get(handler.__name__, {}).items()]
    if parameters:
        operation["parameters"] = parameters
    schema = REQUEST_SCHEMAS.get(handler.__name__)
    if schema is not None and method in ("POST", "PUT", "PATCH"):
        operation["requestBody"] = {"required": True,
                                    "content": {"application/json": {"schema": schema}}}
    return operation


def build_document(routes: Mapping[str, Mapping[str, Handler]]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``routes``."""
    paths = {
        template or "/": {method.lower(): _operation(method, template, handler)
                          for method, handler in methods.items()}
        for template, methods in routes.items() if template
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "Moorage compute API", "version": moorage.__version__,
                 "description": "Nova's shapes for flavors, images, servers, services, "
                 "hypervisors and aggregates. Authenticate with X-Auth-Token."},
        "components": {"securitySchemes": {
            "token": {"type": "apiKey", "in": "header", "name": "X-Auth-Token"},
            "service_token": {"type": "apiKey", "in": "header", "name": "X-Service-Token"}}},
        "security": [{"token": []}],
        # What each compute microversion changes (moorage.api.microversion.GATES).
        "x-openstack-microversions": {
            "header": f"{microversion.HEADER}: {microversion.SERVICE_TYPE} X.Y",
            "min": str(microversion.MIN_VERSION), "max": str(microversion.MAX_VERSION),
            "changes": microversion.document()},
        "paths": paths,
    }


def serving(routes: Callable[[], Mapping[str, Mapping[str, Handler]]]) -> Handler:
    """The handler of /openapi.json for the table ``routes`` returns: a callable, read at
    each request, because the table lists this very handler (so the route table imports
    this module, and not the other way round)."""

    def show_openapi(req: ApiRequest) -> Response:
        """This document."""
        return json_response(build_document(routes()))

    return show_openapi
