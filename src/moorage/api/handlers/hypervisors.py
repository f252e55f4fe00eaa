"""Hypervisors (``/os-hypervisors``): one per node of each compute service, with its
host's state (up/down), status (enabled/disabled) and the servers it runs."""

from __future__ import annotations

from typing import Any

from moorage.api.errors import NotFound
from moorage.api.http import ApiRequest, json_response
from moorage.api.storage import services as store
from moorage.api.storage.services import ServiceRecord
from moorage.lifecycle.store import instances_by_host
from moorage.web import Response


def _hypervisors(req: ApiRequest) -> list[dict[str, Any]]:
    down_after = float(req.state.conf.service_down_time)
    with req.state.database.reader() as conn:
        found = store.list_services(conn)
        counts = instances_by_host(conn)
    rows = []
    for service in found:
        for index, node in enumerate(service.nodes or [service.host]):
            rows.append(_view(service, node, index, counts.get(service.host, 0), down_after))
    return rows


def _view(service: ServiceRecord, node: str, index: int, running: int, down_after: float
          ) -> dict[str, Any]:
    return {
        # One id per node: the service id, and the node's position for multi-node hosts.
        "id": str(service.id) if index == 0 else f"{service.id}.{index}",
        "hypervisor_hostname": node,
        "state": "up" if service.is_up(down_after) else "down",
        "status": "disabled" if service.disabled else "enabled",
        "hypervisor_type": service.driver,
        "hypervisor_version": service.hypervisor_version,
        "host_ip": None,
        "running_vms": running,
        "service": {"id": service.id, "host": service.host,
                    "disabled_reason": service.disabled_reason},
    }


def _brief(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("id", "hypervisor_hostname", "state", "status")}


def list_hypervisors(req: ApiRequest) -> Response:
    """List hypervisors (id, name, state, status)."""
    req.authorize("os_compute_api:os-hypervisors:list")
    return json_response({"hypervisors": [_brief(r) for r in _hypervisors(req)]})


def list_hypervisors_detail(req: ApiRequest) -> Response:
    """List hypervisors with their type, version, service and running servers."""
    req.authorize("os_compute_api:os-hypervisors:list-detail")
    return json_response({"hypervisors": _hypervisors(req)})


def show_hypervisor(req: ApiRequest) -> Response:
    """Show one hypervisor, by id or by name."""
    req.authorize("os_compute_api:os-hypervisors:show")
    ident = req.params["hypervisor_id"]
    for row in _hypervisors(req):
        if ident in (row["id"], row["hypervisor_hostname"]):
            return json_response({"hypervisor": row})
    raise NotFound(f"Hypervisor {ident} could not be found.")
