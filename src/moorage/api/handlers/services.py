"""Compute services: the operator's view (``/os-services``, nova's 2.53+ update shape)
and the agents' heartbeat (``PUT /internal/services/{host}``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from moorage.api import work
from moorage.api.errors import BadRequest
from moorage.api.handlers.common import boolean, database_id, string
from moorage.api.http import ApiRequest, json_response, no_content
from moorage.api.schemas import MAX_HEARTBEATS
from moorage.api.storage import services as store
from moorage.api.storage.services import Heartbeat, OperatorState, ServiceRecord
from moorage.compute.client import AgentUnreachable
from moorage.lifecycle import operations
from moorage.lifecycle import store as lifecycle
from moorage.lifecycle.operations import Operation
from moorage.lifecycle.states import MigrationKind, MigrationStatus, OperationKind
from moorage.web import Response

LOG = logging.getLogger(__name__)


def _iso(moment: Any) -> str | None:
    return moment.isoformat() if moment is not None else None


def _view(req: ApiRequest, service: ServiceRecord) -> dict[str, Any]:
    up = service.is_up(float(req.state.conf.service_down_time))
    return {
        "id": service.id,
        "binary": service.binary,
        "host": service.host,
        "zone": "nova",
        "status": "disabled" if service.disabled else "enabled",
        "state": "up" if up else "down",
        "disabled_reason": service.disabled_reason,
        "forced_down": service.forced_down,
        "updated_at": _iso(service.updated_at),
        "driver": service.driver,
        "nodes": service.nodes,
    }


def list_services(req: ApiRequest) -> Response:
    """List compute services with their state (up/down) and status (enabled/disabled)."""
    req.authorize("os_compute_api:os-services:list")
    with req.state.database.reader() as conn:
        found = store.list_services(conn, host=req.query.get("host"),
                                    binary=req.query.get("binary"))
    return json_response({"services": [_view(req, s) for s in found]})


def _service_id(req: ApiRequest) -> int:
    """The service of the URL: its id, or (a convenience) its host name."""
    ident = req.params["service_id"]
    found = database_id(ident)
    if found is not None:
        return found
    with req.state.database.reader() as conn:
        return store.load_service_by_host(conn, ident).id


def update_service(req: ApiRequest) -> Response:
    """Enable or disable a service, or force it down: {"status": "enabled"|"disabled",
    "disabled_reason", "forced_down"}. The agent is told at once when it answers,
    otherwise by its next heartbeat."""
    req.authorize("os_compute_api:os-services:update")
    body = req.json_object()
    if not body:
        raise BadRequest("Give at least one of status, disabled_reason, forced_down.")
    changes: dict[str, object] = {}
    status = body.get("status")
    if status is not None:
        if status not in ("enabled", "disabled"):
            raise BadRequest(f"Invalid input for field 'status': {status!r}; allowed: "
                             "enabled, disabled.")
        changes["disabled"] = status == "disabled"
    if "disabled_reason" in body:
        if status != "disabled":
            raise BadRequest("disabled_reason is only allowed with status 'disabled'.")
        changes["disabled_reason"] = string(body, "disabled_reason", allow_none=True)
    elif status == "enabled":
        changes["disabled_reason"] = None
    if "forced_down" in body:
        changes["forced_down"] = boolean(body["forced_down"], "forced_down")
    service_id = _service_id(req)
    with req.state.database.writer() as writer:
        before = store.load_service(writer.conn, service_id)
        service = store.update_service(writer.conn, service_id, **changes)
    view = _view(req, service)
    if before.disabled != service.disabled and req.state.agents is not None:
        try:
            req.state.agents.set_disabled(service.host, service.disabled)
        except AgentUnreachable as exc:
            LOG.warning("agent of %s not told it is %s now (%s); its next heartbeat will "
                        "carry it", service.host, view["status"], exc)
            view["agent_notified"] = False
        else:
            view["agent_notified"] = True
    return json_response({"service": view})


def delete_service(req: ApiRequest) -> Response:
    """Forget a compute service (its agent re-registers if it heart-beats again)."""
    req.authorize("os_compute_api:os-services:delete")
    service_id = _service_id(req)
    with req.state.database.writer() as writer:
        store.delete_service(writer.conn, service_id)
    return no_content()


# -- the agents' heartbeat -------------------------------------------------------


def _heartbeat(host: str, body: dict[str, Any]) -> Heartbeat:
    nodes = body.get("nodes")
    if not isinstance(nodes, list) or not all(isinstance(n, str) and n for n in nodes):
        raise BadRequest("'nodes' must be a list of node names.")
    triples = body.get("supported_instances") or []
    if not isinstance(triples, list) or not all(
            isinstance(t, list) and len(t) == 3 and all(isinstance(v, str) for v in t)
            for t in triples):
        raise BadRequest("'supported_instances' must be a list of [arch, hypervisor type, "
                         "vm mode] string triples.")
    version = body.get("hypervisor_version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise BadRequest("'hypervisor_version' must be an integer.")
    return Heartbeat(
        host=host,
        binary=string(body, "binary") or "moorage-compute",
        driver=string(body, "driver", required=True) or "",
        nodes=nodes,
        agent_url=string(body, "agent_url"),
        supported_instances=[(t[0], t[1], t[2]) for t in triples],
        hypervisor_version=version,
        version=string(body, "version", allow_none=True),
    )


def _to_destroy(req: ApiRequest, hosts: Sequence[str]) -> dict[str, list[str]]:
    """host -> guests its agent should destroy: left there by a build or delete that
    could not reach it. An evacuation away from a host that heart-beats again is
    ended by an operation of its own (release the source, destroy the guest there),
    recorded here once and carried out by a conductor."""
    wanted = set(hosts)
    started: list[Operation] = []
    with req.state.database.writer() as writer:
        evacuated = [m for m in lifecycle.list_migrations(
            writer.conn, kinds=[MigrationKind.EVACUATION], statuses=[MigrationStatus.DONE])
            if m.source_host in wanted]
        if evacuated:
            queued = {str(op.arguments.get("migration")) for op in operations.pending(
                writer.conn, [m.server_uuid for m in evacuated])
                if op.kind == OperationKind.COMPLETE_EVACUATION}
            for migration in reversed(evacuated):
                if migration.uuid not in queued:
                    started.append(work.accept(req, writer.conn, migration.server_uuid,
                                               OperationKind.COMPLETE_EVACUATION,
                                               {"migration": migration.uuid}))
        left = lifecycle.take_cleanups(writer.conn, hosts)
    for operation in started:
        work.dispatch(req, operation)
    return left


def _state_view(state: OperatorState, destroy: Sequence[str]) -> dict[str, Any]:
    return {"id": state.id, "host": state.host, "disabled": state.disabled,
            "disabled_reason": state.disabled_reason, "forced_down": state.forced_down,
            "destroy": list(destroy)}


def heartbeat(req: ApiRequest) -> Response:
    """An agent's heartbeat: create or refresh its service; answer with the operator's
    state and the guests to destroy."""
    host = string(req.params, "host", required=True)  # the URL's: a column of 255
    assert host is not None
    beat = _heartbeat(host, req.json_object())
    with req.state.database.writer() as writer:
        service = store.record_heartbeat(writer.conn, beat)
    destroy = _to_destroy(req, [beat.host]).get(beat.host, [])
    return json_response({
        "service": {"id": service.id, "host": service.host, "disabled": service.disabled,
                    "disabled_reason": service.disabled_reason,
                    "forced_down": service.forced_down},
        "destroy": destroy,
    })


def heartbeats(req: ApiRequest) -> Response:
    """Many hosts' heartbeat in one request (a fleet of simulated hosts, or any agent
    process running several): ``{"services": [{"host": ..., <a heartbeat's fields>}],
    "alive": [host, ...]}``. ``services`` are full reports (new hosts, changed
    reports); ``alive`` hosts only say they are there. The answer lists, under
    ``services``, every host reported in full and every other host the operator
    disabled or forced down or that has guests to destroy (a host not listed is
    enabled with nothing to do), and under ``unknown`` the ``alive`` hosts the API has
    no service for, which must report in full."""
    body = req.json_object()
    reports = body.get("services") or []
    alive = body.get("alive") or []
    if not isinstance(reports, list) or not all(
            isinstance(r, dict) and isinstance(r.get("host"), str) and r["host"]
            for r in reports):
        raise BadRequest("'services' must be a list of heartbeats, each with its 'host'.")
    if not isinstance(alive, list) or not all(isinstance(h, str) and h for h in alive):
        raise BadRequest("'alive' must be a list of host names.")
    if len(reports) + len(alive) > MAX_HEARTBEATS:
        raise BadRequest(f"A fleet heartbeat carries at most {MAX_HEARTBEATS} hosts; "
                         f"this one has {len(reports) + len(alive)}: send several.")
    beats = [_heartbeat(r["host"], {k: v for k, v in r.items() if k != "host"})
             for r in reports]
    hosts = [b.host for b in beats] + alive
    if len(set(hosts)) != len(hosts):
        raise BadRequest("A host appears more than once in the heartbeat.")
    with req.state.database.writer() as writer:
        reported = store.record_heartbeats(writer.conn, beats) if beats else {}
        unknown = store.touch_services(writer.conn, alive) if alive else set()
        states = {**store.operator_states(writer.conn, alive), **reported}
    destroy = _to_destroy(req, [h for h in hosts if h not in unknown])
    for host in destroy:
        if host not in states:
            with req.state.database.reader() as conn:
                found = store.find_service_by_host(conn, host)
            if found is not None:
                states[host] = OperatorState(found.id, host, found.disabled,
                                             found.disabled_reason, found.forced_down)
    return json_response({
        "services": {host: _state_view(state, destroy.get(host, []))
                     for host, state in states.items()},
        "unknown": sorted(unknown),
    })
