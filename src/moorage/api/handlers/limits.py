"""GET /limits: the caller's project's limits and usage under nova's names (an admin:
another project's, ?tenant_id=); no rate limits, as nova since Newton."""

from __future__ import annotations

from moorage.api import microversion as mv
from moorage.api.handlers.quota_sets import check_query
from moorage.api.http import ApiRequest, json_response
from moorage.api.quotas import engine
from moorage.api.quotas.resources import NETWORK, Resource
from moorage.jsonvalue import JSONValue
from moorage.web import Response

R = Resource
# nova's names of each limit (views/limits.py), and of each usage shown.
_ABSOLUTE: dict[Resource, tuple[str, ...]] = {
    R.RAM: ("maxTotalRAMSize",),
    R.INSTANCES: ("maxTotalInstances",),
    R.CORES: ("maxTotalCores",),
    R.KEY_PAIRS: ("maxTotalKeypairs",),
    R.FLOATING_IPS: ("maxTotalFloatingIps",),
    R.METADATA_ITEMS: ("maxServerMeta", "maxImageMeta"),
    R.INJECTED_FILES: ("maxPersonality",),
    R.INJECTED_FILE_CONTENT_BYTES: ("maxPersonalitySize",),
    R.SECURITY_GROUPS: ("maxSecurityGroups",),
    R.SECURITY_GROUP_RULES: ("maxSecurityGroupRules",),
    R.SERVER_GROUPS: ("maxServerGroups",),
    R.SERVER_GROUP_MEMBERS: ("maxServerGroupMembers",),
}
_USED: dict[str, Resource] = {
    "totalRAMUsed": R.RAM,
    "totalCoresUsed": R.CORES,
    "totalInstancesUsed": R.INSTANCES,
    "totalFloatingIpsUsed": R.FLOATING_IPS,
    "totalSecurityGroupsUsed": R.SECURITY_GROUPS,
    "totalServerGroupsUsed": R.SERVER_GROUPS,
}
TENANT = "tenant_id"


def _hidden(req: ApiRequest) -> frozenset[Resource]:
    """What /limits leaves out at the request's version (nova's filtered limits)."""
    if req.at(mv.QUOTA_NO_INJECTED_FILES):
        return NETWORK | {R.INJECTED_FILES, R.INJECTED_FILE_CONTENT_BYTES}
    if req.at(mv.QUOTA_NO_NETWORK):
        return NETWORK
    return frozenset()


def show_limits(req: ApiRequest) -> Response:
    check_query(req, (TENANT,))
    req.authorize("os_compute_api:limits", {})
    project_id = req.context.project_id or ""
    if TENANT in req.query:
        project_id = req.query.get(TENANT) or ""
        req.authorize("os_compute_api:limits:other_project", {"project_id": project_id})
    hidden = _hidden(req)
    with req.state.database.reader() as conn:
        found = engine.limits(conn, req.state.conf, project_id)
        counted = engine.count(conn, project_id, "", set(_USED.values()) - hidden)
    absolute: dict[str, JSONValue] = {}
    for resource, names in _ABSOLUTE.items():
        if resource in hidden:
            continue
        for name in names:
            if name == "maxImageMeta" and req.at(mv.LIMITS_NO_IMAGE_META):
                continue
            absolute[name] = found.project[resource]
    for name, resource in _USED.items():
        if resource not in hidden:
            absolute[name] = counted.project[resource]
    return json_response({"limits": {"rate": [], "absolute": absolute}})
