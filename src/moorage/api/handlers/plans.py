"""POST /v2.1/scheduler/plan: the dry run of a boot, resize or cold migration; and
GET /v2.1/scheduler/hosts, what the scheduler knows of each host beyond placement.

The request is validated as the real one is (servers.py), its request spec built
as the conductor builds it (lifecycle/specs.py), and the scheduler's pipeline run
whole (request filters, placement, host filters, weighers) without the claim:
nothing is written anywhere. The answer is the plan: the host the claim would try
first, the alternates, what each request filter added, the recorded decisions,
``may_differ``: every option that makes the boot's choice random, with the hosts it
may choose from, and ``refusals``: the hosts of the plan whose own reports say they
will refuse the guest (``certain`` when there is none of either).
A plan that finds no host is still an answer (200), with the NoValidHost message.
Hosts are named only to callers the host policy lets see them.
"""

from __future__ import annotations

from typing import Any

from moorage.api.errors import BadRequest
from moorage.api.handlers import servers
from moorage.api.handlers.server_records import server_or_404
from moorage.api.http import ApiRequest, json_response
from moorage.jsonvalue import JSONValue
from moorage.lifecycle import server_groups
from moorage.lifecycle.specs import move_spec, request_spec
from moorage.model.disclosure import without_hosts
from moorage.placement.provider_names import provider_uuid
from moorage.scheduler.bootability import image_requirements
from moorage.scheduler.decisions import for_user
from moorage.scheduler.filter_records import records_json
from moorage.scheduler.manager import Scheduler
from moorage.scheduler.refusals import Refusal, refusals
from moorage.scheduler.types import NoValidHost, RequestSpec, Selection
from moorage.scheduler.uncertainty import Difference
from moorage.web import Response

OPERATIONS = ("server", "resize", "migrate")


def plan(req: ApiRequest) -> Response:
    body = req.json_object()
    if len(body) != 1 or next(iter(body)) not in OPERATIONS:
        raise BadRequest("Give exactly one of 'server' (a boot, as the body of POST "
                         "/servers), 'resize' ({server_id, flavorRef}) or 'migrate' "
                         f"({{server_id, host}}); got {', '.join(sorted(body)) or 'nothing'}.")
    req.authorize("moorage:scheduler:plan")
    (operation, argument), = body.items()
    if not isinstance(argument, dict):
        raise BadRequest(f"'{operation}' must be an object, not {argument!r}.")
    spec = _spec(req, operation, argument)
    selection: Selection | None = None
    user_message: str | None = None
    try:
        selection = _scheduler(req).plan(spec)
    except NoValidHost as exc:
        found: dict[str, Any] = {
            "host": None, "node": None, "alternates": [], "message": str(exc),
            "decisions": exc.decisions.to_json(), "may_differ": []}
        user_message = f"No valid host was found. {exc.user_reason}".rstrip()
    else:
        found = {"host": selection.destination.host, "node": selection.destination.node,
                 "alternates": [d.host for d in selection.alternates], "message": None,
                 "decisions": selection.decisions.to_json(),
                 "may_differ": [d.to_json() for d in selection.differences]}
    refused = _refusals(req, spec, selection)
    found["refusals"] = [r.to_json() for r in refused]
    found["operation"] = "build" if operation == "server" else operation
    found["filters"] = records_json(spec.filter_records)
    if not req.sees_hosts():
        found.update(host=None, node=None, alternates=[],
                     decisions=for_user(found["decisions"], req.floor()),
                     message=user_message,
                     may_differ=[without_hosts(d, Difference) for d in found["may_differ"]],
                     refusals=[without_hosts(r, Refusal) for r in found["refusals"]])
    found["schedulable"] = found["message"] is None
    # The boot that follows lands on the plan's host unless the cloud changes meanwhile,
    # one of ``may_differ`` makes its choice random, or the host refuses the guest.
    found["certain"] = (found["schedulable"] and not found["may_differ"]
                        and not any(r.position == 0 for r in refused))
    return json_response({"plan": found})


def hosts(req: ApiRequest) -> Response:
    """GET /v2.1/scheduler/hosts (admins): every compute host as the scheduler sees it,
    with each node's provider and what its driver reports unsupported (the families an
    image property names, and the guest features): the "no" placement does not keep,
    read by the upgrade preflight to tell a host that cannot from one not reporting
    yet."""
    req.authorize("moorage:scheduler:hosts")
    found: list[JSONValue] = []
    for name, info in sorted(req.state.catalog.hosts().items()):
        found.append({
            "host": name, "enabled": info.enabled, "up": info.up,
            "nodes": [{"node": node, "provider_uuid": provider_uuid(node),
                       "refused": sorted(info.refused.get(node, ()))}
                      for node in info.nodes]})
    return json_response({"hosts": found})


def _refusals(req: ApiRequest, spec: RequestSpec, selection: Selection | None
              ) -> tuple[Refusal, ...]:
    """The hosts of the plan that report a trait the image needs unsupported: with the
    prefilters off, placement did not avoid them, and each will refuse the guest."""
    if selection is None:
        return ()
    hosts = req.state.catalog.hosts()
    tried = [(d.host, hosts[d.host].refused.get(d.node, frozenset()) if d.host in hosts
              else frozenset()) for d in (selection.destination, *selection.alternates)]
    return refusals(image_requirements(spec.image), tried)


def _spec(req: ApiRequest, operation: str, argument: dict[str, Any]) -> RequestSpec:
    """The request spec the real operation would schedule with."""
    if operation == "server":
        req.authorize("os_compute_api:servers:create")
        record = servers.new_server(req, argument)
        return request_spec(record, requested_host=record.requested_host)
    server_id = argument.get("server_id")
    if not isinstance(server_id, str) or not server_id:
        raise BadRequest(f"'{operation}' needs 'server_id', the server to plan the "
                         f"{operation} of.")
    record = server_or_404(req, server_id)
    rest = {k: v for k, v in argument.items() if k != "server_id"}
    with req.state.database.reader() as conn:
        group = server_groups.placement_of(conn, record)
    if operation == "resize":
        _, flavor = servers.resize_target(req, record, rest)
        return move_spec(record, flavor, None, group)
    host = servers.migrate_target(req, record, rest)
    return move_spec(record, None, host, group)


def _scheduler(req: ApiRequest) -> Scheduler:
    """The process's scheduler; one made for planning where no conductor runs here."""
    if req.state.scheduler is None:
        req.state.scheduler = Scheduler(req.state.conf, req.state.placement,
                                        req.state.catalog)
    scheduler: Scheduler = req.state.scheduler
    return scheduler

