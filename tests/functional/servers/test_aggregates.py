"""Host aggregates steer scheduling, set up through the compute API's os-aggregates.

Trait-isolated aggregates (``[scheduler] enable_isolated_aggregate_filtering``),
tenant aggregates (``limit_tenants_to_placement_aggregate`` and
``placement_aggregate_required_for_tenants``), availability zones by the
AvailabilityZoneFilter host filter or by the placement query, and all of them
together: the scenarios of upstream's IsolateAggregateFilterTest and
TestAggregateFiltersTogether. In every cloud the host the aggregate must keep out (or
in) is not the one the weighers would pick on their own, so a filter that does
nothing fails the test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from moorage.scheduler.filter_records import Constraint, FilterRecord, Origin, OriginKind
from tests.functional.servers.conftest import Cloud, fake_host

X = "CUSTOM_X"
Y = "CUSTOM_Y"
USER = "user1:project1"  # noauth2: a member of project1
OTHER = "user2:project2"  # a member of project2


def aggregate(cloud: Cloud, name: str, hosts: Sequence[str],
              metadata: Mapping[str, str] | None = None,
              zone: str | None = None) -> dict[str, Any]:
    """An aggregate made as an operator makes it: create, add_host, set_metadata."""
    body: dict[str, Any] = {"name": name}
    if zone is not None:
        body["availability_zone"] = zone
    created = cloud.ok("POST", "/os-aggregates", {"aggregate": body})["aggregate"]
    for host in hosts:
        cloud.ok("POST", f"/os-aggregates/{created['id']}/action", {"add_host": {"host": host}})
    if metadata:
        cloud.ok("POST", f"/os-aggregates/{created['id']}/action",
                 {"set_metadata": {"metadata": dict(metadata)}})
    return dict(cloud.ok("GET", f"/os-aggregates/{created['id']}")["aggregate"])


def boot_as(cloud: Cloud, token: str, flavor: str, image: str, **extra: Any) -> dict[str, Any]:
    """Boot as a (non-admin) user, then watch the server as admin."""
    response = cloud.call("POST", "/servers", {"server": {"networks": "none",
        "name": "vm", "flavorRef": flavor, "imageRef": image, **extra}}, token=token)
    assert response.status_code == 202, response.text
    return cloud.wait(response.json()["server"]["id"])


def filter_record(server: Mapping[str, Any], name: str) -> FilterRecord:
    return FilterRecord.from_json(next(f for f in server["moorage:scheduling"]["filters"]
                                       if f["name"] == name))


def no_valid_host(server: Mapping[str, Any]) -> str:
    assert server["status"] == "ERROR", server
    message = str(server["fault"]["message"])
    assert message.startswith("No valid host was found."), message
    assert server["OS-EXT-SRV-ATTR:host"] is None
    return message


# -- isolated aggregates ----------------------------------------------------------------
@pytest.fixture
def isolated(make_cloud: Any) -> Cloud:
    """"iso" (the largest, with CUSTOM_X and CUSTOM_Y) sits in an aggregate requiring
    CUSTOM_X; "plain" has no custom trait."""
    cloud: Cloud = make_cloud([fake_host("iso", traits=[X, Y], memory_mb=65536),
                               fake_host("plain", memory_mb=16384)],
                              scheduler={"enable_isolated_aggregate_filtering": True})
    aggregate(cloud, "x-only", ["iso"], {f"trait:{X}": "required"})
    return cloud


def test_isolated_aggregate_keeps_out_servers_that_do_not_require_its_trait(
        isolated: Cloud) -> None:
    flavor, image = isolated.flavor("small"), isolated.image("raw", "raw")
    for _ in range(3):
        server = isolated.boot_and_wait(flavor, image)
        assert server["status"] == "ACTIVE", server.get("fault")
        assert server["OS-EXT-SRV-ATTR:host"] == "plain"
    record = filter_record(server, "isolate_aggregates")
    assert record.ran is True
    assert [(a.constraint, a.origin.setting) for a in record.added] == [
        (Constraint.FORBIDDEN_AGGREGATES, f"trait:{X}=required")]


def test_without_isolation_the_largest_host_wins(make_cloud: Any) -> None:
    # The control for the test above: the same cloud, the filter off.
    cloud: Cloud = make_cloud([fake_host("iso", traits=[X, Y], memory_mb=65536),
                               fake_host("plain", memory_mb=16384)])
    aggregate(cloud, "x-only", ["iso"], {f"trait:{X}": "required"})
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"))
    assert server["OS-EXT-SRV-ATTR:host"] == "iso"
    assert filter_record(server, "isolate_aggregates").ran is False


def test_flavor_requiring_the_trait_lands_in_the_isolated_aggregate(isolated: Cloud) -> None:
    flavor = isolated.flavor("x", extra_specs={f"trait:{X}": "required"})
    server = isolated.boot_and_wait(flavor, isolated.image("raw", "raw"))
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "iso"
    assert filter_record(server, "isolate_aggregates").added == ()


def test_image_requiring_the_trait_lands_in_the_isolated_aggregate(isolated: Cloud) -> None:
    image = isolated.image("x", "raw", {f"trait:{X}": "required"})
    server = isolated.boot_and_wait(isolated.flavor("small"), image)
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "iso"


def test_aggregate_requiring_two_traits_takes_flavor_and_image_together(
        make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([fake_host("iso", traits=[X, Y], memory_mb=16384),
                               fake_host("plain", traits=[X, Y], memory_mb=65536)],
                              scheduler={"enable_isolated_aggregate_filtering": True})
    aggregate(cloud, "xy-only", ["iso"], {f"trait:{X}": "required", f"trait:{Y}": "required"})
    flavor_x = cloud.flavor("x", extra_specs={f"trait:{X}": "required"})
    image_y = cloud.image("y", "raw", {f"trait:{Y}": "required"})
    # Flavor and image together require the aggregate's whole set: "iso" is open to
    # them (the weighers prefer "plain", which has both traits too).
    both = cloud.boot_and_wait(flavor_x, image_y)
    assert both["status"] == "ACTIVE", both.get("fault")
    assert both["OS-EXT-SRV-ATTR:host"] == "plain"
    assert filter_record(both, "isolate_aggregates").added == ()
    cloud.ok("PUT", f"/os-services/{_service_id(cloud, 'plain')}", {"status": "disabled"})
    both = cloud.boot_and_wait(flavor_x, image_y)
    assert both["OS-EXT-SRV-ATTR:host"] == "iso"
    # A subset of the aggregate's traits is not enough: "iso" stays closed.
    subset = cloud.boot_and_wait(flavor_x, cloud.image("raw", "raw"))
    no_valid_host(subset)
    assert filter_record(subset, "isolate_aggregates").added != ()


def test_disjoint_traits_keep_the_server_out(isolated: Cloud) -> None:
    flavor = isolated.flavor("y", extra_specs={f"trait:{Y}": "required"})
    server = isolated.boot_and_wait(flavor, isolated.image("raw", "raw"))
    # Only "iso" has CUSTOM_Y, and its aggregate is for CUSTOM_X servers.
    no_valid_host(server)
    assert isolated.spawn_attempts(server) == []
    assert isolated.allocations(server["id"]) == {}


def test_every_host_isolated_is_no_valid_host(isolated: Cloud) -> None:
    aggregate(isolated, "y-only", ["plain"], {f"trait:{Y}": "required"})
    server = isolated.boot_and_wait(isolated.flavor("small"), isolated.image("raw", "raw"))
    no_valid_host(server)
    assert len(filter_record(server, "isolate_aggregates").added) == 2
    assert isolated.allocations(server["id"]) == {}


@pytest.mark.parametrize("lift", [
    {"set_metadata": {"metadata": {f"trait:{X}": None}}},  # a null value removes the key
    {"remove_host": {"host": "iso"}},
])
def test_lifting_the_isolation_opens_the_host_again(isolated: Cloud,
                                                    lift: dict[str, Any]) -> None:
    flavor, image = isolated.flavor("small"), isolated.image("raw", "raw")
    assert isolated.boot_and_wait(flavor, image)["OS-EXT-SRV-ATTR:host"] == "plain"
    found = isolated.ok("GET", "/os-aggregates")["aggregates"]
    isolated.ok("POST", f"/os-aggregates/{found[0]['id']}/action", lift)
    server = isolated.boot_and_wait(flavor, image)
    # (After remove_host the empty aggregate is still forbidden: nothing is in it.)
    assert server["OS-EXT-SRV-ATTR:host"] == "iso"


def _service_id(cloud: Cloud, host: str) -> Any:
    return next(s["id"] for s in cloud.ok("GET", "/os-services")["services"]
                if s["host"] == host)


# -- tenant aggregates ------------------------------------------------------------------
def _tenant_cloud(make_cloud: Any, *, required: bool) -> Cloud:
    """"big" is preferred by the weighers; "small" is project1's aggregate."""
    cloud: Cloud = make_cloud([fake_host("big", memory_mb=65536),
                               fake_host("small", memory_mb=16384)],
                              scheduler={"limit_tenants_to_placement_aggregate": True,
                                         "placement_aggregate_required_for_tenants":
                                             required})
    aggregate(cloud, "project1-hosts", ["small"], {"filter_tenant_id": "project1"})
    return cloud


