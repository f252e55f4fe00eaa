"""os-hypervisors as each microversion shows a hypervisor (one node of a compute service):
pure functions of what the API knows of it (``Hypervisor``).

- Every version lists id, hypervisor_hostname, state and status (``brief_view``).
- Detail and show add hypervisor_type, hypervisor_version, host_ip and the service
  {host, id, disabled_reason} (``detail_view``); before 2.88 the usage fields too, with
  cpu_info as JSON text before 2.28 and an object from 2.28
  (``HYPERVISOR_CPU_INFO_OBJECT``); from 2.88 (``HYPERVISOR_NO_STATISTICS``) no usage
  fields, and uptime.
- Ids (the hypervisor's and its service's) are integers before 2.53, uuids from 2.53
  (``SERVICE_UUIDS``).
- ``servers`` when asked for: listed when there are some, and from 2.75
  (``HYPERVISOR_SERVERS_ALWAYS``) even when there are none (``with_servers``).

Where Moorage has no fact nova shows, the view answers what nova answers when the
driver reports none, and says so where it does.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import os_resource_classes as orc

from moorage.api.errors import BadRequest
from moorage.api.handlers.paging import Paging
from moorage.api.handlers.path_ids import uuid_id
from moorage.api.microversion import (
    HYPERVISOR_CPU_INFO_OBJECT,
    HYPERVISOR_NO_STATISTICS,
    HYPERVISOR_SERVERS_ALWAYS,
    SERVICE_UUIDS,
    Version,
    at,
)
from moorage.api.storage.compute_nodes import ComputeNode, HostedServer
from moorage.api.storage.services import ServiceRecord
from moorage.jsonvalue import JSONValue
from moorage.model.inventory import Inventory


@dataclass(frozen=True)
class NodeResources:
    """nova's compute node usage fields, as placement holds them for the node's provider."""

    vcpus: int = 0
    vcpus_used: int = 0
    memory_mb: int = 0
    memory_mb_used: int = 0
    local_gb: int = 0
    local_gb_used: int = 0


def node_resources(inventories: Mapping[str, Inventory], usages: Mapping[str, int]
                   ) -> NodeResources:
    """The totals of VCPU, MEMORY_MB and DISK_GB, and what is used of each: what is
    allocated plus what the host keeps for itself (placement's ``reserved``), as nova's
    resource tracker counts ``reserved_host_*`` as used. A class the provider has no
    inventory of counts 0, as nova's fields of a node without it do."""

    def total(resource_class: str) -> int:
        inventory = inventories.get(resource_class)
        return inventory.total if inventory is not None else 0

    def used(resource_class: str) -> int:
        inventory = inventories.get(resource_class)
        reserved = inventory.reserved if inventory is not None else 0
        return usages.get(resource_class, 0) + reserved

    return NodeResources(
        vcpus=total(orc.VCPU), vcpus_used=used(orc.VCPU),
        memory_mb=total(orc.MEMORY_MB), memory_mb_used=used(orc.MEMORY_MB),
        local_gb=total(orc.DISK_GB), local_gb_used=used(orc.DISK_GB))


@dataclass(frozen=True)
class Hypervisor:
    """One node, its service, and what the API read about it for this answer."""

    node: ComputeNode
    service: ServiceRecord
    up: bool
    servers: Sequence[HostedServer] = ()
    # None where the answer needs none (lists, and from 2.88).
    resources: NodeResources | None = None
    # The hypervisor's uptime from 2.88: not asked of the agents there (see
    # ``detail_view``); before, ``/uptime`` asks the host's agent.
    uptime: str | None = None

    def ident(self, version: Version) -> int | str:
        return self.node.uuid if at(version, SERVICE_UUIDS) else self.node.id


def brief_view(hypervisor: Hypervisor, version: Version) -> dict[str, JSONValue]:
    """A hypervisor as the list (and search, and uptime) show it."""
    return {
        "id": hypervisor.ident(version),
        "hypervisor_hostname": hypervisor.node.hypervisor_hostname,
        "state": "up" if hypervisor.up else "down",
        "status": "disabled" if hypervisor.service.disabled else "enabled",
    }


def host_ip(agent_url: str | None) -> str | None:
    """The host's address: the one its agent is reached at, when the agent's URL names
    an IP address (nova's ``my_ip``, the host's management address); None when it
    names a host by name, as nova shows a node that reports no address."""
    if not agent_url:
        return None
    try:
        return str(ipaddress.ip_address(urlsplit(agent_url).hostname or ""))
    except ValueError:
        return None


# What nova shows of a node whose driver reports no CPU information (ironic's): {} from
# 2.28, and, before, that object's JSON text (nova's schema wants a string there,
# and clients parse it).
NO_CPU_INFO: dict[str, JSONValue] = {}


def detail_view(hypervisor: Hypervisor, version: Version) -> dict[str, JSONValue]:
    """A hypervisor as detail and show show it. ``resources`` must have been read
    before 2.88."""
    service = hypervisor.service
    view = brief_view(hypervisor, version)
    view.update({
        "hypervisor_type": service.driver,
        "hypervisor_version": service.hypervisor_version,
        "host_ip": host_ip(service.agent_url),
        "service": {"host": service.host,
                    "id": service.uuid if at(version, SERVICE_UUIDS) else service.id,
                    "disabled_reason": service.disabled_reason},
    })
    if at(version, HYPERVISOR_NO_STATISTICS):
        # The lists and shows do not ask each host's agent for its uptime (before
        # 2.88 ``/uptime`` does): null, as nova answers for a driver that cannot tell.
        view["uptime"] = hypervisor.uptime
        return view
    resources = hypervisor.resources
    assert resources is not None, "read the node's resources before 2.88"
    view.update({
        "vcpus": resources.vcpus,
        "memory_mb": resources.memory_mb,
        "local_gb": resources.local_gb,
        "vcpus_used": resources.vcpus_used,
        "memory_mb_used": resources.memory_mb_used,
        "local_gb_used": resources.local_gb_used,
        "free_ram_mb": resources.memory_mb - resources.memory_mb_used,
        "free_disk_gb": resources.local_gb - resources.local_gb_used,
        # Servers with a task under way, as nova's resource tracker counts them.
        "current_workload": sum(1 for server in hypervisor.servers if server.busy),
        "running_vms": len(hypervisor.servers),
        # The disk actually free, after what thin images may still grow: Moorage does
        # not measure it. nova's field is null for a driver that does not report it.
        "disk_available_least": None,
        "cpu_info": (dict(NO_CPU_INFO) if at(version, HYPERVISOR_CPU_INFO_OBJECT)
                     else "{}"),
    })
    return view


def with_servers(view: dict[str, JSONValue], hypervisor: Hypervisor, version: Version
                 ) -> dict[str, JSONValue]:
    """``view`` with the servers on the node, for a request that asked for them."""
    if hypervisor.servers or at(version, HYPERVISOR_SERVERS_ALWAYS):
        view["servers"] = [{"name": server.name, "uuid": server.uuid}
                           for server in hypervisor.servers]
    return view


_STATISTICS = ("count", "current_workload", "disk_available_least", "free_disk_gb",
               "free_ram_mb", "local_gb", "local_gb_used", "memory_mb", "memory_mb_used",
               "running_vms", "vcpus", "vcpus_used")


def statistics(hypervisors: Iterable[Hypervisor], version: Version) -> dict[str, int]:
    """GET /os-hypervisors/statistics: the detail fields summed over the hypervisors of
    enabled services (nova's sum leaves disabled ones out), a field nobody reports
    counting 0."""
    sums = dict.fromkeys(_STATISTICS, 0)
    for hypervisor in hypervisors:
        if hypervisor.service.disabled:
            continue
        sums["count"] += 1
        for name, value in detail_view(hypervisor, version).items():
            if name in sums and isinstance(value, int) and not isinstance(value, bool):
                sums[name] += value
    return sums


def hostname_matches(pattern: str, hostname: str) -> bool:
    """nova's search: ``hypervisor_hostname LIKE '%pattern%'``, a substring where ``_``
    stands for any one character and ``%`` for any run, without regard to case (as
    MySQL, nova's usual database, compares)."""
    regex = "".join(".*" if char == "%" else "." if char == "_" else re.escape(char)
                    for char in pattern)
    return re.search(regex, hostname, re.IGNORECASE | re.DOTALL) is not None


@dataclass(frozen=True)
class Page:
    """The hypervisors of one page, and the marker of the next when it may hold more."""

    hypervisors: list[Hypervisor] = field(default_factory=list)
    next_marker: str | None = None


def page_of(hypervisors: Sequence[Hypervisor], paging: Paging, version: Version) -> Page:
    """The hypervisors after ``paging.marker`` (a hypervisor's id or uuid, as nova takes
    either), at most ``paging.limit`` of them (``limit=0``: none, as nova's database
    answers). A next page may follow when this one is full, as nova's links say."""
    start = 0
    if paging.marker is not None:
        wanted = uuid_id(paging.marker) or paging.marker.strip()
        found = next((index for index, hypervisor in enumerate(hypervisors)
                      if wanted in (str(hypervisor.node.id), hypervisor.node.uuid)), None)
        if found is None:
            raise BadRequest(f"marker [{paging.marker}] not found")
        start = found + 1
    end = None if paging.limit is None else start + paging.limit
    chosen = list(hypervisors[start:end])
    full = paging.limit is not None and paging.limit > 0 and len(chosen) == paging.limit
    return Page(chosen, str(chosen[-1].ident(version)) if full else None)
