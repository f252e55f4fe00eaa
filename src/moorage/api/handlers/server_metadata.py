"""A server's metadata (``/servers/{id}/metadata[/{key}]``), in nova's shapes.

POST merges the keys given into the metadata, PUT replaces it whole; a key's own PUT
and DELETE change one key. Writes are refused (409) unless the server is where nova
takes metadata (``machine.METADATA_WRITE``), beyond the metadata_items quota (403), and
go through ``server_records.rewrite``'s compare-and-set, so that concurrent writers of
different keys all keep theirs. The bodies' keys and values are checked by their
schemas (``moorage.api.schemas``) before a handler runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from moorage.api.errors import BadRequest, Forbidden, NotFound
from moorage.api.handlers.server_records import rewrite, server_or_404, target
from moorage.api.http import ApiRequest, json_response, no_content
from moorage.api.quotas import engine
from moorage.lifecycle.machine import METADATA_WRITE
from moorage.lifecycle.records import ServerRecord
from moorage.web import Response

RULE = "os_compute_api:server-metadata:"


def _metadata(req: ApiRequest, rule: str) -> Mapping[str, str]:
    record = server_or_404(req, req.params["server_id"])
    req.authorize(RULE + rule, target(record))
    return record.attributes.metadata


def _write(req: ApiRequest, rule: str, action: str, metadata: Mapping[str, str], *,
           replace: bool) -> ServerRecord:
    """Merge ``metadata`` into the server's (or replace it), within the caller's
    project's metadata_items quota (nova checks the caller's)."""
    with req.state.database.reader() as conn:
        limit = engine.metadata_items_limit(conn, req.state.conf,
                                            req.context.project_id or "", req.context.user_id)

    def change(record: ServerRecord) -> ServerRecord:
        merged = dict(metadata) if replace else {**record.attributes.metadata, **metadata}
        try:
            engine.check_metadata_items(limit, len(merged))
        except engine.OverQuota as refusal:
            raise Forbidden(str(refusal)) from None
        return dataclasses.replace(record, attributes=dataclasses.replace(
            record.attributes, metadata=merged))

    return rewrite(req, req.params["server_id"], RULE + rule, change,
                   precondition=METADATA_WRITE, action=action, lockable=True)


def list_server_metadata(req: ApiRequest) -> Response:
    """List a server's metadata."""
    return json_response({"metadata": dict(_metadata(req, "index"))})


def create_server_metadata(req: ApiRequest) -> Response:
    """Add or change the metadata items given, keeping the others (200, as nova)."""
    metadata = req.json_object("metadata")
    record = _write(req, "create", "update metadata", metadata, replace=False)
    return json_response({"metadata": dict(record.attributes.metadata)})


def replace_server_metadata(req: ApiRequest) -> Response:
    """Replace a server's metadata with the items given."""
    metadata = req.json_object("metadata")
    record = _write(req, "update_all", "update metadata", metadata, replace=True)
    return json_response({"metadata": dict(record.attributes.metadata)})


def show_server_metadata_item(req: ApiRequest) -> Response:
    """Show one metadata item."""
    key = req.params["key"]
    metadata = _metadata(req, "show")
    if key not in metadata:
        raise NotFound("Metadata item was not found")
    return json_response({"meta": {key: metadata[key]}})


def update_server_metadata_item(req: ApiRequest) -> Response:
    """Create or replace one metadata item; the body's key is the URL's."""
    key = req.params["key"]
    meta = req.json_object("meta")
    record = server_or_404(req, req.params["server_id"])
    req.authorize(RULE + "update", target(record))
    if key not in meta:
        raise BadRequest(f"Request body and URI mismatch: the URI names {key!r}, the "
                         f"body {', '.join(repr(k) for k in meta)}.")
    _write(req, "update", "update metadata", meta, replace=False)
    return json_response({"meta": dict(meta)})


def delete_server_metadata_item(req: ApiRequest) -> Response:
    """Delete one metadata item (204)."""
    key = req.params["key"]
    if key not in _metadata(req, "delete"):  # nova says so before it checks the state
        raise NotFound("Metadata item was not found")

    def change(record: ServerRecord) -> ServerRecord:
        if key not in record.attributes.metadata:
            raise NotFound("Metadata item was not found")
        kept = {k: v for k, v in record.attributes.metadata.items() if k != key}
        return dataclasses.replace(record, attributes=dataclasses.replace(
            record.attributes, metadata=kept))

    rewrite(req, req.params["server_id"], RULE + "delete", change,
            precondition=METADATA_WRITE, action="delete metadata", lockable=True)
    return no_content()
