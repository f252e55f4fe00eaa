"""os-quota-sets and os-quota-class-sets: a project's (or a user's) limits, in nova's
shapes per microversion (``quotas.resources`` says what each shows).

A project's own limits override the defaults ([quota], and the quota class
``default`` an admin sets); a user's own override the project's. An update refuses a
limit below what is in use (unless ``force``) and, for a user, above the project's.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from moorage.api import microversion as mv
from moorage.api.errors import BadRequest
from moorage.api.handlers.common import boolean
from moorage.api.http import ApiRequest, json_response, no_content
from moorage.api.quotas import engine
from moorage.api.quotas.resources import Resource, class_shown, shown
from moorage.api.storage import quotas as stored
from moorage.jsonvalue import JSONValue
from moorage.web import Response

RULE = "os_compute_api:os-quota-sets:"
CLASS_RULE = "os_compute_api:os-quota-class-sets:"
_USER = "user_id"


def check_query(req: ApiRequest, allowed: Collection[str]) -> None:
    """From 2.75 a query parameter the route does not take is a 400."""
    if not req.at(mv.QUOTA_STRICT_QUERY):
        return
    unknown = sorted(set(req.query) - set(allowed))
    if unknown:
        raise BadRequest(f"Invalid input for query parameters {', '.join(unknown)}: "
                         f"not allowed; allowed: {', '.join(sorted(allowed)) or 'none'}.")


def _asked(req: ApiRequest, rule: str) -> tuple[str, str | None]:
    """(project, user or None) of the URL and query, authorized for ``rule``."""
    check_query(req, (_USER,))
    project_id = req.params["project_id"]
    user_id = req.query.get(_USER) or None
    req.authorize(RULE + rule, {"project_id": project_id,
                                "user_id": user_id or req.context.user_id})
    return project_id, user_id


def _body(values: Mapping[Resource, JSONValue], resources: list[Resource],
          ident: str | None) -> dict[str, JSONValue]:
    body: dict[str, JSONValue] = {"id": ident} if ident is not None else {}
    body.update({str(resource): values[resource] for resource in resources})
    return body


def _limits(req: ApiRequest, project_id: str, user_id: str | None) -> Mapping[Resource, int]:
    with req.state.database.reader() as conn:
        found = engine.limits(conn, req.state.conf, project_id, user_id)
    return found.user if user_id else found.project


def show_quota_set(req: ApiRequest) -> Response:
    """A project's limits (a user's, with ?user_id=)."""
    project_id, user_id = _asked(req, "show")
    values = _limits(req, project_id, user_id)
    return json_response({"quota_set": _body(dict(values), shown(req.version), project_id)})


def show_quota_set_detail(req: ApiRequest) -> Response:
    """A project's limits with what is in use (reserved is always 0: nothing is
    reserved ahead, as in nova since Pike)."""
    project_id, user_id = _asked(req, "detail")
    resources = shown(req.version)
    with req.state.database.reader() as conn:
        found = engine.limits(conn, req.state.conf, project_id, user_id)
        counted = engine.count(conn, project_id, user_id or "", resources)
    limits, used = (found.user, counted.user) if user_id else (found.project, counted.project)
    values: dict[Resource, JSONValue] = {
        resource: {"limit": limits[resource], "in_use": used[resource], "reserved": 0}
        for resource in resources}
    return json_response({"quota_set": _body(values, resources, project_id)})


def show_quota_set_defaults(req: ApiRequest) -> Response:
    """The limits a project without its own gets."""
    check_query(req, ())
    project_id = req.params["project_id"]
    req.authorize(RULE + "defaults", {"project_id": project_id})
    with req.state.database.reader() as conn:
        found = stored.read(conn, project_id)
    values = engine.defaults(req.state.conf, found.defaults)
    return json_response({"quota_set": _body(dict(values), shown(req.version), project_id)})


def _limit(value: Any, resource: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BadRequest(f"Invalid input for field {resource!r}: {value!r} is not an "
                         "integer.") from None


def update_quota_set(req: ApiRequest) -> Response:
    """Set some of a project's (or a user's) limits; the answer is all its limits,
    without the id (nova's)."""
    project_id, user_id = _asked(req, "update")
    body = req.json_object("quota_set")
    force = "force" in body and boolean(body["force"], "force")
    asked = {Resource(key): _limit(value, key) for key, value in body.items()
             if key != "force"}
    with req.state.database.writer() as writer:
        if engine.enforced(req.state.conf) and not force:
            _check_settable(req, writer.conn, project_id, user_id, asked)
        stored.set_limits(writer.conn, project_id, user_id,
                          {str(resource): limit for resource, limit in asked.items()})
    values = _limits(req, project_id, user_id)
    return json_response({"quota_set": _body(dict(values), shown(req.version), None)})


def _check_settable(req: ApiRequest, conn: Any, project_id: str, user_id: str | None,
                    asked: Mapping[Resource, int]) -> None:
    """nova's bounds: not below what is in use; a user's not above the project's."""
    found = engine.limits(conn, req.state.conf, project_id, user_id)
    counted = engine.count(conn, project_id, user_id or "", asked)
    used = counted.user if user_id else counted.project
    for resource, limit in asked.items():
        if limit != -1 and limit < used[resource]:
            raise BadRequest(f"Quota limit {limit} for {resource} must be greater than "
                             f"or equal to already used and reserved {used[resource]}.")
        maximum = found.project[resource] if user_id else -1
        if maximum != -1 and (limit == -1 or limit > maximum):
            raise BadRequest(f"Quota limit {limit} for {resource} must be less than or "
                             f"equal to {maximum}.")


def delete_quota_set(req: ApiRequest) -> Response:
    """Forget a project's own limits and its users' (or, with ?user_id=, one user's):
    the defaults apply again. 202, as nova answers."""
    project_id, user_id = _asked(req, "delete")
    with req.state.database.writer() as writer:
        stored.delete_limits(writer.conn, project_id, user_id)
    return no_content(202)


# -- os-quota-class-sets: the defaults (only the class "default" counts) ---------------
def show_quota_class_set(req: ApiRequest) -> Response:
    class_name = req.params["class_name"]
    req.authorize(CLASS_RULE + "show")
    with req.state.database.reader() as conn:
        found = stored.read(conn, "")
    values = engine.defaults(req.state.conf, found.defaults if class_name ==
                             stored.DEFAULT_CLASS else {})
    return json_response({"quota_class_set": _body(dict(values), class_shown(req.version),
                                                   class_name)})


def update_quota_class_set(req: ApiRequest) -> Response:
    class_name = req.params["class_name"]
    req.authorize(CLASS_RULE + "update")
    body = req.json_object("quota_class_set")
    asked = {key: _limit(value, key) for key, value in body.items()}
    if class_name != stored.DEFAULT_CLASS:
        raise BadRequest(f"Only the quota class {stored.DEFAULT_CLASS!r} sets the "
                         f"defaults; {class_name!r} would be ignored, as nova ignores it.")
    with req.state.database.writer() as writer:
        stored.set_defaults(writer.conn, asked)
        found = stored.read(writer.conn, "")
    values = engine.defaults(req.state.conf, found.defaults)
    return json_response({"quota_class_set": _body(dict(values), class_shown(req.version),
                                                   None)})
