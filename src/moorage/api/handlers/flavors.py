"""Flavors and their extra specs, in the shape of the microversion asked for
(``/flavors``, ``/flavors/{id}/os-extra_specs``).

What changes with the version (``moorage.api.microversion``): a description from 2.55
(and ``PUT /flavors/{id}`` to change it), the extra specs in a flavor's detail from
2.61 when policy lets the caller read them, ``swap`` 0 rather than "" from 2.75, and
from 2.75 a list refuses query parameters it does not know. Extra specs are validated
when written (``moorage.api.extra_specs``); a bad one is a 400 and nothing is stored.
"""

from __future__ import annotations

import re
import uuid as uuidlib
from collections.abc import Mapping

from moorage.api import lookups
from moorage.api.errors import BadRequest, NotFound
from moorage.api.extra_specs import InvalidExtraSpec, validate_extra_spec, validate_extra_specs
from moorage.api.handlers.common import (
    FALSE_WORDS,
    TRUE_WORDS,
    boolean,
    integer,
    invalid_query,
    only_known,
    string,
)
from moorage.api.handlers.paging import page_body, page_limit
from moorage.api.http import ApiRequest, QueryParams, json_response, no_content
from moorage.api.microversion import (
    FLAVOR_DESCRIPTION,
    FLAVOR_EXTRA_SPECS,
    FLAVOR_LIST_STRICT_QUERY,
    SWAP_ZERO,
)
from moorage.api.storage import flavors as store
from moorage.api.storage.flavors import SORT_KEYS, FlavorQuery, FlavorRecord
from moorage.jsonvalue import JSONValue
from moorage.model.flavor import Flavor
from moorage.web import Response

# Nova's flavor id: printable, no leading or trailing space.
FLAVOR_ID = re.compile(r"^(?! )[a-zA-Z0-9. _-]+(?<! )$")

View = dict[str, JSONValue]


# -- views ---------------------------------------------------------------------------

def _brief(req: ApiRequest, record: FlavorRecord) -> View:
    """A flavor in a list (GET /flavors)."""
    view: View = {"id": record.id, "name": record.flavor.name,
                  "links": req.link("flavors", record.id)}
    if req.at(FLAVOR_DESCRIPTION):
        view["description"] = record.description
    return view


def _detail(req: ApiRequest, record: FlavorRecord, *, extra_specs: bool) -> View:
    """A flavor in full (show, detail, create, update). ``extra_specs``: the caller may
    read them and the version shows them (``_shows_extra_specs``)."""
    flavor = record.flavor
    view: View = {
        "id": record.id,
        "name": flavor.name,
        "ram": flavor.memory_mb,
        "disk": flavor.root_gb,
        # Below 2.75 nova says "" for no swap.
        "swap": flavor.swap_mb if flavor.swap_mb or req.at(SWAP_ZERO) else "",
        "OS-FLV-EXT-DATA:ephemeral": flavor.ephemeral_gb,
        # Moorage keeps neither a disabled flag nor an rxtx_factor: its flavors are all
        # enabled, and the factor is nova's default (it shapes no network here).
        "OS-FLV-DISABLED:disabled": False,
        "vcpus": flavor.vcpus,
        "os-flavor-access:is_public": record.is_public,
        "rxtx_factor": 1.0,
        "links": req.link("flavors", record.id),
    }
    if req.at(FLAVOR_DESCRIPTION):
        view["description"] = record.description
    if extra_specs:
        view["extra_specs"] = dict(flavor.extra_specs)
    return view


def _shows_extra_specs(req: ApiRequest) -> bool:
    """From 2.61 a flavor's detail carries its extra specs, if the caller may list them
    (nova asks the extra specs' index rule, without refusing the request)."""
    return req.at(FLAVOR_EXTRA_SPECS) and req.state.policy.allows(
        "os_compute_api:os-flavor-extra-specs:index", req.context)


def _answer(req: ApiRequest, record: FlavorRecord) -> Response:
    return json_response({"flavor": _detail(req, record, extra_specs=_shows_extra_specs(req))})


# -- lists ---------------------------------------------------------------------------

# What a flavor list takes; from 2.75 anything else is a 400.
LIST_PARAMETERS = ("limit", "marker", "is_public", "minRam", "minDisk", "sort_key",
                   "sort_dir")
SORT_DIRS = ("asc", "desc")
_NONE = "none"
# Beyond any flavor's size (the columns are integers): a bound past it matches none.
_BEYOND = 2**31


def _one_of(query: QueryParams, name: str, allowed: tuple[str, ...]) -> str | None:
    """The last value of ``name``; every value given must be one of ``allowed``."""
    for value in query.getall(name):
        if value not in allowed:
            raise invalid_query(name, value,
                                f"{value!r} is not one of {', '.join(allowed)}.")
    return query.get(name)


