"""Hypervisors (``/os-hypervisors``): one per node of each compute service, with its
service's state (up/down) and status (enabled/disabled), in every microversion's shape
(``hypervisor_views``), from what the API's database and placement know
(``hypervisor_facts``).

The routes nova retired answer 404 from the version that retired them, as nova's do:
``/{pattern}/search`` and ``/{pattern}/servers`` from 2.53 (query parameters of the
list replace them), ``/statistics`` and ``/{id}/uptime`` from 2.88.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from moorage.api import microversion
from moorage.api.errors import BadRequest, NotFound, NotImplementedYet
from moorage.api.handlers import hypervisor_facts, hypervisor_views
from moorage.api.handlers.common import flag, once, only_known
from moorage.api.handlers.hypervisor_views import Hypervisor, Page
from moorage.api.handlers.paging import MAX_LIMIT, Paging, link_after, paging
from moorage.api.handlers.path_ids import integer_id, uuid_id
from moorage.api.http import ApiRequest, json_response
from moorage.compute.client import AgentUnreachable
from moorage.jsonvalue import JSONValue
from moorage.web import Response

# What the list takes from 2.53 (anything else is a 400 there).
LIST_PARAMETERS = ("limit", "marker", "hypervisor_hostname_pattern", "with_servers")
# nova's host name parameter (parameter_types.fqdn).
_HOSTNAME_PATTERN = re.compile(r"^[a-zA-Z0-9-._]{1,255}$")
# nova's answer where a route does not exist at the asked version.
_NO_SUCH_ROUTE = "The resource could not be found."


def _matching(hypervisors: Sequence[Hypervisor], pattern: str) -> list[Hypervisor]:
    found = [hypervisor for hypervisor in hypervisors
             if hypervisor_views.hostname_matches(pattern, hypervisor.node.hypervisor_hostname)]
    if not found:
        raise NotFound(f"No hypervisor matching '{pattern}' could be found.")
    return found


def _list(req: ApiRequest, *, detail: bool) -> Response:
    """The list and the detailed list: the asked page, or the hypervisors whose name
    matches the pattern (2.53), with their servers when asked for (2.53)."""
    strict = req.at(microversion.SERVICE_UUIDS)
    if strict:
        only_known(req.query, LIST_PARAMETERS)
    asked = Paging()
    if req.at(microversion.HYPERVISOR_PAGING):
        # From 2.33 a page is at most [api] max_limit long, asked for or not, as nova's
        # get_limit_and_marker cuts it; before, the list is whole.
        asked = paging(req.query, strict=strict)
        if asked.limit is None:
            asked = Paging(MAX_LIMIT, asked.marker)
    pattern = once(req.query, "hypervisor_hostname_pattern") if strict else None
    servers_asked = strict and flag(req.query, "with_servers", strict=True)
    found = hypervisor_facts.all_hypervisors(req)
    if pattern is not None:
        if not _HOSTNAME_PATTERN.match(pattern):
            raise BadRequest(f"Invalid query parameter 'hypervisor_hostname_pattern': "
                             f"{pattern!r} is not a host name (1 to 255 letters, digits, "
                             "'-', '.', '_').")
        if "limit" in req.query or asked.marker is not None:
            raise BadRequest("Paging over hypervisors with the hypervisor_hostname_pattern "
                             "query parameter is not supported.")
        page = Page(_matching(found, pattern))
    else:
        page = hypervisor_views.page_of(found, asked, req.version)
    statistics = detail and not req.at(microversion.HYPERVISOR_NO_STATISTICS)
    hypervisors = page.hypervisors
    if servers_asked or statistics:
        hypervisors = hypervisor_facts.with_servers(req, hypervisors)
    if statistics:
        hypervisors = hypervisor_facts.with_resources(req, hypervisors)
    view = hypervisor_views.detail_view if detail else hypervisor_views.brief_view
    shown: list[JSONValue] = []
    for hypervisor in hypervisors:
        one = view(hypervisor, req.version)
        shown.append(hypervisor_views.with_servers(one, hypervisor, req.version)
                     if servers_asked else one)
    body: dict[str, JSONValue] = {"hypervisors": shown}
    if page.next_marker is not None and req.at(microversion.HYPERVISOR_PAGING):
        collection = "os-hypervisors/detail" if detail else "os-hypervisors"
        body["hypervisors_links"] = link_after(req, collection, page.next_marker)
    return json_response(body)


def list_hypervisors(req: ApiRequest) -> Response:
    """List hypervisors (id, name, state, status); limit and marker page them (2.33);
    hypervisor_hostname_pattern and with_servers (2.53)."""
    req.authorize("os_compute_api:os-hypervisors:list")
    return _list(req, detail=False)


def list_hypervisors_detail(req: ApiRequest) -> Response:
    """List hypervisors with their type, version, address and service, and, before
    2.88, their resources and servers' counts (from 2.88, their uptime)."""
    req.authorize("os_compute_api:os-hypervisors:list-detail")
    return _list(req, detail=True)


