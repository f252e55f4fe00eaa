"""os-services as each microversion shows a service: pure functions of its record and of
what the API worked out about it (up or down, its zone).

- 2.1: ``id`` (the integer), binary, host, zone, status, state, updated_at,
  disabled_reason;
- 2.11 (``SERVICE_FORCED_DOWN``): forced_down too;
- 2.53 (``SERVICE_UUIDS``): ``id`` is the service's uuid.

Nothing else: nova's clients (Tempest among them) hold these objects to exactly
these keys.
"""

from __future__ import annotations

from moorage.api.microversion import SERVICE_FORCED_DOWN, SERVICE_UUIDS, Version, at
from moorage.api.storage.services import ServiceRecord
from moorage.jsonvalue import JSONValue
from moorage.scheduler.host_filters import DEFAULT_AVAILABILITY_ZONE


def service_view(service: ServiceRecord, *, up: bool, zone: str, version: Version
                 ) -> dict[str, JSONValue]:
    """A service in the shape ``version`` shows."""
    view: dict[str, JSONValue] = {
        "id": service.uuid if at(version, SERVICE_UUIDS) else service.id,
        "binary": service.binary,
        "host": service.host,
        "zone": zone,
        "status": "disabled" if service.disabled else "enabled",
        "state": "up" if up else "down",
        # When the agent last reported (nova's servicegroup updated time).
        "updated_at": service.updated_at.isoformat() if service.updated_at else None,
        "disabled_reason": service.disabled_reason,
    }
    if at(version, SERVICE_FORCED_DOWN):
        view["forced_down"] = service.forced_down
    return view


def zone_of_host(zones: dict[str, str], host: str) -> str:
    """A service's zone as nova shows it: its aggregates' zones
    (``moorage.api.availability_zones.host_zones``), or
    the default zone for a host in none."""
    return zones.get(host, DEFAULT_AVAILABILITY_ZONE)