def _at_least(query: QueryParams, name: str) -> int | None:
    """``minRam``/``minDisk``: any integer nova's ``int()`` reads (a negative one too);
    400 in nova's words otherwise."""
    text = query.get(name)
    if text is None:
        return None
    try:
        if not text.isascii():
            raise ValueError(text)  # int() reads "٣" as 3: the digits are 0-9
        value = int(text)
    except ValueError:
        raise BadRequest(f"Invalid {name} filter [{text}]") from None
    return max(0, min(value, _BEYOND))


def _is_public(text: str | None) -> bool | None:
    """An administrator's ``is_public``: public ones (the default), private ones
    (false), or all (none)."""
    if text is None:
        return True
    word = text.strip().lower()
    if word == _NONE:
        return None
    if word in TRUE_WORDS + FALSE_WORDS:
        return word in TRUE_WORDS
    raise BadRequest(f"Invalid is_public filter [{text}]")


def _query(req: ApiRequest) -> FlavorQuery:
    query = req.query
    if req.at(FLAVOR_LIST_STRICT_QUERY):
        only_known(query, LIST_PARAMETERS)
    admin = req.context.is_admin
    return FlavorQuery(
        # A member sees the public flavors and those shared with its project, whatever
        # it asks; only an administrator's is_public is read.
        is_public=_is_public(query.get("is_public")) if admin else True,
        project_id=req.context.project_id, admin=admin,
        min_ram=_at_least(query, "minRam"), min_disk=_at_least(query, "minDisk"),
        sort_key=_one_of(query, "sort_key", SORT_KEYS) or "flavorid",
        descending=(_one_of(query, "sort_dir", SORT_DIRS) or "asc") == "desc",
        limit=page_limit(query), marker=query.get("marker"))


def _page(req: ApiRequest) -> list[FlavorRecord]:
    query = _query(req)
    with req.state.database.reader() as conn:
        try:
            return store.list_flavors(conn, query)
        except LookupError:
            raise BadRequest(f"marker [{query.marker}] not found") from None


def _listing(req: ApiRequest, collection: str, views: list[View],
             found: list[FlavorRecord]) -> Response:
    return json_response(page_body(req, collection, "flavors", views,
                                   found[-1].id if found else None))


def list_flavors(req: ApiRequest) -> Response:
    """List flavors (id, name, links; the description from 2.55), a page at a time."""
    found = _page(req)
    return _listing(req, "flavors", [_brief(req, r) for r in found], found)


def list_flavors_detail(req: ApiRequest) -> Response:
    """List flavors in full, a page at a time."""
    found = _page(req)
    extra_specs = _shows_extra_specs(req)
    return _listing(req, "flavors/detail",
                    [_detail(req, r, extra_specs=extra_specs) for r in found], found)


# -- one flavor ------------------------------------------------------------------------

def show_flavor(req: ApiRequest) -> Response:
    """Show one flavor."""
    return _answer(req, visible_flavor(req))


def visible_flavor(req: ApiRequest) -> FlavorRecord:
    """The flavor of the path, if the caller may see it (a private flavor is an
    administrator's and its projects'): 404 as for no such flavor otherwise."""
    with req.state.database.reader() as conn:
        record = store.load_flavor(conn, req.params["flavor_id"])
    if not lookups.flavor_visible(record, req.context):
        raise NotFound(f"Flavor {record.id} could not be found.")
    return record


def _flavor_id(body: Mapping[str, object]) -> str:
    value = body.get("id")
    if value is None:
        return str(uuidlib.uuid4())
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not 1 <= len(value) <= 255 or not FLAVOR_ID.match(value):
        raise BadRequest(f"Invalid input for field 'id': {value!r}; allowed: 1 to 255 of "
                         "letters, digits, '.', ' ', '_' and '-', not starting or ending "
                         "with a space.")
    return value


def _description(req: ApiRequest, body: Mapping[str, object]) -> str | None:
    """The description of a new flavor; below 2.55 nova's schema has no such field."""
    if "description" in body and not req.at(FLAVOR_DESCRIPTION):
        raise BadRequest("Additional properties are not allowed ('description' was "
                         f"unexpected) (in flavor): a description needs microversion "
                         f"{FLAVOR_DESCRIPTION.version} or later.")
    value = body.get("description")
    return value if isinstance(value, str) else None


