"""Server groups on a cloud of several hosts: the scheduler keeps to each policy, a
server with no host left fails naming its group, and concurrent boots of one
anti-affinity group never share a host (the late check), on SQLite and PostgreSQL.

The weighers are set against each policy (packing for anti-affinity, spreading for
affinity), so a host filter or a late check that did nothing would show."""

from __future__ import annotations

import concurrent.futures
from collections import Counter
from typing import Any

import pytest

from moorage.api import microversion as mv
from moorage.run.description import HostGroup
from tests.functional.servers.conftest import Cloud, fake_host

# Fill hosts first: servers pile onto one host unless their group forbids it.
PACKING = {"ram_weight_multiplier": -1.0, "cpu_weight_multiplier": -1.0,
           "disk_weight_multiplier": -1.0}
HOSTS = [fake_host(name) for name in ("a", "b", "c")]


def _group(cloud: Cloud, policy: str, **rules: int) -> str:
    body: dict[str, Any] = {"name": f"g-{policy}", "policy": policy}
    if rules:
        body["rules"] = rules
    return str(cloud.ok("POST", "/os-server-groups", {"server_group": body})
               ["server_group"]["id"])


def _boot(cloud: Cloud, flavor: str, image: str, group: str, name: str = "vm") -> str:
    server = cloud.ok("POST", "/servers", {
        "server": {"name": name, "flavorRef": flavor, "imageRef": image,
                   "networks": "none"},
        "os:scheduler_hints": {"group": group}})["server"]
    return str(server["id"])


def _boot_and_wait(cloud: Cloud, flavor: str, image: str, group: str) -> dict[str, Any]:
    return cloud.wait(_boot(cloud, flavor, image, group))


def _catalogue(cloud: Cloud) -> tuple[str, str]:
    return cloud.flavor("small"), cloud.image("cirros")


