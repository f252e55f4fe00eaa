"""Host aggregates (``/os-aggregates``), mirrored into placement: the aggregate's uuid
is a placement aggregate holding the compute node providers of its hosts, so the
scheduler's aggregate request filters can ask placement for ``member_of``. The uuid
is shown from microversion 2.41, as nova shows it."""

from __future__ import annotations

import datetime

from moorage.api import placement_sync
from moorage.api.errors import BadRequest, NotFound
from moorage.api.handlers.common import database_id, string
from moorage.api.http import ApiRequest, json_response
from moorage.api.microversion import AGGREGATE_UUID
from moorage.api.storage import aggregates as store
from moorage.api.storage import services as service_store
from moorage.api.storage.aggregates import AggregateRecord
from moorage.jsonvalue import JSONValue
from moorage.web import Response


def _iso(moment: datetime.datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _view(req: ApiRequest, record: AggregateRecord) -> dict[str, JSONValue]:
    view: dict[str, JSONValue] = {
        "id": record.id, "name": record.name,
        "availability_zone": record.availability_zone, "hosts": list(record.hosts),
        "metadata": dict(record.metadata), "created_at": _iso(record.created_at),
        "updated_at": _iso(record.updated_at), "deleted": False, "deleted_at": None,
    }
    if req.at(AGGREGATE_UUID):
        view["uuid"] = record.uuid
    return view


def _aggregate_id(req: ApiRequest) -> int:
    ident = req.params["aggregate_id"]
    found = database_id(ident)
    if found is None:
        raise NotFound(f"Aggregate {ident} could not be found.")
    return found


def list_aggregates(req: ApiRequest) -> Response:
    """List host aggregates."""
    req.authorize("os_compute_api:os-aggregates:index")
    with req.state.database.reader() as conn:
        found = store.list_aggregates(conn)
    return json_response({"aggregates": [_view(req, r) for r in found]})


def create_aggregate(req: ApiRequest) -> Response:
    """Create an aggregate: {"aggregate": {"name", "availability_zone"}}."""
    req.authorize("os_compute_api:os-aggregates:create")
    body = req.json_object("aggregate")
    name = string(body, "name", required=True)
    assert name is not None
    zone = string(body, "availability_zone", allow_none=True)
    with req.state.database.writer() as writer:
        record = store.create_aggregate(writer.conn, name.strip(), zone)
    view = _view(req, record)
    # nova's answer to a create names neither hosts nor metadata (a new aggregate's
    # are empty); its other answers do.
    del view["hosts"], view["metadata"]
    return json_response({"aggregate": view})


def show_aggregate(req: ApiRequest) -> Response:
    """Show an aggregate with its hosts and metadata."""
    req.authorize("os_compute_api:os-aggregates:show")
    with req.state.database.reader() as conn:
        record = store.load_aggregate(conn, _aggregate_id(req))
    return json_response({"aggregate": _view(req, record)})


def update_aggregate(req: ApiRequest) -> Response:
    """Rename an aggregate or change its availability zone."""
    req.authorize("os_compute_api:os-aggregates:update")
    body = req.json_object("aggregate")
    if not body:
        raise BadRequest("Give name or availability_zone.")
    name = string(body, "name")
    zone = string(body, "availability_zone", allow_none=True)
    with req.state.database.writer() as writer:
        record = store.update_aggregate(writer.conn, _aggregate_id(req), name=name,
                                        availability_zone=zone,
                                        set_zone="availability_zone" in body)
    return json_response({"aggregate": _view(req, record)})


def delete_aggregate(req: ApiRequest) -> Response:
    """Delete an aggregate that has no hosts left."""
    req.authorize("os_compute_api:os-aggregates:delete")
    with req.state.database.writer() as writer:
        store.delete_aggregate(writer.conn, _aggregate_id(req))
    return Response(status=200)


def _nodes(req: ApiRequest, host: str) -> list[str]:
    """The provider names of a host: its service's nodes (404 for an unknown host)."""
    with req.state.database.reader() as conn:
        service = service_store.find_service_by_host(conn, host)
    if service is None:
        raise NotFound(f"Compute host {host} could not be found.")
    return service.nodes or [host]


def _host_argument(args: object, action: str) -> str:
    if not isinstance(args, dict):
        raise BadRequest(f"'{action}' must be an object with 'host'.")
    host = string(args, "host", required=True)
    assert host is not None
    return host


def aggregate_action(req: ApiRequest) -> Response:
    """add_host, remove_host or set_metadata, one per request."""
    body = req.json_object()
    aggregate_id = _aggregate_id(req)
    if len(body) != 1:
        raise BadRequest("Give exactly one action: add_host, remove_host or set_metadata.")
    action, args = next(iter(body.items()))
    if action == "add_host":
        req.authorize("os_compute_api:os-aggregates:add_host")
        host = _host_argument(args, action)
        nodes = _nodes(req, host)
        with req.state.database.writer() as writer:
            record = store.add_host(writer.conn, aggregate_id, host)
        placement_sync.set_membership(req.state.placement, nodes, record.uuid, member=True)
    elif action == "remove_host":
        req.authorize("os_compute_api:os-aggregates:remove_host")
        host = _host_argument(args, action)
        with req.state.database.writer() as writer:
            record = store.remove_host(writer.conn, aggregate_id, host)
        with req.state.database.reader() as conn:
            service = service_store.find_service_by_host(conn, host)
        nodes = service.nodes if service is not None and service.nodes else [host]
        placement_sync.set_membership(req.state.placement, nodes, record.uuid, member=False)
    elif action == "set_metadata":
        req.authorize("os_compute_api:os-aggregates:set_metadata")
        if not isinstance(args, dict) or not isinstance(args.get("metadata"), dict):
            raise BadRequest("'set_metadata' must be an object with a 'metadata' object.")
        metadata = args["metadata"]
        for key, value in metadata.items():
            if not 1 <= len(key) <= 255 or (value is not None and (
                    not isinstance(value, str) or len(value) > 255)):
                raise BadRequest(f"Invalid metadata {key!r}: keys are 1 to 255 characters, "
                                 "values strings of at most 255 characters or null.")
        with req.state.database.writer() as writer:
            record = store.set_metadata(writer.conn, aggregate_id, metadata)
    else:
        raise BadRequest(f"Unknown action {action!r}; allowed: add_host, remove_host, "
                         "set_metadata.")
    return json_response({"aggregate": _view(req, record)})
