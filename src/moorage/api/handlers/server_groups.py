"""Server groups (``/os-server-groups``): a project's groups of servers with a
placement policy, in nova's shapes at each microversion (the os-server-groups gates of
``moorage.api.microversion``).

A group belongs to a project: a non-admin finds only their project's groups (another
project's is a 404, as in nova), an admin finds any. Servers join a group at create
(``os:scheduler_hints: {"group": <uuid>}``, ``member_of_create``); the scheduler and
the conductor's late check keep to its policy (docs/scheduling.md).
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Mapping
from typing import Any

from moorage.api import microversion as mv
from moorage.api.errors import BadRequest, Forbidden, NotFound
from moorage.api.handlers.common import invalid_query, only_known
from moorage.api.handlers.paging import MAX_LIMIT
from moorage.api.http import ApiRequest, json_response, no_content
from moorage.api.quotas import admission
from moorage.api.quotas.engine import OverQuota
from moorage.jsonvalue import JSONValue
from moorage.lifecycle import server_groups as store
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.server_groups import ServerGroupRecord
from moorage.scheduler.server_groups import RULED_POLICIES, GroupPolicy
from moorage.web import Response

_RULE = "os_compute_api:os-server-groups:"
_LIST_QUERY = ("all_projects", "limit", "offset")
MAX_OFFSET = 2**62

View = dict[str, JSONValue]


def group_view(req: ApiRequest, group: ServerGroupRecord) -> View:
    """A group at the asked version: its policies list and an empty metadata before
    2.64, its policy and rules from it; its owner from 2.13."""
    view: View = {"id": group.uuid, "name": group.name}
    if req.at(mv.SERVER_GROUP_POLICY_RULES):
        view["policy"] = str(group.policy)
        view["rules"] = dict(group.rules)
    else:
        view["policies"] = [str(group.policy)]
        view["metadata"] = {}
    view["members"] = list(group.members)
    if req.at(mv.SERVER_GROUP_OWNER):
        view["project_id"] = group.project_id
        view["user_id"] = group.user_id
    return view


def _not_found(group_uuid: str) -> NotFound:
    return NotFound(f"Instance group {group_uuid} could not be found.")


def _scope(req: ApiRequest) -> str | None:
    """Whose groups the caller finds: any (an admin), else their project's."""
    return None if req.context.is_admin else req.context.project_id or ""


def _load(req: ApiRequest, group_uuid: str) -> ServerGroupRecord:
    with req.state.database.reader() as conn:
        found = store.find_group(conn, group_uuid, _scope(req))
    if found is None:
        raise _not_found(group_uuid)
    return found


def _policy_and_rules(req: ApiRequest, body: Mapping[str, Any]
                      ) -> tuple[GroupPolicy, dict[str, int]]:
    """The policy (and from 2.64 the rules) of a create body the version's schema
    passed; rules only for anti-affinity, as in nova."""
    if not req.at(mv.SERVER_GROUP_POLICY_RULES):
        return GroupPolicy(body["policies"][0]), {}
    policy = GroupPolicy(body["policy"])
    rules = {str(k): int(v) for k, v in (body.get("rules") or {}).items()}
    if rules and policy not in RULED_POLICIES:
        raise BadRequest(f"Invalid input for field 'rules': only anti-affinity policy "
                         f"supports rules, not {policy}.")
    return policy, rules


def _count(req: ApiRequest, name: str) -> int | None:
    """``limit`` or ``offset``: non-negative integers (nova reads the last given)."""
    values = req.query.getall(name)
    for value in values:
        if not (value.isascii() and value.isdigit()):
            raise invalid_query(name, value, f"{value!r} is not a non-negative integer.")
    return int(values[-1]) if values else None


# -- the handlers ----------------------------------------------------------------------
def create_server_group(req: ApiRequest) -> Response:
    """Create a group of the caller's project with the body's policy (and rules)."""
    project_id = req.context.project_id or ""
    req.authorize(_RULE + "create", {"project_id": project_id})
    body = req.json_object("server_group")
    policy, rules = _policy_and_rules(req, body)
    group = ServerGroupRecord(uuid=str(uuidlib.uuid4()), name=str(body["name"]),
                              project_id=project_id, user_id=req.context.user_id or "",
                              policy=policy, rules=rules)
    with req.state.database.writer() as writer:
        try:
            admission.admit_server_group(writer.conn, req.state.conf, project_id,
                                         group.user_id)
        except OverQuota as refusal:
            raise Forbidden(str(refusal)) from None
        store.create_group(writer.conn, group)
    return json_response({"server_group": group_view(req, group)})


def list_server_groups(req: ApiRequest) -> Response:
    """The caller's project's groups (an admin's ``all_projects``: every project's),
    cut by nova's ``offset`` and ``limit`` (at most MAX_LIMIT; 0 is MAX_LIMIT too)."""
    project_id = req.context.project_id or ""
    req.authorize(_RULE + "index", {"project_id": project_id})
    if req.at(mv.SERVER_GROUP_STRICT_QUERY):
        only_known(req.query, _LIST_QUERY)
    scope: str | None = project_id
    if "all_projects" in req.query and req.context.is_admin:
        req.authorize(_RULE + "index:all_projects", {"project_id": project_id})
        scope = None
    limit, offset = _count(req, "limit"), _count(req, "offset")
    # An offset past every group lists none: capped to what the databases' OFFSET takes.
    offset = min(offset or 0, MAX_OFFSET)
    with req.state.database.reader() as conn:
        found = store.list_groups(conn, scope, limit=min(limit or MAX_LIMIT, MAX_LIMIT),
                                  offset=offset)
    return json_response({"server_groups": [group_view(req, g) for g in found]})


def show_server_group(req: ApiRequest) -> Response:
    group = _load(req, req.params["server_group_id"])
    req.authorize(_RULE + "show", {"project_id": group.project_id})
    return json_response({"server_group": group_view(req, group)})


def delete_server_group(req: ApiRequest) -> Response:
    """Delete a group; its servers stay, in no group."""
    group = _load(req, req.params["server_group_id"])
    req.authorize(_RULE + "delete", {"project_id": group.project_id})
    with req.state.database.writer() as writer:
        if not store.delete_group(writer.conn, group.uuid):
            raise _not_found(group.uuid)
    return no_content(204)


# -- a server's group at create ---------------------------------------------------------
def member_of_create(req: ApiRequest, hints: Mapping[str, Any]) -> str | None:
    """The group a create's ``os:scheduler_hints`` names (its uuid, as stored), checked
    as nova checks it: a group the caller cannot find (another project's, for a
    non-admin) is a 400."""
    hint = hints.get("group")
    if hint is None:
        return None
    try:
        group_uuid = str(uuidlib.UUID(str(hint)))
    except ValueError:
        raise BadRequest(f"Invalid input for field 'os:scheduler_hints/group': {hint!r} "
                         "is not a server group's uuid.") from None
    with req.state.database.reader() as conn:
        if not store.exists(conn, group_uuid, _scope(req)):
            raise BadRequest(f"Instance group {group_uuid} could not be found.")
    return group_uuid


def groups_of(req: ApiRequest, record: ServerRecord) -> list[JSONValue]:
    """The groups a shown server is in (2.71's ``server_groups``): a server joins one
    only at create, by its hint, so a server without one is read no further."""
    if store.hinted(record) is None:
        return []
    with req.state.database.reader() as conn:
        return list(store.groups_of(conn, record.uuid))
