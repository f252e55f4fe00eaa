"""os-simple-tenant-usage: what each project's servers used over a period, in nova's
shapes: hours of each server that ran in [start, end), times its flavor's vCPUs, MiB
and GiB of disk, summed per project.

Read from the servers' rows: launched_at starts a server's time, deleted_at ends it
(deleted servers stay as rows). A server is billed for its flavor now (a resized
server's new one, for the whole period, as nova does).
"""

from __future__ import annotations

import datetime

from moorage.api import microversion as mv
from moorage.api.errors import BadRequest
from moorage.api.handlers.paging import MAX_LIMIT, next_links, page_limit
from moorage.api.handlers.quota_sets import check_query
from moorage.api.http import ApiRequest, json_response
from moorage.api.timestamps import nova_time
from moorage.db.clock import utcnow_precise
from moorage.jsonvalue import JSONValue
from moorage.lifecycle import usage
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.states import VM_STATES
from moorage.web import Response

RULE = "os_compute_api:os-simple-tenant-usage:"
COLLECTION = "os-simple-tenant-usage"
_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d %H:%M:%S.%f")
_QUERY = ("start", "end", "detailed", "limit", "marker")


def _moment(text: str | None) -> datetime.datetime:
    """nova's three spellings of a time (naive UTC); now when not given (read anew
    for each: without start and end, the period is the moment between the two reads,
    as in nova)."""
    if not text:
        return utcnow_precise()
    for form in _FORMATS:
        try:
            return datetime.datetime.strptime(text, form)
        except ValueError:
            continue
    raise BadRequest("Invalid datetime string: Datetime is in invalid format")


def _period(req: ApiRequest) -> tuple[datetime.datetime, datetime.datetime]:
    start = _moment(req.query.get("start"))
    stop = _moment(req.query.get("end"))
    if not start < stop:
        raise BadRequest("Invalid start time. The start time cannot occur after the end "
                         "time.")
    return start, min(stop, utcnow_precise())


def _hours(record: ServerRecord, start: datetime.datetime, stop: datetime.datetime) -> float:
    """The hours ``record`` ran within [start, stop] (nova's _hours_for)."""
    launched, ended = record.launched_at, record.deleted_at
    if launched is None or (ended is not None and ended < start) or launched > stop:
        return 0
    until = min(stop, ended) if ended is not None else stop
    return (until - max(launched, start)).total_seconds() / 3600.0


def _server_usage(record: ServerRecord, hours: float, now: datetime.datetime
                  ) -> dict[str, JSONValue]:
    assert record.launched_at is not None  # only launched servers are read
    flavor = record.flavor
    ended = record.deleted_at
    state = "terminated" if ended is not None else VM_STATES.get(record.status,
                                                                 record.status.lower())
    return {
        "hours": hours, "flavor": flavor.name,
        "instance_id": record.uuid, "name": record.name, "tenant_id": record.project_id,
        "memory_mb": flavor.memory_mb, "local_gb": flavor.root_gb + flavor.ephemeral_gb,
        "vcpus": flavor.vcpus, "started_at": nova_time(record.launched_at),
        "ended_at": nova_time(ended), "state": state,
        "uptime": int(((ended or now) - record.launched_at).total_seconds()),
    }


def _usages(req: ApiRequest, project_id: str | None, detailed: bool
            ) -> tuple[list[dict[str, JSONValue]], int, str | None]:
    """(each project's usage, how many servers were read, the last one's uuid)."""
    start, stop = _period(req)
    paged = req.at(mv.TENANT_USAGE_PAGING)
    limit = page_limit(req.query) if paged else MAX_LIMIT
    marker = req.query.get("marker") if paged else None
    with req.state.database.reader() as conn:
        try:
            found = usage.active_between(conn, start, stop, project_id=project_id,
                                         limit=limit, marker=marker)
        except LookupError:
            raise BadRequest(f"Marker {marker} could not be found.") from None
    now = utcnow_precise()
    summaries: dict[str, dict[str, JSONValue]] = {}
    totals: dict[str, dict[str, float]] = {}
    for record in found:
        hours = _hours(record, start, stop)
        flavor = record.flavor
        if record.project_id not in summaries:
            summaries[record.project_id] = {
                "tenant_id": record.project_id,
                **({"server_usages": []} if detailed else {}),
                "start": nova_time(start), "stop": nova_time(stop)}
            totals[record.project_id] = dict.fromkeys(
                ("total_local_gb_usage", "total_vcpus_usage", "total_memory_mb_usage",
                 "total_hours"), 0.0)
        total = totals[record.project_id]
        total["total_local_gb_usage"] += (flavor.root_gb + flavor.ephemeral_gb) * hours
        total["total_vcpus_usage"] += flavor.vcpus * hours
        total["total_memory_mb_usage"] += flavor.memory_mb * hours
        total["total_hours"] += hours
        if detailed:
            listed = summaries[record.project_id]["server_usages"]
            assert isinstance(listed, list)
            listed.append(_server_usage(record, hours, now))
    bodies = [{**summary, **totals[project]} for project, summary in summaries.items()]
    return bodies, len(found), found[-1].uuid if found else None


def list_tenant_usages(req: ApiRequest) -> Response:
    """Every project's usage over the period (admins); ``detailed=1``: each server's."""
    check_query(req, _QUERY)
    req.authorize(RULE + "list")
    detailed = req.query.get("detailed", "0") == "1"
    bodies, read, last = _usages(req, None, detailed)
    body: dict[str, JSONValue] = {"tenant_usages": list(bodies)}
    if req.at(mv.TENANT_USAGE_PAGING):
        links = next_links(req, COLLECTION, read, last)
        if links:
            body["tenant_usages_links"] = list(links)
    return json_response(body)


def show_tenant_usage(req: ApiRequest) -> Response:
    """One project's usage over the period, with each server's."""
    check_query(req, _QUERY)
    project_id = req.params["tenant_id"]
    req.authorize(RULE + "show", {"project_id": project_id})
    bodies, read, last = _usages(req, project_id, True)
    body: dict[str, JSONValue] = {"tenant_usage": bodies[0] if bodies else {}}
    if req.at(mv.TENANT_USAGE_PAGING):
        links = next_links(req, f"{COLLECTION}/{project_id}", read, last)
        if links:
            body["tenant_usage_links"] = list(links)
    return json_response(body)
