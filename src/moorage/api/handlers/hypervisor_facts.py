"""What os-hypervisors answers from, read once per request: the compute nodes and their
services (the API's database), the servers on them, and each node's resources
(placement: its provider's inventories and usages), each read only for the answers
that show it, and only for the hypervisors of the page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from moorage.api.handlers.hypervisor_views import Hypervisor, NodeResources, node_resources
from moorage.api.http import ApiRequest
from moorage.api.storage import compute_nodes
from moorage.api.storage import services as service_store
from moorage.placement.client import PlacementError


def all_hypervisors(req: ApiRequest) -> list[Hypervisor]:
    """Every node of every service, in the order of their ids, with its service's
    state; a node whose service is gone meanwhile is left out, as nova leaves out a
    node without a service."""
    down_after = float(req.state.conf.service_down_time)
    with req.state.database.reader() as conn:
        services = {service.id: service for service in service_store.list_services(conn)}
        nodes = compute_nodes.list_nodes(conn)
    return [Hypervisor(node, services[node.service_id],
                       services[node.service_id].is_up(down_after))
            for node in nodes if node.service_id in services]


def with_servers(req: ApiRequest, hypervisors: Sequence[Hypervisor]) -> list[Hypervisor]:
    """``hypervisors`` with the servers on each node."""
    with req.state.database.reader() as conn:
        hosted = compute_nodes.hosted_servers(
            conn, {hypervisor.service.host for hypervisor in hypervisors})
    return [replace(hypervisor, servers=hosted.get(
        (hypervisor.service.host, hypervisor.node.hypervisor_hostname), []))
        for hypervisor in hypervisors]


def with_resources(req: ApiRequest, hypervisors: Sequence[Hypervisor]) -> list[Hypervisor]:
    """``hypervisors`` with their nodes' resources, read from placement concurrently
    (two GETs a node: placement has no bulk read of inventories or usages). A node
    without a provider yet (its agent has not synced) has none: zeros."""
    placement = req.state.placement

    def read(hypervisor: Hypervisor) -> NodeResources:
        uuid = hypervisor.node.uuid
        try:
            return node_resources(placement.inventories(uuid), placement.usages(uuid))
        except PlacementError as exc:
            if exc.status == 404:
                return NodeResources()
            raise

    found = placement.concurrently(read, hypervisors)
    return [replace(hypervisor, resources=resources)
            for hypervisor, resources in zip(hypervisors, found, strict=True)]
