"""The agents' heartbeat (``PUT /internal/services/{host}``, and a fleet's many hosts at
once on ``PUT /internal/services``): it registers a compute service or refreshes what
its agent reports, and answers with the operator's state of the service and the guests
the agent should destroy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from moorage.api import work
from moorage.api.errors import BadRequest
from moorage.api.handlers.common import string
from moorage.api.http import ApiRequest, json_response
from moorage.api.schemas import MAX_HEARTBEATS, MAX_REFUSED
from moorage.api.storage import services as store
from moorage.api.storage.services import Heartbeat, OperatorState
from moorage.compute import BINARY
from moorage.lifecycle import operations
from moorage.lifecycle import store as lifecycle
from moorage.lifecycle.operations import Operation
from moorage.lifecycle.states import MigrationKind, MigrationStatus, OperationKind
from moorage.model.vocabulary import is_trait_name
from moorage.web import Response


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
    refused = body.get("refused") or {}
    if not isinstance(refused, dict) or not all(
            node in nodes and isinstance(traits, list) and len(traits) <= MAX_REFUSED
            and all(isinstance(t, str) and is_trait_name(t) for t in traits)
            for node, traits in refused.items()):
        raise BadRequest(f"'refused' must map nodes of 'nodes' to lists of at most "
                         f"{MAX_REFUSED} trait names.")
    return Heartbeat(
        host=host,
        binary=string(body, "binary") or BINARY,
        driver=string(body, "driver", required=True) or "",
        nodes=nodes,
        agent_url=string(body, "agent_url"),
        supported_instances=[(t[0], t[1], t[2]) for t in triples],
        hypervisor_version=version,
        version=string(body, "version", allow_none=True),
        refused={node: list(traits) for node, traits in refused.items()},
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
