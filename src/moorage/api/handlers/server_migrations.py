"""A server's live migrations in progress (``/servers/{id}/migrations``, from 2.23), as
nova lists them: Moorage makes no live migration (its moves are cold: resize,
migrate, evacuate, which ``/os-migrations`` lists), so the list is empty and a
migration asked for by id is nova's 404. novaclient's ``server-migration-list`` and
openstacksdk's ``compute.server_migrations`` read it; a bare 404 told them the server
was missing.
"""

from __future__ import annotations

from moorage.api import microversion as mv
from moorage.api.errors import NotFound
from moorage.api.handlers.server_records import server_or_404, target
from moorage.api.http import ApiRequest, json_response
from moorage.web import Response

RULE = "os_compute_api:servers:migrations:"


def _authorized(req: ApiRequest, rule: str) -> str:
    if not req.at(mv.SERVER_MIGRATIONS):
        raise NotFound("The resource could not be found.")
    uuid = req.params["server_id"]
    req.authorize(RULE + rule, target(server_or_404(req, uuid)))
    return uuid


def list_server_migrations(req: ApiRequest) -> Response:
    """The server's live migrations in progress: none."""
    _authorized(req, "index")
    return json_response({"migrations": []})


def show_server_migration(req: ApiRequest) -> Response:
    uuid = _authorized(req, "show")
    raise NotFound(f"In-progress live migration {req.params['migration_id']} is not "
                   f"found for server {uuid}.")