def test_tenant_aggregate_holds_its_project(make_cloud: Any) -> None:
    cloud = _tenant_cloud(make_cloud, required=False)
    flavor, image = cloud.flavor("small"), cloud.image("raw", "raw")
    for _ in range(2):
        mine = boot_as(cloud, USER, flavor, image)
        assert mine["status"] == "ACTIVE", mine.get("fault")
        assert mine["OS-EXT-SRV-ATTR:host"] == "small"
    (added,) = filter_record(mine, "require_tenant_aggregate").added
    assert added.constraint is Constraint.MEMBER_OF
    assert added.origin == Origin(OriginKind.AGGREGATE_METADATA, "filter_tenant_id*", "project1")
    # A project no aggregate names may go anywhere (the option does not fence hosts).
    other = boot_as(cloud, OTHER, flavor, image)
    assert other["OS-EXT-SRV-ATTR:host"] == "big"
    assert filter_record(other, "require_tenant_aggregate").notes == (
        "no aggregate names project project2; any host may take it",)


def test_tenant_aggregate_keys_are_a_prefix(make_cloud: Any) -> None:
    cloud = _tenant_cloud(make_cloud, required=False)
    found = cloud.ok("GET", "/os-aggregates")["aggregates"]
    cloud.ok("POST", f"/os-aggregates/{found[0]['id']}/action",
             {"set_metadata": {"metadata": {"filter_tenant_id2": "project2"}}})
    other = boot_as(cloud, OTHER, cloud.flavor("small"), cloud.image("raw", "raw"))
    assert other["OS-EXT-SRV-ATTR:host"] == "small"


