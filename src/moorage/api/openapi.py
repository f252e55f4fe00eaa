"""The OpenAPI 3 document of the compute API, built from the route table so that it
lists every route there is: each operation's summary is its handler's docstring, its
path parameters come from the URL template, and request bodies of the writes carry
a short schema."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import moorage
from moorage.api.http import ApiRequest, Handler, json_response
from moorage.web import Response

_OBJECT: dict[str, Any] = {"type": "object"}

# Request body schemas of the writes, by handler name (short: the handlers validate).
REQUEST_SCHEMAS: dict[str, dict[str, Any]] = {
    "create_flavor": {"type": "object", "required": ["flavor"], "properties": {"flavor": {
        "type": "object", "required": ["name", "ram", "vcpus", "disk"], "properties": {
            "name": {"type": "string"}, "id": {"type": "string"},
            "ram": {"type": "integer", "minimum": 1}, "vcpus": {"type": "integer", "minimum": 1},
            "disk": {"type": "integer", "minimum": 0},
            "OS-FLV-EXT-DATA:ephemeral": {"type": "integer", "minimum": 0},
            "swap": {"type": "integer", "minimum": 0},
            "os-flavor-access:is_public": {"type": "boolean"},
            "description": {"type": "string"},
            "extra_specs": {"type": "object", "additionalProperties": {"type": "string"}}}}}},
    "create_extra_specs": {"type": "object", "required": ["extra_specs"], "properties": {
        "extra_specs": {"type": "object", "additionalProperties": {"type": "string"}}}},
    "update_extra_spec": {"type": "object", "additionalProperties": {"type": "string"}},
    "create_image": {"type": "object", "required": ["name"], "properties": {
        "id": {"type": "string"}, "name": {"type": "string"},
        "disk_format": {"type": "string", "enum": ["ami", "ari", "aki", "vhd", "vhdx", "vmdk",
                                                   "raw", "qcow2", "vdi", "iso", "ploop"]},
        "container_format": {"type": "string"}, "min_disk": {"type": "integer"},
        "min_ram": {"type": "integer"}, "visibility": {"type": "string"},
        "properties": {"type": "object", "additionalProperties": {"type": "string"}}}},
    "update_image": {"type": "object", "description": "A JSON merge patch of the image."},
    "update_service": {"type": "object", "properties": {
        "status": {"type": "string", "enum": ["enabled", "disabled"]},
        "disabled_reason": {"type": "string"}, "forced_down": {"type": "boolean"}}},
    "heartbeat": {"type": "object", "required": ["driver", "nodes"], "properties": {
        "binary": {"type": "string"}, "driver": {"type": "string"},
        "nodes": {"type": "array", "items": {"type": "string"}},
        "agent_url": {"type": "string"},
        "supported_instances": {"type": "array", "items": {
            "type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3}},
        "hypervisor_version": {"type": "integer"}, "version": {"type": "string"}}},
    "create_aggregate": {"type": "object", "required": ["aggregate"], "properties": {
        "aggregate": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"}, "availability_zone": {"type": ["string", "null"]}}}}},
    "update_aggregate": {"type": "object", "required": ["aggregate"]},
    "aggregate_action": {"type": "object", "description":
                         "One of add_host {host}, remove_host {host}, set_metadata {metadata}."},
    "create_server": {"type": "object", "required": ["server"]},
    "server_action": {"type": "object", "description": "One action: rebuild, resize, "
                      "confirmResize, revertResize, migrate, evacuate."},
}

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
    names = re.findall(r"\{(\w+)\}", template)
    if names:
        operation["parameters"] = [{"name": n, "in": "path", "required": True,
                                    "schema": {"type": "string"}} for n in names]
    schema = REQUEST_SCHEMAS.get(handler.__name__)
    if schema is not None and method in ("POST", "PUT", "PATCH"):
        operation["requestBody"] = {"required": True,
                                    "content": {"application/json": {"schema": schema}}}
    return operation


def build_document(routes: Mapping[str, Mapping[str, Handler]]) -> dict[str, Any]:
    """The OpenAPI 3.0 document of ``routes``."""
    paths = {
        template or "/": {method.lower(): _operation(method, template, handler)
                          for method, handler in methods.items()}
        for template, methods in routes.items() if template
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "Moorage compute API", "version": moorage.__version__,
                 "description": "Nova's shapes for flavors, images, servers, services, "
                 "hypervisors and aggregates. Authenticate with X-Auth-Token."},
        "components": {"securitySchemes": {
            "token": {"type": "apiKey", "in": "header", "name": "X-Auth-Token"},
            "service_token": {"type": "apiKey", "in": "header", "name": "X-Service-Token"}}},
        "security": [{"token": []}],
        "paths": paths,
    }


def show_openapi(req: ApiRequest) -> Response:
    """This document."""
    from moorage.api.routes import ROUTES

    return json_response(build_document(ROUTES))
