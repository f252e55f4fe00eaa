"""Availability zones as nova lists them (``GET /os-availability-zone``): the zones the
compute services are in, and whether each has a service enabled.

Where a zone comes from: a host is in the availability zone of its aggregates (nova joins
several with commas; Moorage's aggregates refuse a host a second zone, so it is one), or,
in none, in the default zone, "nova" (``DEFAULT_AVAILABILITY_ZONE``: the zone the
AvailabilityZoneFilter places such a host in, so the listing and the scheduler agree). A
zone is listed when a service is in it, as in nova: an aggregate's zone without a
service is not. A zone with a service enabled is available; one whose services are all
disabled is listed after the available ones, unavailable, without hosts.

No internal zone: nova puts its own services (conductor, scheduler...) in
``internal_service_availability_zone`` and shows it in the detail. Moorage's conductor
and scheduler run inside the compute API and register no service; the services table
holds the compute agents only, so such a zone would hold nothing, and none is listed.
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from moorage.api.storage.services import ServiceRecord
from moorage.scheduler.host_filters import DEFAULT_AVAILABILITY_ZONE
from moorage.scheduler.request_filters import zone_of
from moorage.scheduler.types import Aggregate


@dataclass(frozen=True)
class ServiceState:
    """A service as the detail shows it under its host: heart-beating and not forced
    down (``available``), enabled (``active``), and its last heartbeat."""

    available: bool
    active: bool
    updated_at: datetime.datetime | None


@dataclass(frozen=True)
class Zone:
    """A zone as listed: its hosts' enabled services by host and binary (None for an
    unavailable zone, as nova answers)."""

    name: str
    available: bool
    hosts: Mapping[str, Mapping[str, ServiceState]] | None


def zone_of_host(aggregates: Collection[Aggregate],
                 default_zone: str = DEFAULT_AVAILABILITY_ZONE) -> str:
    """The zone of a host in ``aggregates`` (the host's own aggregates), or the default
    zone for a host in none: what nova shows as a server's
    ``OS-EXT-AZ:availability_zone`` once the server has a host."""
    if not aggregates:  # most hosts of most clouds: nothing to look at
        return default_zone
    names = sorted({zone for aggregate in aggregates if (zone := zone_of(aggregate))})
    return ",".join(names) or default_zone


def host_zones(aggregates: Iterable[Aggregate]) -> dict[str, str]:
    """host -> its zone, for the hosts of an availability-zone aggregate."""
    zones: dict[str, set[str]] = {}
    for aggregate in aggregates:
        zone = zone_of(aggregate)
        if zone:
            for host in aggregate.hosts:
                zones.setdefault(host, set()).add(zone)
    return {host: ",".join(sorted(names)) for host, names in zones.items()}


def availability_zones(services: Sequence[ServiceRecord], aggregates: Iterable[Aggregate],
                       *, down_after: float, now: datetime.datetime,
                       default_zone: str = DEFAULT_AVAILABILITY_ZONE) -> list[Zone]:
    """The zones of ``services``, available ones first, each group by name."""
    zone_by_host = host_zones(aggregates)
    enabled: dict[str, dict[str, dict[str, ServiceState]]] = {}
    disabled: set[str] = set()
    for service in services:
        zone = zone_by_host.get(service.host, default_zone)
        if service.disabled:
            disabled.add(zone)
            continue
        enabled.setdefault(zone, {}).setdefault(service.host, {})[service.binary] = (
            ServiceState(available=service.is_up(down_after, now), active=True,
                         updated_at=service.updated_at))
    listed = [Zone(name, True, dict(sorted(hosts.items())))
              for name, hosts in sorted(enabled.items())]
    return listed + [Zone(name, False, None) for name in sorted(disabled - set(enabled))]
