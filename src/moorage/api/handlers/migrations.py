"""Moves of servers (``GET /os-migrations``), in the shape of the microversion asked for.

What changes with the version (``moorage.api.microversion``): ``migration_type`` from
2.23; from 2.59 the ``uuid``, newest first a page at a time (``limit``, ``marker``,
``changes-since``, and ``migrations_links``), and a parameter the version does not
know is a 400; ``changes-before`` from 2.66; who asked for the move (``user_id``,
``project_id``, and filters on them) from 2.80.

Every value is the lifecycle store's (``MigrationRecord``). Where Moorage keeps no
such fact, the field says what nova says when it has none, null, and the view says
why beside it.
"""

from __future__ import annotations

from moorage.api.errors import BadRequest
from moorage.api.handlers.common import TRUE_WORDS, changes_window, once, only_known
from moorage.api.handlers.paging import page_body, page_limit
from moorage.api.http import ApiRequest, json_response
from moorage.api.microversion import (
    MIGRATION_CHANGES_BEFORE,
    MIGRATION_OWNER,
    MIGRATION_PAGING,
    MIGRATION_TYPE,
)
from moorage.api.timestamps import nova_time
from moorage.jsonvalue import JSONValue
from moorage.lifecycle import store
from moorage.lifecycle.records import MigrationRecord
from moorage.web import Response

View = dict[str, JSONValue]

# What each version reads (nova's query schemas). Below 2.59 nova's schema lets any
# parameter through and its query reads these filters, the requester's among them.
_FILTERS = ("hidden", "host", "instance_uuid", "source_compute", "status",
            "migration_type")
_OWNER = ("user_id", "project_id")
_PAGING = ("limit", "marker", "changes-since")
_BEFORE = ("changes-before",)


def _view(req: ApiRequest, migration: MigrationRecord) -> View:
    view: View = {
        "id": migration.id,
        "instance_uuid": migration.server_uuid,
        "source_compute": migration.source_host,
        "dest_compute": migration.dest_host,
        # Moorage records the hosts of a move, not their nodes, and not the address
        # nova's dest_host is (the destination's IP): null, as nova's before it knows.
        "source_node": None,
        "dest_node": None,
        "dest_host": None,
        # nova's flavors have a row id these name; Moorage's have only their API id,
        # which is no integer: null, as nova's for a move that recorded no flavor.
        "old_instance_type_id": None,
        "new_instance_type_id": None,
        "status": str(migration.status),
        "created_at": nova_time(migration.created_at),
        "updated_at": nova_time(migration.updated_at),
    }
    if req.at(MIGRATION_TYPE):
        # nova also links an in-progress live migration; Moorage makes none.
        view["migration_type"] = str(migration.kind)
    if req.at(MIGRATION_PAGING):
        view["uuid"] = migration.uuid
    if req.at(MIGRATION_OWNER):
        # None for a move recorded before Moorage kept who asked (as nova's).
        view["user_id"] = migration.user_id
        view["project_id"] = migration.project_id
    return view


def _known(req: ApiRequest) -> tuple[str, ...]:
    """The parameters a paged version (2.59 on) reads; any other is a 400."""
    known: tuple[str, ...] = _FILTERS + _PAGING
    if req.at(MIGRATION_CHANGES_BEFORE):
        known += _BEFORE
    if req.at(MIGRATION_OWNER):
        known += _OWNER
    return known


def _found(req: ApiRequest) -> list[MigrationRecord]:
    query = req.query
    paged = req.at(MIGRATION_PAGING)
    # From 2.59 nova takes these at most once; below, the last given.
    one = (lambda name: once(query, name)) if paged else query.get
    since = before = None
    marker: str | None = None
    limit: int | None = None  # below 2.59 nova answers every move, in no page
    if paged:
        only_known(query, _known(req))
        since, before = changes_window(
            query, before=req.at(MIGRATION_CHANGES_BEFORE))
        marker = one("marker")
        one("limit")
        limit = page_limit(query)
    if (query.get("hidden") or "").strip().lower() in TRUE_WORDS:
        return []  # Moorage hides no move; nova never shows the hidden ones
    owners = not paged or req.at(MIGRATION_OWNER)
    status, kind, host = query.get("status"), query.get("migration_type"), query.get("host")
    with req.state.database.reader() as conn:
        try:
            return store.list_migrations(
                conn, server_uuid=query.get("instance_uuid"),
                statuses=[status] if status is not None else None,
                kinds=[kind] if kind is not None else None,
                # nova reads source_compute only when no host is given
                host=host, source_host=query.get("source_compute") if host is None else None,
                user_id=one("user_id") if owners else None,
                project_id=one("project_id") if owners else None,
                changes_since=since, changes_before=before, limit=limit, marker=marker)
        except LookupError:
            raise BadRequest(f"Marker {marker} could not be found.") from None


def list_migrations(req: ApiRequest) -> Response:
    """List moves, newest first: cold migrations, resizes and evacuations (admin)."""
    req.authorize("os_compute_api:os-migrations:index")
    found = _found(req)
    last = found[-1].uuid if found and req.at(MIGRATION_PAGING) else None
    return json_response(page_body(req, "os-migrations", "migrations",
                                   [_view(req, m) for m in found], last))
