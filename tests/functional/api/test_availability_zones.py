"""Availability zones (/os-availability-zone) over HTTP: the zones of registered compute
hosts, from their aggregates or the default zone; the summary for anyone, the hosts and
their services for admins only; the bodies have exactly the keys Tempest's response
schemas allow."""

from __future__ import annotations

import datetime
import re
from typing import Any

import pytest

from moorage.api import microversion as mv
from tests.api_fixtures import USER, ComputeApi

SERVICE_STATE = {"available", "active", "updated_at"}
# Tempest's pattern for a host name in the detail.
HOST_NAME = re.compile(r"^[a-zA-Z0-9-_.]+$")


def _register(api: ComputeApi, host: str) -> None:
    api.internal("PUT", f"/internal/services/{host}", expect=200,
                 json={"driver": "fake", "nodes": [host], "agent_url": "http://127.0.0.1:9"})


def _zone_aggregate(api: ComputeApi, zone: str, *hosts: str) -> None:
    aggregate = api.admin("POST", "/v2.1/os-aggregates", expect=200, json={
        "aggregate": {"name": f"agg-{zone}", "availability_zone": zone}}).json()["aggregate"]
    for host in hosts:
        api.admin("POST", f"/v2.1/os-aggregates/{aggregate['id']}/action", expect=200,
                  json={"add_host": {"host": host}})


def _service_id(api: ComputeApi, host: str) -> Any:
    services = api.admin("GET", "/v2.1/os-services", expect=200).json()["services"]
    return next(s["id"] for s in services if s["host"] == host)


def _zones(api: ComputeApi, path: str, token: str, version: str = "2.1") -> Any:
    response = api.request("GET", "/v2.1" + path, token=token,
                           headers={mv.HEADER: f"compute {version}"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"availabilityZoneInfo"}
    for zone in body["availabilityZoneInfo"]:
        assert set(zone) == {"zoneName", "zoneState", "hosts"}
        assert set(zone["zoneState"]) == {"available"}
    return body["availabilityZoneInfo"]


@pytest.fixture
def cloud(compute_api: ComputeApi) -> ComputeApi:
    """h1 in zone west; h2 and h3 in no zone (the default); h4 alone in zone east,
    disabled; an aggregate zone "empty" without hosts."""
    for host in ("h1", "h2", "h3", "h4"):
        _register(compute_api, host)
    _zone_aggregate(compute_api, "west", "h1")
    _zone_aggregate(compute_api, "east", "h4")
    _zone_aggregate(compute_api, "empty")
    compute_api.admin("PUT", f"/v2.1/os-services/{_service_id(compute_api, 'h4')}",
                      json={"status": "disabled", "disabled_reason": "test"}, expect=200)
    compute_api.admin("PUT", f"/v2.1/os-services/{_service_id(compute_api, 'h3')}",
                      json={"forced_down": True}, expect=200)
    return compute_api


@pytest.mark.parametrize("version", ["2.1", str(mv.MAX_VERSION)])
def test_anyone_lists_the_zones_and_whether_they_are_available(cloud: ComputeApi,
                                                               version: str) -> None:
    zones = _zones(cloud, "/os-availability-zone", USER, version)
    assert zones == [
        {"zoneName": "nova", "zoneState": {"available": True}, "hosts": None},
        {"zoneName": "west", "zoneState": {"available": True}, "hosts": None},
        {"zoneName": "east", "zoneState": {"available": False}, "hosts": None},
    ]


def test_admins_see_each_zones_hosts_and_services(cloud: ComputeApi) -> None:
    zones = {z["zoneName"]: z for z in _zones(cloud, "/os-availability-zone/detail", "admin")}
    assert list(zones) == ["nova", "west", "east"]
    assert zones["east"] == {"zoneName": "east", "zoneState": {"available": False},
                             "hosts": None}
    nova_hosts = zones["nova"]["hosts"]
    assert sorted(nova_hosts) == ["h2", "h3"] and sorted(zones["west"]["hosts"]) == ["h1"]
    for host, services in [*nova_hosts.items(), *zones["west"]["hosts"].items()]:
        assert HOST_NAME.match(host)
        assert list(services) == ["nova-compute"]  # the binary os-services shows
        state = services["nova-compute"]
        assert set(state) == SERVICE_STATE and state["active"] is True
        datetime.datetime.strptime(state["updated_at"], "%Y-%m-%dT%H:%M:%S.%f")
    # Forced down: listed, not available.
    assert nova_hosts["h3"]["nova-compute"]["available"] is False
    assert nova_hosts["h2"]["nova-compute"]["available"] is True


def test_the_detail_is_for_admins(cloud: ComputeApi) -> None:
    response = cloud.user("GET", "/v2.1/os-availability-zone/detail")
    assert response.status_code == 403
    assert "os_compute_api:os-availability-zone:detail" in response.text


def test_no_service_no_zone(compute_api: ComputeApi) -> None:
    _zone_aggregate(compute_api, "empty")
    assert _zones(compute_api, "/os-availability-zone", USER) == []
    assert _zones(compute_api, "/os-availability-zone/detail", "admin") == []