def _hypervisor_of_path(req: ApiRequest) -> Hypervisor:
    """The hypervisor the path names: by integer id before 2.53 (anything else is a
    404 there), by uuid from 2.53 (anything else is a 400)."""
    text = req.params["hypervisor_id"]
    missing = NotFound(f"Hypervisor with ID '{text}' could not be found.")
    if req.at(microversion.SERVICE_UUIDS):
        wanted: int | str | None = uuid_id(text)
        if wanted is None:
            raise BadRequest(f"Invalid uuid {text}")
    else:
        wanted = integer_id(text)
        if wanted is None:
            raise missing
    for hypervisor in hypervisor_facts.all_hypervisors(req):
        if wanted in (hypervisor.node.id, hypervisor.node.uuid):
            return hypervisor
    raise missing


def show_hypervisor(req: ApiRequest) -> Response:
    """Show one hypervisor as detail shows it; with_servers adds its servers (2.53)."""
    req.authorize("os_compute_api:os-hypervisors:show")
    strict = req.at(microversion.SERVICE_UUIDS)
    if strict:
        only_known(req.query, ("with_servers",))
    servers_asked = strict and flag(req.query, "with_servers", strict=True)
    hypervisors = [_hypervisor_of_path(req)]
    statistics = not req.at(microversion.HYPERVISOR_NO_STATISTICS)
    if servers_asked or statistics:
        hypervisors = hypervisor_facts.with_servers(req, hypervisors)
    if statistics:
        hypervisors = hypervisor_facts.with_resources(req, hypervisors)
    [hypervisor] = hypervisors
    view = hypervisor_views.detail_view(hypervisor, req.version)
    if servers_asked:
        view = hypervisor_views.with_servers(view, hypervisor, req.version)
    return json_response({"hypervisor": view})


def hypervisor_statistics(req: ApiRequest) -> Response:
    """The resources of the hypervisors of enabled services, summed (before 2.88)."""
    if req.at(microversion.HYPERVISOR_NO_STATISTICS):
        raise NotFound(_NO_SUCH_ROUTE)
    req.authorize("os_compute_api:os-hypervisors:statistics")
    enabled = [hypervisor for hypervisor in hypervisor_facts.all_hypervisors(req)
               if not hypervisor.service.disabled]
    enabled = hypervisor_facts.with_resources(req,
                                              hypervisor_facts.with_servers(req, enabled))
    return json_response({"hypervisor_statistics": hypervisor_views.statistics(
        enabled, req.version)})


def hypervisor_uptime(req: ApiRequest) -> Response:
    """A hypervisor's uptime (before 2.88), asked of its host's agent: the line nova's
    drivers report; 501 when the driver cannot tell (a simulated host), as nova
    answers, or 400 when the host is down or does not answer, as nova does."""
    if req.at(microversion.HYPERVISOR_NO_STATISTICS):
        raise NotFound(_NO_SUCH_ROUTE)
    req.authorize("os_compute_api:os-hypervisors:uptime")
    hypervisor = _hypervisor_of_path(req)
    unavailable = BadRequest(f"Compute service of {hypervisor.service.host} is "
                             "unavailable at this time.")
    if not hypervisor.up:
        raise unavailable
    agents = req.state.agents
    try:
        uptime = agents.host_uptime(hypervisor.service.host) if agents is not None else None
    except AgentUnreachable:
        raise unavailable from None
    if uptime is None:
        raise NotImplementedYet("The requested functionality is not supported: the "
                                f"{hypervisor.service.driver} driver of "
                                f"{hypervisor.service.host} does not report its uptime.")
    return json_response({"hypervisor": {
        **hypervisor_views.brief_view(hypervisor, req.version), "uptime": uptime}})


def search_hypervisors(req: ApiRequest) -> Response:
    """The hypervisors whose name matches the pattern (before 2.53)."""
    if req.at(microversion.SERVICE_UUIDS):
        raise NotFound(_NO_SUCH_ROUTE)
    req.authorize("os_compute_api:os-hypervisors:search")
    found = _matching(hypervisor_facts.all_hypervisors(req),
                      req.params["hypervisor_hostname_pattern"])
    return json_response({"hypervisors": [hypervisor_views.brief_view(h, req.version)
                                          for h in found]})


def hypervisor_servers(req: ApiRequest) -> Response:
    """The hypervisors whose name matches the pattern, with their servers (before
    2.53)."""
    if req.at(microversion.SERVICE_UUIDS):
        raise NotFound(_NO_SUCH_ROUTE)
    req.authorize("os_compute_api:os-hypervisors:servers")
    found = hypervisor_facts.with_servers(req, _matching(
        hypervisor_facts.all_hypervisors(req), req.params["hypervisor_hostname_pattern"]))
    return json_response({"hypervisors": [
        hypervisor_views.with_servers(hypervisor_views.brief_view(h, req.version), h,
                                      req.version) for h in found]})
