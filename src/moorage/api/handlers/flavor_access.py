"""Which projects a private flavor is shared with (``/flavors/{id}/os-flavor-access``,
and the ``addTenantAccess``/``removeTenantAccess`` actions), in nova's shapes.

A project a flavor is shared with sees it, lists it and boots from it as if it were
public (``lookups.flavor_visible``). The project ids are taken as given: Moorage asks
no identity service whether a project exists.
"""

from __future__ import annotations

from moorage.api.errors import Conflict, NotFound
from moorage.api.handlers.flavors import visible_flavor
from moorage.api.http import ApiRequest, json_response
from moorage.api.microversion import FLAVOR_ACCESS_PUBLIC_REFUSED
from moorage.api.storage import flavors as store
from moorage.api.storage.flavors import FlavorRecord
from moorage.web import Response


def _access(record: FlavorRecord) -> Response:
    return json_response({"flavor_access": [
        {"flavor_id": record.id, "tenant_id": project} for project in record.projects]})


def list_flavor_access(req: ApiRequest) -> Response:
    """The projects a private flavor is shared with (admin); a public flavor has no such
    list (404, as nova)."""
    req.authorize("os_compute_api:os-flavor-access")
    record = visible_flavor(req)
    if record.is_public:
        raise NotFound("Access list not available for public flavors.")
    return _access(record)


def flavor_action(req: ApiRequest) -> Response:
    """addTenantAccess or removeTenantAccess: {"addTenantAccess": {"tenant": id}}."""
    [(action, argument)] = req.json_object().items()  # the schema allows exactly one
    project = str(argument["tenant"])
    flavor_id = req.params["flavor_id"]
    if action == "addTenantAccess":
        req.authorize("os_compute_api:os-flavor-access:add_tenant_access")
        if req.at(FLAVOR_ACCESS_PUBLIC_REFUSED) and visible_flavor(req).is_public:
            raise Conflict("Can not add access to a public flavor.")
        with req.state.database.writer() as writer:
            record = store.add_access(writer.conn, flavor_id, project)
    else:
        req.authorize("os_compute_api:os-flavor-access:remove_tenant_access")
        with req.state.database.writer() as writer:
            record = store.remove_access(writer.conn, flavor_id, project)
    return _access(record)
