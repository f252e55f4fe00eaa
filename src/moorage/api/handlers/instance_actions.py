"""A server's actions and their events (``/servers/{id}/os-instance-actions``), in the
shape of the microversion asked for.

What changes with the version (``moorage.api.microversion``): a deleted server's
actions can be read from 2.21; events are shown to every reader of an action from
2.51 (before, only to those ``os-instance-actions:events`` lets see them); from 2.58
actions carry ``updated_at`` and the list pages (``limit``, ``marker`` a request id,
``changes-since``, ``links``) and refuses a parameter it does not know;
``changes-before`` from 2.66; from 2.62 events carry ``hostId`` and, by policy, the
host; ``details`` (what failed) from 2.84, by policy. The traceback is shown only
under ``os-instance-actions:events``, at every version.

Every value is the lifecycle's (``moorage.lifecycle.actions``): the API recorded the
action when it accepted the request, the conductor its events.
"""

from __future__ import annotations

from moorage.api.errors import BadRequest, NotFound
from moorage.api.handlers.common import changes_window, once, only_known
from moorage.api.handlers.paging import next_links, page_limit
from moorage.api.handlers.server_records import target, visible
from moorage.api.http import ApiRequest, json_response
from moorage.api.microversion import (
    ACTION_CHANGES_BEFORE,
    ACTION_EVENT_DETAILS,
    ACTION_EVENT_HOSTS,
    ACTION_EVENTS_SHOWN,
    ACTION_PAGING,
    ACTIONS_OF_DELETED,
)
from moorage.api.server_view import host_id
from moorage.api.timestamps import nova_time
from moorage.jsonvalue import JSONValue
from moorage.lifecycle import actions, store
from moorage.lifecycle.actions import ActionRecord, EventRecord
from moorage.lifecycle.records import ServerRecord
from moorage.web import Response

View = dict[str, JSONValue]
RULE = "os_compute_api:os-instance-actions:"


def _server(req: ApiRequest) -> ServerRecord:
    """The server, deleted or not from 2.21, if the caller may see it (404 otherwise,
    as for a server that does not exist)."""
    uuid = req.params["server_id"]
    with req.state.database.reader() as conn:
        record = store.load_server(conn, uuid, with_deleted=req.at(ACTIONS_OF_DELETED))
    if record is None or not visible(req, record):
        raise NotFound(f"Instance {uuid} could not be found.")
    return record


def _action_view(req: ApiRequest, action: ActionRecord) -> View:
    view: View = {
        "action": action.action,
        "instance_uuid": action.server_uuid,
        "request_id": action.request_id,
        "user_id": action.user_id,
        "project_id": action.project_id,
        "start_time": nova_time(action.start_time),
        "message": action.message,
    }
    if req.at(ACTION_PAGING):
        view["updated_at"] = nova_time(action.updated_at)
    return view


def _event_view(req: ApiRequest, event: EventRecord, project_id: str, *, admin: bool,
                details: bool) -> View:
    """An event as the caller may see it: the traceback and the host only under the
    events rule (``admin``), the hashed host to everyone from 2.62."""
    view: View = {
        "event": event.event,
        "start_time": nova_time(event.start_time),
        "finish_time": nova_time(event.finish_time),
        "result": event.result,
    }
    if admin:
        view["traceback"] = event.traceback
    if req.at(ACTION_EVENT_HOSTS):
        if admin:
            view["host"] = event.host or ""
        view["hostId"] = host_id(project_id, event.host)
    if details:
        view["details"] = event.details
    return view


def list_instance_actions(req: ApiRequest) -> Response:
    """List a server's actions, newest first."""
    record = _server(req)
    req.authorize(RULE + "list", target(record))
    query = req.query
    paged = req.at(ACTION_PAGING)
    since = before = None
    marker: str | None = None
    limit: int | None = None  # before 2.58 nova answers every action, in no page
    if paged:
        known = ("limit", "marker", "changes-since")
        only_known(query, (*known, "changes-before") if req.at(ACTION_CHANGES_BEFORE)
                   else known)
        since, before = changes_window(query, before=req.at(ACTION_CHANGES_BEFORE))
        marker = once(query, "marker")
        once(query, "limit")
        limit = page_limit(query)
    with req.state.database.reader() as conn:
        try:
            found = actions.list_actions(conn, record.uuid, limit=limit, marker=marker,
                                         changes_since=since, changes_before=before)
        except LookupError:
            raise BadRequest(f"Marker {marker} could not be found.") from None
    body: dict[str, JSONValue] = {"instanceActions": [_action_view(req, a) for a in found]}
    if paged:
        links = next_links(req, f"servers/{record.uuid}/os-instance-actions", len(found),
                           found[-1].request_id if found else None)
        if links:
            body["links"] = links
    return json_response(body)


def show_instance_action(req: ApiRequest) -> Response:
    """Show one of a server's actions (named by its request id), with its events."""
    record = _server(req)
    owner = target(record)
    req.authorize(RULE + "show", owner)
    request_id = req.params["request_id"]
    policy = req.state.policy
    admin = policy.allows(RULE + "events", req.context, owner)
    shown = admin or req.at(ACTION_EVENTS_SHOWN)
    with req.state.database.reader() as conn:
        action = actions.find_action(conn, record.uuid, request_id)
        events = actions.events_of(conn, action.id) if action and shown else []
    if action is None:
        raise NotFound(f"Action {request_id} not found")
    view = _action_view(req, action)
    if shown:
        details = req.at(ACTION_EVENT_DETAILS) and policy.allows(
            RULE + "events:details", req.context, owner)
        project_id = action.project_id or record.project_id
        view["events"] = [_event_view(req, event, project_id, admin=admin, details=details)
                          for event in events]
    return json_response({"instanceAction": view})