def create_flavor(req: ApiRequest) -> Response:
    """Create a flavor (admin). Moorage also takes its extra specs, validated with it."""
    req.authorize("os_compute_api:os-flavor-manage:create")
    body = req.json_object("flavor")
    name = string(body, "name", required=True)
    assert name is not None
    description = _description(req, body)
    specs = body.get("extra_specs") or {}
    if not isinstance(specs, dict):
        raise BadRequest("Invalid input for field 'extra_specs': must be an object.")
    try:
        valid_specs = validate_extra_specs(specs)
    except InvalidExtraSpec as exc:
        raise BadRequest(f"Invalid extra spec {exc}") from None
    flavor = Flavor(
        name=name.strip(),
        vcpus=integer(body, "vcpus", minimum=1),
        memory_mb=integer(body, "ram", minimum=1),
        root_gb=integer(body, "disk"),
        ephemeral_gb=integer(body, "OS-FLV-EXT-DATA:ephemeral", default=0),
        swap_mb=integer({"swap": body.get("swap") or 0}, "swap"),
        extra_specs=valid_specs,
    )
    is_public = boolean(body.get("os-flavor-access:is_public", True),
                        "os-flavor-access:is_public")
    record = FlavorRecord(id=_flavor_id(body), flavor=flavor, is_public=is_public,
                          description=description)
    with req.state.database.writer() as writer:
        record = store.create_flavor(writer.conn, record)
    return _answer(req, record)


def update_flavor(req: ApiRequest) -> Response:
    """Change a flavor's description (admin; from 2.55, the only field nova changes)."""
    if not req.at(FLAVOR_DESCRIPTION):
        raise NotFound("The resource could not be found.")  # nova: no such method yet
    req.authorize("os_compute_api:os-flavor-manage:update")
    description = req.json_object("flavor").get("description")
    with req.state.database.writer() as writer:
        record = store.set_description(writer.conn, req.params["flavor_id"],
                                       description if isinstance(description, str) else None)
    return _answer(req, record)


def delete_flavor(req: ApiRequest) -> Response:
    """Delete a flavor (admin). Servers keep their snapshot of it."""
    req.authorize("os_compute_api:os-flavor-manage:delete")
    with req.state.database.writer() as writer:
        store.delete_flavor(writer.conn, req.params["flavor_id"])
    return no_content(202)


# -- os-extra_specs ------------------------------------------------------------------


def list_extra_specs(req: ApiRequest) -> Response:
    """List a flavor's extra specs."""
    req.authorize("os_compute_api:os-flavor-extra-specs:index")
    record = visible_flavor(req)
    return json_response({"extra_specs": dict(record.flavor.extra_specs)})


def show_extra_spec(req: ApiRequest) -> Response:
    """Show one extra spec of a flavor."""
    req.authorize("os_compute_api:os-flavor-extra-specs:show")
    key = req.params["key"]
    record = visible_flavor(req)
    if key not in record.flavor.extra_specs:
        raise NotFound(f"Flavor {record.id} has no extra spec with key {key}.")
    return json_response({key: record.flavor.extra_specs[key]})


def create_extra_specs(req: ApiRequest) -> Response:
    """Create or replace extra specs (admin): {"extra_specs": {key: value}}."""
    req.authorize("os_compute_api:os-flavor-extra-specs:create")
    specs = req.json_object("extra_specs")
    if not specs:
        raise BadRequest("'extra_specs' must name at least one extra spec.")
    try:
        valid = validate_extra_specs(specs)
    except InvalidExtraSpec as exc:
        raise BadRequest(f"Invalid extra spec {exc}") from None
    with req.state.database.writer() as writer:
        store.set_extra_specs(writer.conn, req.params["flavor_id"], valid)
    return json_response({"extra_specs": valid})


def update_extra_spec(req: ApiRequest) -> Response:
    """Set one extra spec (admin): {key: value}, the key the same as in the URL."""
    req.authorize("os_compute_api:os-flavor-extra-specs:update")
    key = req.params["key"]
    body = req.json_object()
    if list(body) != [key]:
        raise BadRequest(f"The body must be exactly {{{key!r}: value}}, the key of the URL.")
    try:
        value = validate_extra_spec(key, body[key])
    except InvalidExtraSpec as exc:
        raise BadRequest(f"Invalid extra spec {exc}") from None
    with req.state.database.writer() as writer:
        store.set_extra_specs(writer.conn, req.params["flavor_id"], {key: value})
    return json_response({key: value})


def delete_extra_spec(req: ApiRequest) -> Response:
    """Delete one extra spec (admin); 200 with no body, as nova."""
    req.authorize("os_compute_api:os-flavor-extra-specs:delete")
    with req.state.database.writer() as writer:
        store.delete_extra_spec(writer.conn, req.params["flavor_id"], req.params["key"])
    return no_content(200)
