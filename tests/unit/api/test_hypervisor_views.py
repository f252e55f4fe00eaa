"""The pure views of os-hypervisors: what each microversion shows of a hypervisor, how
placement's numbers become nova's fields, nova's name pattern and paging."""

from __future__ import annotations

import datetime

import pytest

from moorage.api.errors import BadRequest
from moorage.api.handlers.hypervisor_views import (
    Hypervisor,
    NodeResources,
    brief_view,
    detail_view,
    host_ip,
    hostname_matches,
    node_resources,
    page_of,
    statistics,
    with_servers,
)
from moorage.api.handlers.paging import Paging
from moorage.api.microversion import Version
from moorage.api.storage.compute_nodes import ComputeNode, HostedServer
from moorage.api.storage.services import ServiceRecord
from moorage.model.inventory import Inventory
from moorage.placement.provider_names import provider_uuid

SERVICE = ServiceRecord(id=7, uuid="5b1c0d5e-8f3a-4b2e-9a61-3d1f7f9e2c10", host="h1",
                        binary="nova-compute", driver="libvirt", nodes=["h1"],
                        agent_url="http://10.0.0.5:8775", hypervisor_version=8000000,
                        updated_at=datetime.datetime(2026, 1, 1))
RESOURCES = NodeResources(vcpus=16, vcpus_used=3, memory_mb=8192, memory_mb_used=2560,
                          local_gb=200, local_gb_used=20)
SERVERS = (HostedServer("a", "web", busy=False), HostedServer("b", "db", busy=True))


def _hypervisor(node_id: int = 3, name: str = "h1", *, disabled: bool = False,
                servers: tuple[HostedServer, ...] = SERVERS) -> Hypervisor:
    service = SERVICE if not disabled else ServiceRecord(**{**SERVICE.__dict__,
                                                            "disabled": True})
    return Hypervisor(ComputeNode(node_id, service.id, name), service, up=True,
                      servers=servers, resources=RESOURCES)


def test_placement_numbers_become_nova_fields() -> None:
    inventories = {"VCPU": Inventory(16, 1, 1, 16, 1, 4.0),
                   "MEMORY_MB": Inventory(8192, 512, 1, 8192, 1, 1.0)}
    assert node_resources(inventories, {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 5}) == \
        NodeResources(vcpus=16, vcpus_used=3, memory_mb=8192, memory_mb_used=2560,
                      local_gb=0, local_gb_used=5)


@pytest.mark.parametrize(("version", "keys", "ids"), [
    ("2.1", {"cpu_info", "vcpus", "running_vms", "disk_available_least"}, (3, 7)),
    ("2.53", {"cpu_info", "vcpus", "running_vms"}, (provider_uuid("h1"), SERVICE.uuid)),
    ("2.88", {"uptime"}, (provider_uuid("h1"), SERVICE.uuid)),
])
def test_detail_by_version(version: str, keys: set[str], ids: tuple[object, object]) -> None:
    view = detail_view(_hypervisor(), Version.of(version))
    assert keys <= set(view)
    assert (view["id"], view["service"]["id"]) == ids  # type: ignore[index,call-overload]
    if version == "2.88":
        assert not {"vcpus", "cpu_info", "running_vms", "free_ram_mb"} & set(view)
        assert view["uptime"] is None
    else:
        assert (view["free_ram_mb"], view["free_disk_gb"], view["running_vms"],
                view["current_workload"]) == (5632, 180, 2, 1)


def test_cpu_info_text_then_object() -> None:
    assert detail_view(_hypervisor(), Version(2, 27))["cpu_info"] == "{}"
    assert detail_view(_hypervisor(), Version(2, 28))["cpu_info"] == {}


def test_brief_is_four_fields_and_host_ip_is_the_agents_address() -> None:
    assert brief_view(_hypervisor(), Version(2, 1)) == {
        "id": 3, "hypervisor_hostname": "h1", "state": "up", "status": "enabled"}
    assert detail_view(_hypervisor(), Version(2, 1))["host_ip"] == "10.0.0.5"
    assert (host_ip("http://[::1]:9"), host_ip("http://compute-1:9"), host_ip(None)) == (
        "::1", None, None)


def test_servers_listed_when_some_and_from_2_75_when_none() -> None:
    empty = _hypervisor(servers=())
    assert "servers" not in with_servers({}, empty, Version(2, 74))
    assert with_servers({}, empty, Version(2, 75)) == {"servers": []}
    assert with_servers({}, _hypervisor(), Version(2, 53)) == {"servers": [
        {"name": "web", "uuid": "a"}, {"name": "db", "uuid": "b"}]}


def test_statistics_leave_disabled_services_out() -> None:
    stats = statistics([_hypervisor(1), _hypervisor(2, "h2", disabled=True)], Version(2, 1))
    assert (stats["count"], stats["vcpus"], stats["running_vms"],
            stats["disk_available_least"]) == (1, 16, 2, 0)


@pytest.mark.parametrize(("pattern", "name", "matches"), [
    ("h1", "xh1y", True), ("H1", "h1", True), ("h_", "h9", True), ("h_", "h", False),
    ("a%c", "abbbc", True), ("h.1", "hx1", False), ("", "anything", True),
])
def test_nova_like_pattern(pattern: str, name: str, matches: bool) -> None:
    assert hostname_matches(pattern, name) is matches


def test_pages_after_the_marker() -> None:
    hypervisors = [_hypervisor(n, f"h{n}") for n in (1, 2, 5)]
    page = page_of(hypervisors, Paging(limit=2), Version(2, 33))
    assert ([h.node.id for h in page.hypervisors], page.next_marker) == ([1, 2], "2")
    page = page_of(hypervisors, Paging(limit=2, marker="2"), Version(2, 33))
    assert ([h.node.id for h in page.hypervisors], page.next_marker) == ([5], None)
    by_uuid = page_of(hypervisors, Paging(marker=provider_uuid("h1").upper()), Version(2, 53))
    assert [h.node.id for h in by_uuid.hypervisors] == [2, 5]
    assert page_of(hypervisors, Paging(limit=0), Version(2, 33)).hypervisors == []
    with pytest.raises(BadRequest, match=r"marker \[9\] not found"):
        page_of(hypervisors, Paging(marker="9"), Version(2, 33))
