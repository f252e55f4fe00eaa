"""Usages: GET /resource_providers/{uuid}/usages (from the index) and GET /usages (1.9+,
from the database, grouped by consumer type from 1.38)."""

from moorage.jsonvalue import JSONValue
from moorage.placement.api.schema import CONSUMER_TYPE_PATTERN, Schema, validator
from moorage.placement.http import Request, Response, since
from moorage.placement.storage import usages


def list_provider_usages(req: Request) -> Response:
    """What is allocated of each class the provider has inventory of (0 when unused).

    Last-modified is now, as upstream: the question is "what is the usage now?".
    """
    from moorage.placement.api.common import provider_or_404

    req.require_accept_json()
    req.authorize("placement:resource_providers:usages")
    with req.service.index.fresh() as index:
        record = provider_or_404(index, req.path_params["uuid"])
        body: dict[str, JSONValue] = {
            "resource_provider_generation": record.generation,
            "usages": {rc: record.used(rc) for rc in record.inventories},
        }
    return req.json_response(body)


# GET /usages query: a project is required; 1.38 adds consumer_type, which may also
# be "all" or "unknown".
_OWNER_ID: Schema = {"type": "string", "minLength": 1, "maxLength": 255}
_CONSUMER_TYPE: Schema = {"type": "string", "pattern": f"{CONSUMER_TYPE_PATTERN}|^all|^unknown$",
                  "minLength": 1, "maxLength": 255}
TOTALS_QUERY = validator({
    "type": "object",
    "properties": {"project_id": _OWNER_ID, "user_id": _OWNER_ID},
    "required": ["project_id"],
    "additionalProperties": False,
})
TOTALS_QUERY_1_38 = validator({
    "type": "object",
    "properties": {"project_id": _OWNER_ID, "user_id": _OWNER_ID,
                   "consumer_type": _CONSUMER_TYPE},
    "required": ["project_id"],
    "additionalProperties": False,
})


@since("1.9")
def total_usages(req: Request) -> Response:
    """GET /usages: what a project (or one of its users) consumes, by resource class;
    from 1.38 by consumer type, with the number of consumers of each type.

    Last-modified is now, as upstream.
    """
    req.require_accept_json()
    query = req.query_dict()
    req.authorize("placement:usages", target={"project_id": query.get("project_id")})
    by_type = req.version >= (1, 38)
    req.validate_query(TOTALS_QUERY_1_38 if by_type else TOTALS_QUERY)
    project_id, user_id = query["project_id"], query.get("user_id")
    with req.service.db.reader() as conn:
        if by_type:
            found: dict[str, dict[str, int]] | dict[str, int] = usages.totals_by_type(
                conn, project_id, user_id, query.get("consumer_type"))
        else:
            found = usages.totals(conn, project_id, user_id)
    return req.json_response({"usages": found})