def test_anti_affinity_spreads_and_no_host_left_names_the_group(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud(HOSTS, filter_scheduler=PACKING)
    flavor, image = _catalogue(cloud)
    group = _group(cloud, "anti-affinity")
    servers = [_boot_and_wait(cloud, flavor, image, group) for _ in range(3)]
    assert [s["status"] for s in servers] == ["ACTIVE"] * 3
    assert sorted(s["OS-EXT-SRV-ATTR:host"] for s in servers) == ["a", "b", "c"]
    # Without a group the same weighers pack.
    loose = [cloud.boot_and_wait(flavor, image) for _ in range(2)]
    assert len({s["OS-EXT-SRV-ATTR:host"] for s in loose}) == 1
    # A fourth member has no host left: NoValidHost naming the group.
    failed = _boot_and_wait(cloud, flavor, image, group)
    assert failed["status"] == "ERROR"
    constraint = f"server group {group} (anti-affinity)"
    assert "No valid host was found" in failed["fault"]["message"]
    assert constraint in failed["fault"]["message"]
    decisions = failed["fault"]["details"]["decisions"]
    excluded = {e["constraint"]: e for e in decisions["exclusions"]}
    assert excluded[constraint]["excluded"] == 3
    assert excluded[constraint]["key"] == "ServerGroupAntiAffinityFilter"
    assert decisions["deciding"] == "ServerGroupAntiAffinityFilter"
    # A user reads the same reason, without hosts.
    shown = cloud.call("GET", f"/servers/{failed['id']}", token="user:admin").json()
    assert constraint in shown["server"]["fault"]["message"]
    # The group lists its members, the failed one too (as nova does).
    listed = cloud.ok("GET", f"/os-server-groups/{group}")["server_group"]["members"]
    assert set(listed) == {s["id"] for s in [*servers, failed]}


def test_affinity_packs_onto_the_first_members_host(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud(HOSTS)  # spreading weighers
    flavor, image = _catalogue(cloud)
    loose = [cloud.boot_and_wait(flavor, image) for _ in range(3)]
    assert len({s["OS-EXT-SRV-ATTR:host"] for s in loose}) == 3  # they spread
    group = _group(cloud, "affinity")
    servers = [_boot_and_wait(cloud, flavor, image, group) for _ in range(3)]
    assert [s["status"] for s in servers] == ["ACTIVE"] * 3
    assert len({s["OS-EXT-SRV-ATTR:host"] for s in servers}) == 1


def test_affinity_with_its_host_full_names_the_group(make_cloud: Any) -> None:
    # Two servers of 512 MiB fill a host (512 MiB of its 1536 are reserved).
    cloud: Cloud = make_cloud([fake_host("a", memory_mb=1536),
                               fake_host("b", memory_mb=1536)])
    flavor, image = _catalogue(cloud)
    group = _group(cloud, "affinity")
    first, second = (_boot_and_wait(cloud, flavor, image, group) for _ in range(2))
    assert first["OS-EXT-SRV-ATTR:host"] == second["OS-EXT-SRV-ATTR:host"]
    failed = _boot_and_wait(cloud, flavor, image, group)  # its host has no memory left
    assert failed["status"] == "ERROR"
    assert f"server group {group} (affinity)" in failed["fault"]["message"]
    # Placement was asked for the group's host alone (it is full): the decisions count
    # the other host as excluded by the group, not by a requested host.
    excluded = {e["constraint"]: e for e in failed["fault"]["details"]["decisions"]
                ["exclusions"]}
    assert excluded[f"server group {group} (affinity)"]["excluded"] == 1
    assert excluded[f"server group {group} (affinity)"]["key"] == \
        "ServerGroupAffinityFilter"
    assert "on the requested host" not in excluded


def test_affinity_asks_placement_for_its_host_alone(make_cloud: Any) -> None:
    """Placement answers one candidate (the first host in its order): the group's host,
    elsewhere in that order, is asked for by name, as a requested host is."""
    cloud: Cloud = make_cloud(HOSTS, scheduler={"max_placement_results": 1,
                                                "placement_sample_size": 0})
    flavor, image = _catalogue(cloud)
    group = _group(cloud, "affinity")
    hosts = set()
    for target in ("c", "b", "a"):  # the first member fixes the host, wherever it is
        first = cloud.wait(_boot_with_host(cloud, flavor, image, group, target))
        assert first["status"] == "ACTIVE"
        hosts.add(first["OS-EXT-SRV-ATTR:host"])
        if first["OS-EXT-SRV-ATTR:host"] != "a":
            break
    (host,) = hosts
    assert host != "a", "placement's first host fixed every group: nothing to show"
    followers = [_boot_and_wait(cloud, flavor, image, group) for _ in range(2)]
    assert [s["OS-EXT-SRV-ATTR:host"] for s in followers] == [host, host]


def _boot_with_host(cloud: Cloud, flavor: str, image: str, group: str, host: str) -> str:
    """An admin's boot onto ``host`` (2.74's ``host``), in ``group``."""
    server = cloud.ok("POST", "/servers", {
        "server": {"name": "first", "flavorRef": flavor, "imageRef": image,
                   "networks": "none", "host": host},
        "os:scheduler_hints": {"group": group}})["server"]
    return str(server["id"])


def test_max_server_per_host_allows_that_many_per_host(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud(HOSTS[:2], filter_scheduler=PACKING)
    flavor, image = _catalogue(cloud)
    group = _group(cloud, "anti-affinity", max_server_per_host=2)
    servers = [_boot_and_wait(cloud, flavor, image, group) for _ in range(4)]
    assert Counter(s["OS-EXT-SRV-ATTR:host"] for s in servers) == {"a": 2, "b": 2}
    failed = _boot_and_wait(cloud, flavor, image, group)
    assert failed["status"] == "ERROR"
    assert "at most 2 per host" in failed["fault"]["message"]


@pytest.mark.parametrize(("policy", "weighers", "hosts_used"), [
    # The soft policy outweighs the resource weighers pulling the other way.
    ("soft-anti-affinity", {**PACKING, "soft_anti_affinity_weight_multiplier": 10.0}, 3),
    ("soft-affinity", {"soft_affinity_weight_multiplier": 10.0}, 1),
])
def test_soft_policies_prefer_and_never_refuse(make_cloud: Any, policy: str,
                                               weighers: dict[str, float],
                                               hosts_used: int) -> None:
    cloud: Cloud = make_cloud(HOSTS, filter_scheduler=weighers)
    flavor, image = _catalogue(cloud)
    group = _group(cloud, policy)
    servers = [_boot_and_wait(cloud, flavor, image, group) for _ in range(3)]
    assert len({s["OS-EXT-SRV-ATTR:host"] for s in servers}) == hosts_used
    # More members than hosts: soft anti-affinity shares a host rather than fail.
    extra = _boot_and_wait(cloud, flavor, image, group)
    assert extra["status"] == "ACTIVE"


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_concurrent_boots_of_an_anti_affinity_group_never_share_a_host(
        make_cloud: Any, request: pytest.FixtureRequest, backend: str) -> None:
    """Eight boots at once, with weighers that send every one to the same host first:
    the schedulers all see the group empty, so only the late check keeps them apart."""
    url = request.getfixturevalue("postgresql_url") if backend == "postgresql" else None
    fleet = HostGroup(name="h", count=8, driver="fake", image_types=("qcow2",))
    cloud: Cloud = make_cloud([], fleet=[fleet], database_url=url,
                              filter_scheduler=PACKING, scheduler={"max_attempts": 8})
    flavor, image = _catalogue(cloud)
    group = _group(cloud, "anti-affinity")
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        uuids = list(pool.map(lambda n: _boot(cloud, flavor, image, group, f"vm{n}"),
                              range(8)))
        servers = list(pool.map(cloud.wait, uuids))
    active = [s for s in servers if s["status"] == "ACTIVE"]
    hosts = [s["OS-EXT-SRV-ATTR:host"] for s in active]
    assert len(hosts) == len(set(hosts)), Counter(hosts)
    # Every guest runs where its server says, and nowhere else.
    assert cloud.fleet is not None
    for server in active:
        assert cloud.guests(server["OS-EXT-SRV-ATTR:host"]) == [server["id"]]
    refused = [a for s in servers for a in s["moorage:scheduling"]["attempts"]
               if a["result"] == "group-refused"]
    # The packing weighers made the schedulers collide: the late check turned some away,
    # each refusal naming the group; with eight hosts and eight tries all found one.
    assert refused, "no boot collided: the test did not exercise the late check"
    assert all(f"server group {group} (anti-affinity)" in a["message"] for a in refused)
    assert len(active) == 8, [s["moorage:scheduling"]["attempts"] for s in servers
                              if s["status"] != "ACTIVE"]


def test_delete_removes_membership_and_shows_groups_from_2_71(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud(HOSTS[:2])
    flavor, image = _catalogue(cloud)
    group = _group(cloud, "anti-affinity")
    first = _boot_and_wait(cloud, flavor, image, group)
    second = _boot_and_wait(cloud, flavor, image, group)
    assert first["server_groups"] == [group]
    before = cloud.call("GET", f"/servers/{first['id']}",
                        version=str(mv.SERVER_GROUPS_SHOWN.version)).json()["server"]
    assert before["server_groups"] == [group]
    older = cloud.call("GET", f"/servers/{first['id']}", version="2.70").json()["server"]
    assert "server_groups" not in older
    # The list of servers shows no server_groups (nova shows them on show only).
    detail = cloud.ok("GET", "/servers/detail")["servers"]
    assert all("server_groups" not in s for s in detail)
    cloud.ok("DELETE", f"/servers/{first['id']}")
    cloud.wait(first["id"])
    members = cloud.ok("GET", f"/os-server-groups/{group}")["server_group"]["members"]
    assert members == [second["id"]]
    with cloud.state.database.reader() as conn:
        rows = conn.exec_driver_sql(
            "SELECT server_uuid FROM server_group_members").all()
    assert [r[0] for r in rows] == [second["id"]]
    # The freed host takes the group's next member.
    third = _boot_and_wait(cloud, flavor, image, group)
    assert third["status"] == "ACTIVE"
    assert third["OS-EXT-SRV-ATTR:host"] == first["OS-EXT-SRV-ATTR:host"]
    # A deleted group leaves its servers in no group.
    assert cloud.call("DELETE", f"/os-server-groups/{group}").status_code == 204
    assert cloud.show(second["id"])["server_groups"] == []


def test_a_group_the_caller_cannot_find_is_a_400(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud(HOSTS[:1])
    flavor, image = _catalogue(cloud)
    theirs = cloud.call("POST", "/os-server-groups", {"server_group": {
        "name": "theirs", "policy": "affinity"}}, token="carol:project2").json()
    body = {"server": {"name": "vm", "flavorRef": flavor, "imageRef": image,
                       "networks": "none"}}
    for hint, words in ((theirs["server_group"]["id"], "could not be found"),
                        ("00000000-0000-0000-0000-000000000001", "could not be found"),
                        ("not-a-uuid", "group")):
        response = cloud.call("POST", "/servers", {**body, "os:scheduler_hints": {
            "group": hint}}, token="alice:project1")
        assert response.status_code == 400, response.text
        assert words in response.json()["badRequest"]["message"]
    assert cloud.ok("GET", "/servers")["servers"] == []


def test_a_cold_migration_keeps_to_anti_affinity(make_cloud: Any) -> None:
    """The packing weighers would send the moved server onto its group mate's host."""
    cloud: Cloud = make_cloud(HOSTS, filter_scheduler=PACKING)
    flavor, image = _catalogue(cloud)
    group = _group(cloud, "anti-affinity")
    first, second = (_boot_and_wait(cloud, flavor, image, group) for _ in range(2))
    taken = {first["OS-EXT-SRV-ATTR:host"], second["OS-EXT-SRV-ATTR:host"]}
    (free,) = {"a", "b", "c"} - taken
    assert cloud.action(first["id"], {"migrate": None}).status_code == 202
    moved = cloud.wait(first["id"])
    assert moved["status"] == "VERIFY_RESIZE", moved.get("fault")
    assert moved["OS-EXT-SRV-ATTR:host"] == free
    # The other member can go only where the first was.
    assert cloud.action(first["id"], {"confirmResize": None}).status_code == 204
    cloud.wait(first["id"])
    assert cloud.action(second["id"], {"migrate": None}).status_code == 202
    moved = cloud.wait(second["id"])
    assert moved["status"] == "VERIFY_RESIZE", moved.get("fault")
    assert moved["OS-EXT-SRV-ATTR:host"] == first["OS-EXT-SRV-ATTR:host"]