def test_tenant_without_aggregate_is_refused_when_one_is_required(make_cloud: Any) -> None:
    cloud = _tenant_cloud(make_cloud, required=True)
    flavor, image = cloud.flavor("small"), cloud.image("raw", "raw")
    assert boot_as(cloud, USER, flavor, image)["OS-EXT-SRV-ATTR:host"] == "small"
    other = boot_as(cloud, OTHER, flavor, image)
    message = no_valid_host(other)
    assert "project2" in message and "placement_aggregate_required_for_tenants" in message
    assert cloud.spawn_attempts(other) == []
    assert cloud.allocations(other["id"]) == {}


def test_tenant_aggregate_without_the_option_is_ignored(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([fake_host("big", memory_mb=65536),
                               fake_host("small", memory_mb=16384)])
    aggregate(cloud, "project1-hosts", ["small"], {"filter_tenant_id": "project1"})
    mine = boot_as(cloud, USER, cloud.flavor("small"), cloud.image("raw", "raw"))
    assert mine["OS-EXT-SRV-ATTR:host"] == "big"


# -- availability zones -----------------------------------------------------------------
def _zone_cloud(make_cloud: Any, *, placement_query: bool,
                filters: Sequence[str]) -> Cloud:
    cloud: Cloud = make_cloud(
        [fake_host("a", memory_mb=65536), fake_host("b", memory_mb=16384),
         fake_host("c", memory_mb=8192)],
        scheduler={"query_placement_for_availability_zone": placement_query},
        filter_scheduler={"enabled_filters": list(filters)})
    aggregate(cloud, "rack2", ["b", "c"], zone="az2")
    return cloud


def test_availability_zone_by_the_host_filter_only(make_cloud: Any) -> None:
    cloud = _zone_cloud(make_cloud, placement_query=False,
                        filters=["ComputeFilter", "AvailabilityZoneFilter"])
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"),
                                 availability_zone="az2")
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "b"
    assert server["OS-EXT-AZ:availability_zone"] == "az2"
    scheduling = server["moorage:scheduling"]
    # Placement offered every host; the host filter turned "a" away.
    assert filter_record(server, "map_az_to_placement_aggregate").ran is False
    assert (scheduling["candidates"], scheduling["hosts_passing_filters"]) == (3, 2)
    assert scheduling["alternates"] == ["c"]
    # Without a zone, "a" (the largest, in the default zone) is fine.
    anywhere = cloud.boot_and_wait(cloud.flavor("small2"), cloud.image("raw2", "raw"))
    assert anywhere["OS-EXT-SRV-ATTR:host"] == "a"
    # nova shows the zone of the host (the default zone), not the none asked for.
    assert anywhere["OS-EXT-AZ:availability_zone"] == "nova"
    assert anywhere["pinned_availability_zone"] is None


