"""The nodes of the compute services (what os-hypervisors lists) and the servers on them.

A node's row is written by the heartbeat that first reports it and removed by the one
that no longer does (``sync_nodes``, from ``services.record_heartbeats``), so its
integer id (what compute API versions before 2.53 name a hypervisor by) stays the same
for as long as the agent reports the node. Its uuid is its resource provider's.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.api.storage.schema import compute_nodes, servers
from moorage.lifecycle.states import ServerStatus
from moorage.placement.provider_names import provider_uuid

# Ids in one IN (...) list.
_CHUNK = 500


@dataclass(frozen=True)
class ComputeNode:
    id: int
    service_id: int
    hypervisor_hostname: str

    @property
    def uuid(self) -> str:
        """nova's compute node uuid is its root resource provider's; so is Moorage's."""
        return provider_uuid(self.hypervisor_hostname)


@dataclass(frozen=True)
class HostedServer:
    """A server as os-hypervisors lists it, and whether something is being done to it."""

    uuid: str
    name: str
    busy: bool  # it has a task state: nova's current_workload counts it


def _nodes(conn: Connection, service_ids: Sequence[int]) -> list[ComputeNode]:
    found: list[ComputeNode] = []
    for start in range(0, len(service_ids), _CHUNK):
        # SELECT id, service_id, hypervisor_hostname FROM compute_nodes
        # WHERE service_id IN (...)
        rows = conn.execute(sa.select(compute_nodes).where(
            compute_nodes.c.service_id.in_(service_ids[start:start + _CHUNK])))
        found.extend(ComputeNode(int(r.id), int(r.service_id), str(r.hypervisor_hostname))
                     for r in rows)
    return found


def sync_nodes(conn: Connection, reported: Mapping[int, Sequence[str]]) -> None:
    """Make each service's rows its reported nodes (service id -> node names): a new
    node gets a row (and a new id), a node no longer reported loses its row."""
    if not reported:
        return
    existing = _nodes(conn, list(reported))
    have = {(node.service_id, node.hypervisor_hostname) for node in existing}
    wanted = {(service_id, name) for service_id, names in reported.items() for name in names}
    gone = [node.id for node in existing if (node.service_id, node.hypervisor_hostname)
            not in wanted]
    for start in range(0, len(gone), _CHUNK):
        # DELETE FROM compute_nodes WHERE id IN (...)
        conn.execute(compute_nodes.delete().where(
            compute_nodes.c.id.in_(gone[start:start + _CHUNK])))
    fresh = [{"service_id": service_id, "hypervisor_hostname": name}
             for service_id, names in reported.items() for name in dict.fromkeys(names)
             if (service_id, name) not in have]
    if fresh:
        conn.execute(compute_nodes.insert(), fresh)


def delete_nodes(conn: Connection, service_id: int) -> None:
    # DELETE FROM compute_nodes WHERE service_id = :service_id
    conn.execute(compute_nodes.delete().where(compute_nodes.c.service_id == service_id))


def list_nodes(conn: Connection) -> list[ComputeNode]:
    """Every node, in the order of their ids (the order nova pages hypervisors in)."""
    # SELECT id, service_id, hypervisor_hostname FROM compute_nodes ORDER BY id
    rows = conn.execute(sa.select(compute_nodes).order_by(compute_nodes.c.id))
    return [ComputeNode(int(r.id), int(r.service_id), str(r.hypervisor_hostname))
            for r in rows]


def hosted_servers(conn: Connection, hosts: Collection[str] | None = None
                   ) -> dict[tuple[str, str], list[HostedServer]]:
    """(host, node) -> the servers there that are not deleted, oldest first (of
    ``hosts``, when given). A server placed before nodes were recorded with it counts
    on the node named as its host, as a single-node host's node is."""
    node = sa.func.coalesce(servers.c.node, servers.c.host)
    # SELECT uuid, name, task_state, host, coalesce(node, host) FROM servers
    # WHERE status != 'DELETED' AND host IS NOT NULL [AND host IN (...)]
    # ORDER BY created_at, uuid
    statement = (sa.select(servers.c.uuid, servers.c.name, servers.c.task_state,
                           servers.c.host, node.label("node"))
                 .where(servers.c.status != ServerStatus.DELETED, servers.c.host.is_not(None))
                 .order_by(servers.c.created_at, servers.c.uuid))
    wanted = None if hosts is None else sorted(set(hosts))
    found: dict[tuple[str, str], list[HostedServer]] = {}
    batches = [None] if wanted is None else [
        wanted[start:start + _CHUNK] for start in range(0, len(wanted), _CHUNK)]
    for batch in batches:
        chosen = statement if batch is None else statement.where(servers.c.host.in_(batch))
        for row in conn.execute(chosen):
            found.setdefault((str(row.host), str(row.node)), []).append(
                HostedServer(str(row.uuid), str(row.name), row.task_state is not None))
    return found
