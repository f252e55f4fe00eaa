"""A server's tags (``/servers/{id}/tags[/{tag}]``, from microversion 2.26), in nova's
shapes and status codes.

A tag is 1 to 60 characters without ',' or '/'; a server has at most 50. Writes are
refused (409) unless the server is where nova takes tags (``machine.TAGS_WRITE``), and
go through ``server_records.rewrite``'s compare-and-set, which keeps the
``server_tags`` rows that list filters read in step with the server's attributes.
Before 2.26 the routes do not exist (404), as in nova.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from urllib.parse import quote

from moorage.api import microversion as mv
from moorage.api.errors import BadRequest, NotFound
from moorage.api.handlers.server_records import rewrite, server_or_404, target
from moorage.api.http import ApiRequest, json_response, no_content
from moorage.lifecycle.attributes import TAG_FORBIDDEN, TAG_LENGTH_MAX, TAGS_MAX
from moorage.lifecycle.machine import TAGS_WRITE
from moorage.lifecycle.records import ServerRecord
from moorage.web import Response

RULE = "os_compute_api:os-server-tags:"


def _server(req: ApiRequest, rule: str) -> ServerRecord:
    if not req.at(mv.SERVER_TAGS):
        raise NotFound("The resource could not be found.")
    record = server_or_404(req, req.params["server_id"])
    req.authorize(RULE + rule, target(record))
    return record


def _retagged(record: ServerRecord, tags: Sequence[str]) -> ServerRecord:
    return dataclasses.replace(record, attributes=dataclasses.replace(
        record.attributes, tags=tuple(dict.fromkeys(tags))))


def _retag(req: ApiRequest, rule: str, action: str, tags: Sequence[str]) -> ServerRecord:
    return rewrite(req, req.params["server_id"], RULE + rule,
                   lambda record: _retagged(record, tags),
                   precondition=TAGS_WRITE, action=action)


def invalid_tag(tag: str) -> str | None:
    """Why ``tag`` is not one (nova's parameter_types.tag), or None."""
    if not tag:
        return "it is empty"
    if len(tag) > TAG_LENGTH_MAX:
        return f"it is longer than {TAG_LENGTH_MAX} characters"
    found = [c for c in TAG_FORBIDDEN if c in tag]
    return f"it contains {found[0]!r}" if found else None


def list_server_tags(req: ApiRequest) -> Response:
    """List a server's tags."""
    return json_response({"tags": list(_server(req, "index").attributes.tags)})


def replace_server_tags(req: ApiRequest) -> Response:
    """Replace a server's tags with the list given (at most 50)."""
    _server(req, "update_all")  # before 2.26: 404, whatever the body
    record = _retag(req, "update_all", "update tags", req.json_object()["tags"])
    return json_response({"tags": list(record.attributes.tags)})


def delete_server_tags(req: ApiRequest) -> Response:
    """Delete all of a server's tags (204)."""
    _server(req, "delete_all")
    _retag(req, "delete_all", "delete tags", ())
    return no_content()


def check_server_tag(req: ApiRequest) -> Response:
    """204 if the server has the tag, 404 if not."""
    tag = req.params["tag"]
    if tag not in _server(req, "show").attributes.tags:
        raise NotFound(f"Server {req.params['server_id']} has no tag '{tag}'")
    return no_content()


def add_server_tag(req: ApiRequest) -> Response:
    """Add one tag: 201 with its Location, or 204 if the server had it."""
    uuid, tag = req.params["server_id"], req.params["tag"]
    _server(req, "update")
    had = False

    def change(record: ServerRecord) -> ServerRecord:
        nonlocal had
        why = invalid_tag(tag)
        if why is not None:
            raise BadRequest(f"Tag '{tag}' is invalid: {why}. It must be a non empty "
                             f"string of at most {TAG_LENGTH_MAX} characters without "
                             "characters '/' and ','.")
        tags = record.attributes.tags
        if len(tags) >= TAGS_MAX:
            raise BadRequest(f"The number of tags exceeded the per-server limit {TAGS_MAX}")
        had = tag in tags
        return record if had else _retagged(record, (*tags, tag))

    rewrite(req, uuid, RULE + "update", change, precondition=TAGS_WRITE,
            action="update tag")
    # Tempest's schema wants the Location of either answer.
    location = [("Location", req.absolute_url(
        f"/v2.1/servers/{quote(uuid, safe='')}/tags/{quote(tag, safe='')}"))]
    return Response(status=204 if had else 201, headers=location)


def delete_server_tag(req: ApiRequest) -> Response:
    """Delete one tag (204); 404 if the server does not have it."""
    uuid, tag = req.params["server_id"], req.params["tag"]
    _server(req, "delete")

    def change(record: ServerRecord) -> ServerRecord:
        if tag not in record.attributes.tags:
            raise NotFound(f"Instance {uuid} has no tag '{tag}'")
        return _retagged(record, [t for t in record.attributes.tags if t != tag])

    rewrite(req, uuid, RULE + "delete", change, precondition=TAGS_WRITE,
            action="delete tag")
    return no_content()