def test_availability_zone_by_the_placement_query(make_cloud: Any) -> None:
    cloud = _zone_cloud(make_cloud, placement_query=True, filters=["ComputeFilter"])
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"),
                                 availability_zone="az2")
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "b"
    scheduling = server["moorage:scheduling"]
    (added,) = filter_record(server, "map_az_to_placement_aggregate").added
    assert added.constraint is Constraint.MEMBER_OF
    assert added.origin == Origin(OriginKind.AGGREGATE_METADATA, "availability_zone", "az2")
    # Placement itself offered only the zone's hosts.
    assert (scheduling["candidates"], scheduling["hosts_passing_filters"]) == (2, 2)


def test_availability_zone_whose_hosts_are_disabled_is_no_valid_host(make_cloud: Any) -> None:
    cloud = _zone_cloud(make_cloud, placement_query=False,
                        filters=["ComputeFilter", "AvailabilityZoneFilter"])
    for host in ("b", "c"):
        cloud.ok("PUT", f"/os-services/{_service_id(cloud, host)}", {"status": "disabled"})
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"),
                                 availability_zone="az2")
    no_valid_host(server)
    assert cloud.allocations(server["id"]) == {}


# -- all together -----------------------------------------------------------------------
@pytest.fixture
def together(make_cloud: Any) -> Cloud:
    """Every aggregate request filter on; host1 and host2 each in an aggregate of their
    own, host3 (the largest) in none."""
    cloud: Cloud = make_cloud(
        [fake_host("host1", memory_mb=16384), fake_host("host2", traits=[X], memory_mb=16384),
         fake_host("host3", traits=[X], memory_mb=65536)],
        scheduler={"limit_tenants_to_placement_aggregate": True,
                   "placement_aggregate_required_for_tenants": True,
                   "query_placement_for_availability_zone": True,
                   "enable_isolated_aggregate_filtering": True})
    aggregate(cloud, "only-host1", ["host1"])
    aggregate(cloud, "only-host2", ["host2"])
    return cloud


def _set_metadata(cloud: Cloud, name: str, metadata: Mapping[str, str]) -> None:
    found = {a["name"]: a["id"] for a in cloud.ok("GET", "/os-aggregates")["aggregates"]}
    cloud.ok("POST", f"/os-aggregates/{found[name]}/action",
             {"set_metadata": {"metadata": dict(metadata)}})


@pytest.mark.parametrize(("tenant", "zone", "trait", "flavor_trait", "lands"), [
    # tenant aggregate and zone on the same host: it lands there
    ("only-host1", "only-host1", False, False, "host1"),
    # the project's aggregate is not in the requested zone: nowhere
    ("only-host1", "only-host2", False, False, None),
    # tenant, zone and an isolating trait the flavor requires
    ("only-host2", "only-host2", True, True, "host2"),
    # ... and a flavor that does not require it is kept out
    ("only-host2", "only-host2", True, False, None),
])
def test_tenant_zone_and_traits_together(together: Cloud, tenant: str, zone: str,
                                         trait: bool, flavor_trait: bool,
                                         lands: str | None) -> None:
    _set_metadata(together, tenant, {"filter_tenant_id": "project1"})
    _set_metadata(together, zone, {"availability_zone": "myaz"})
    if trait:
        _set_metadata(together, zone, {f"trait:{X}": "required"})
    flavor = together.flavor("f", extra_specs={f"trait:{X}": "required"} if flavor_trait
                             else None)
    server = boot_as(together, USER, flavor, together.image("raw", "raw"),
                     availability_zone="myaz")
    if lands is None:
        no_valid_host(server)
        assert together.allocations(server["id"]) == {}
    else:
        assert server["status"] == "ACTIVE", server.get("fault")
        assert server["OS-EXT-SRV-ATTR:host"] == lands
        assert server["OS-EXT-AZ:availability_zone"] == "myaz"
