"""Availability zones (``/os-availability-zone``): which zones a server may ask for, for
anyone; with each zone's hosts and the state of their services, for admins. The zones
are computed as ``moorage.api.availability_zones`` says, from the compute services and
the aggregates the scheduler reads."""

from __future__ import annotations

from moorage.api.availability_zones import Zone, availability_zones
from moorage.api.http import ApiRequest, json_response
from moorage.api.storage import services as service_store
from moorage.api.timestamps import nova_time
from moorage.db.clock import utcnow
from moorage.jsonvalue import JSONValue
from moorage.web import Response


def _zones(req: ApiRequest) -> list[Zone]:
    with req.state.database.reader() as conn:
        services = service_store.list_services(conn)
    return availability_zones(services, req.state.catalog.aggregates(),
                              down_after=float(req.state.conf.service_down_time),
                              now=utcnow())


def _hosts(zone: Zone) -> JSONValue:
    if zone.hosts is None:
        return None
    return {host: {binary: {"available": state.available, "active": state.active,
                            "updated_at": nova_time(state.updated_at)}
                   for binary, state in services.items()}
            for host, services in zone.hosts.items()}


def list_availability_zones(req: ApiRequest) -> Response:
    """List the availability zones, and whether each is available (no hosts)."""
    req.authorize("os_compute_api:os-availability-zone:list", {})
    return json_response({"availabilityZoneInfo": [
        {"zoneName": zone.name, "zoneState": {"available": zone.available}, "hosts": None}
        for zone in _zones(req)]})


def list_availability_zones_detail(req: ApiRequest) -> Response:
    """List the availability zones with their hosts and the state of each host's
    services (available: up, active: enabled, updated_at: the last heartbeat)."""
    req.authorize("os_compute_api:os-availability-zone:detail", {})
    return json_response({"availabilityZoneInfo": [
        {"zoneName": zone.name, "zoneState": {"available": zone.available},
         "hosts": _hosts(zone)}
        for zone in _zones(req)]})
