"""The availability zones as nova lists them, from services and aggregates
(moorage.api.availability_zones): one case per rule."""

from __future__ import annotations

import datetime

import pytest

from moorage.api.availability_zones import ServiceState, Zone, availability_zones, zone_of_host
from moorage.api.storage.services import ServiceRecord
from moorage.scheduler.types import Aggregate

NOW = datetime.datetime(2026, 11, 26, 12, 0, 0)
FRESH = NOW - datetime.timedelta(seconds=5)
STALE = NOW - datetime.timedelta(seconds=600)


def service(host: str, *, disabled: bool = False, forced_down: bool = False,
            updated_at: datetime.datetime = FRESH) -> ServiceRecord:
    return ServiceRecord(id=0, uuid=f"uuid-{host}", host=host, binary="nova-compute",
                         driver="fake",
                         nodes=[host], agent_url=None, disabled=disabled,
                         forced_down=forced_down, updated_at=updated_at)


def zone(name: str, *hosts: str) -> Aggregate:
    return Aggregate(uuid=f"uuid-{name}", name=f"agg-{name}", hosts=frozenset(hosts),
                     metadata={"availability_zone": name}, availability_zone=name)


def up(at: datetime.datetime = FRESH) -> dict[str, ServiceState]:
    return {"nova-compute": ServiceState(True, True, at)}


CASES = [
    ("a host in no zone is in the default zone",
     [service("h1")], [], [Zone("nova", True, {"h1": up()})]),
    ("a host takes its aggregate's zone; zones are listed by name",
     [service("h2"), service("h1")], [zone("west", "h2")],
     [Zone("nova", True, {"h1": up()}), Zone("west", True, {"h2": up()})]),
    ("an aggregate without a zone places nobody",
     [service("h1")], [Aggregate("u", "ssd", frozenset({"h1"}), {})],
     [Zone("nova", True, {"h1": up()})]),
    ("a zone without a service is not listed",
     [service("h1")], [zone("empty")], [Zone("nova", True, {"h1": up()})]),
    ("a zone whose services are all disabled is unavailable, last, without hosts",
     [service("h1", disabled=True), service("h2")], [zone("a-first", "h1")],
     [Zone("nova", True, {"h2": up()}), Zone("a-first", False, None)]),
    ("a disabled service is left out of an available zone's hosts",
     [service("h1", disabled=True), service("h2")], [zone("west", "h1", "h2")],
     [Zone("west", True, {"h2": up()})]),
    ("a down or forced down service stays listed, not available",
     [service("h1", updated_at=STALE), service("h2", forced_down=True)], [],
     [Zone("nova", True, {
         "h1": {"nova-compute": ServiceState(False, True, STALE)},
         "h2": {"nova-compute": ServiceState(False, True, FRESH)}})]),
]


@pytest.mark.parametrize(("services", "aggregates", "expected"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_zones(services: list[ServiceRecord], aggregates: list[Aggregate],
               expected: list[Zone]) -> None:
    assert availability_zones(services, aggregates, down_after=60, now=NOW) == expected


@pytest.mark.parametrize(("aggregates", "expected"), [
    ([], "nova"),
    ([Aggregate("u", "ssd", frozenset({"h1"}), {})], "nova"),
    ([zone("west", "h1")], "west"),
    ([zone("west", "h1"), zone("east", "h1")], "east,west"),
], ids=["in no aggregate", "in an aggregate without a zone", "in a zone",
        "in two zones, joined as nova does"])
def test_the_zone_of_a_host(aggregates: list[Aggregate], expected: str) -> None:
    assert zone_of_host(aggregates) == expected
