"""Compute services, the operator's view (``/os-services``) in every microversion's shape:
list them, enable, disable or force one down, forget one. How a request names the
service and what its body says are per version (``service_changes``), as is the
shape of a service (``service_views``). The agents' own route is ``heartbeats``."""

from __future__ import annotations

import logging

from moorage.api import availability_zones, microversion
from moorage.api.errors import BadRequest, Conflict, NotFound
from moorage.api.handlers import service_changes, service_views
from moorage.api.handlers.common import MAX_ID, only_known
from moorage.api.handlers.path_ids import integer_id, uuid_id
from moorage.api.http import ApiRequest, json_response, no_content
from moorage.api.storage import compute_nodes
from moorage.api.storage import services as store
from moorage.api.storage.services import OperatorChange, ServiceRecord
from moorage.compute.client import AgentUnreachable
from moorage.jsonvalue import JSONValue
from moorage.web import Response

LOG = logging.getLogger(__name__)

# A Moorage header on the answer to a change of status: whether the agent was told at
# once (true) or will be by its next heartbeat (false). A header, so that the body
# stays the object nova's clients check key by key.
AGENT_NOTIFIED = "X-Moorage-Agent-Notified"


def _view(req: ApiRequest, service: ServiceRecord,
          zones: dict[str, str] | None = None) -> dict[str, JSONValue]:
    if zones is None:
        zones = availability_zones.host_zones(req.state.catalog.aggregates())
    return service_views.service_view(
        service, up=service.is_up(float(req.state.conf.service_down_time)),
        zone=service_views.zone_of_host(zones, service.host), version=req.version)


def list_services(req: ApiRequest) -> Response:
    """List compute services with their state (up/down) and status (enabled/disabled),
    filtered by host and binary."""
    req.authorize("os_compute_api:os-services:list")
    if req.at(microversion.SERVICE_QUERY_STRICT):
        only_known(req.query, ("host", "binary"))
    with req.state.database.reader() as conn:
        # nova's filters: an empty value filters nothing.
        found = store.list_services(conn, host=req.query.get("host") or None,
                                    binary=req.query.get("binary") or None)
    zones = availability_zones.host_zones(req.state.catalog.aggregates())
    return json_response({"services": [_view(req, s, zones) for s in found]})


def _change(req: ApiRequest, service_id: int, change: OperatorChange
            ) -> tuple[ServiceRecord, list[tuple[str, str]]]:
    """Apply ``change``; tell the agent at once when its status changed (the header
    says whether it answered)."""
    with req.state.database.writer() as writer:
        before = store.load_service(writer.conn, service_id)
        service = store.update_service(writer.conn, service_id, change)
    if before.disabled == service.disabled or req.state.agents is None:
        return service, []
    try:
        req.state.agents.set_disabled(service.host, service.disabled)
    except AgentUnreachable as exc:
        LOG.warning("agent of %s not told it is %s now (%s); its next heartbeat will "
                    "carry it", service.host,
                    "disabled" if service.disabled else "enabled", exc)
        return service, [(AGENT_NOTIFIED, "false")]
    return service, [(AGENT_NOTIFIED, "true")]


def update_service(req: ApiRequest) -> Response:
    """Enable, disable or force down a compute service. Before 2.53 the path names the
    action (enable, disable, disable-log-reason, force-down from 2.11) and the body the
    service (host, binary); from 2.53 the path is the service's uuid and the body says
    what changes (status, disabled_reason, forced_down)."""
    req.authorize("os_compute_api:os-services:update")
    body = req.json_object()
    service_changes.check_body(body, req.version)
    if not req.at(microversion.SERVICE_UUIDS):
        request = service_changes.action_request(req.params["service_id"], body,
                                                 req.version)
        with req.state.database.reader() as conn:
            found = store.find_service_by_host_and_binary(conn, request.host, request.binary)
        if found is None:
            raise NotFound(f"Could not find binary {request.binary} on host "
                           f"{request.host}.")
        _, headers = _change(req, found.id, request.change)
        return json_response({"service": service_changes.action_answer(request)},
                             headers=headers)
    service_uuid = _uuid_of(req.params["service_id"])
    change = service_changes.change_of(body)
    with req.state.database.reader() as conn:
        found = store.load_service_by_uuid(conn, service_uuid)
    service, headers = _change(req, found.id, change)
    return json_response({"service": _view(req, service)}, headers=headers)


def _uuid_of(text: str) -> str:
    found = uuid_id(text)
    if found is None:
        raise BadRequest(f"Invalid uuid {text}")
    return found


def _service_of_path(req: ApiRequest) -> ServiceRecord:
    """The service the path names: by uuid from 2.53, by integer id before."""
    text = req.params["service_id"]
    with req.state.database.reader() as conn:
        if req.at(microversion.SERVICE_UUIDS):
            return store.load_service_by_uuid(conn, _uuid_of(text))
        number = integer_id(text)
        if number is None:
            raise BadRequest(f"Invalid input received: id must be an integer, not {text!r}.")
        if not 0 < number <= MAX_ID:
            raise NotFound(f"Service {number} could not be found.")
        return store.load_service(conn, number)


def delete_service(req: ApiRequest) -> Response:
    """Forget a compute service and its nodes (its agent registers again if it
    heart-beats again). Refused while servers are on its host, as nova refuses."""
    req.authorize("os_compute_api:os-services:delete")
    service = _service_of_path(req)
    with req.state.database.writer() as writer:
        if compute_nodes.hosted_servers(writer.conn, [service.host]):
            raise Conflict("Unable to delete compute service that is hosting instances. "
                           "Migrate or delete the instances first.")
        store.delete_service(writer.conn, service.id)
    return no_content()
