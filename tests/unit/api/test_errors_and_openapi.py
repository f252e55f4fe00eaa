"""Nova-style error bodies, and the OpenAPI document built from the route table."""

from __future__ import annotations

import json

from moorage.api.errors import BadRequest, Conflict, Forbidden, NotFound
from moorage.api.openapi import build_document
from moorage.api.routes import ROUTES


def test_errors_render_nova_fault_bodies() -> None:
    assert json.loads(BadRequest("bad").body()) == {"badRequest": {"code": 400,
                                                                   "message": "bad"}}
    assert json.loads(NotFound("gone").body()) == {"itemNotFound": {"code": 404,
                                                                    "message": "gone"}}
    assert json.loads(Conflict("c").body())["conflictingRequest"]["code"] == 409
    assert json.loads(Forbidden("f").body())["forbidden"]["code"] == 403


def test_openapi_document_is_openapi_3_and_lists_every_route() -> None:
    document = build_document(ROUTES)
    assert document["openapi"].startswith("3.")
    assert document["info"]["title"]
    for template, methods in ROUTES.items():
        operations = document["paths"][template or "/"]
        assert set(operations) == {m.lower() for m in methods}, template
        for method, operation in operations.items():
            assert operation["operationId"], (template, method)
            assert operation["summary"], (template, method)
            assert "responses" in operation
            declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
            assert declared == set(__import__("re").findall(r"\{(\w+)\}", template))


def test_openapi_writes_have_request_schemas() -> None:
    document = build_document(ROUTES)
    create = document["paths"]["/v2.1/flavors"]["post"]
    schema = create["requestBody"]["content"]["application/json"]["schema"]
    assert schema["properties"]["flavor"]["required"] == ["name", "ram", "vcpus", "disk"]


def test_route_table_includes_the_servers_handlers() -> None:
    names = {h.__name__ for methods in ROUTES.values() for h in methods.values()}
    assert {"list_servers", "list_servers_detail", "create_server", "show_server",
            "delete_server", "server_action", "list_migrations"} <= names
