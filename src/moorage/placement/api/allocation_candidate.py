"""GET /allocation_candidates (1.10+): which providers can satisfy a request.

``parse_request`` turns the query string into a ``CandidateRequest`` with
upstream's validation rules and messages for every microversion; the engine
(engine/candidates.py) finds the candidates in the in-memory index; ``shape``
renders them for the requested microversion.
"""

from __future__ import annotations

import re
from typing import Required, TypedDict

import orjson

from moorage.jsonvalue import JSONValue
from moorage.placement import errors
from moorage.placement.api import params
from moorage.placement.api.schema import GROUP_SUFFIX, GROUP_SUFFIX_1_33, Schema, validator
from moorage.placement.engine.candidates import Candidates, find_candidates
from moorage.placement.engine.explain import MAX_LISTED, Counted, Explanation
from moorage.placement.engine.index import ProviderIndex
from moorage.placement.engine.request import CandidateRequest, RequestGroup
from moorage.placement.http import (
    BadRequest,
    JSONPieces,
    Request,
    Response,
    json_fragment,
    since,
)
from moorage.placement.microversion import Version
from moorage.placement.storage.records import ProviderRecord


# -- query schemas, one per microversion that changed them -------------------------
def _one_group(properties: Schema) -> Schema:
    """Before 1.25: one unsuffixed request group, its resources required."""
    return {"type": "object", "properties": properties, "required": ["resources"],
            "additionalProperties": False}


def _granular(properties: Schema, suffix: str, keys: tuple[str, ...]) -> Schema:
    """From 1.25: the ``keys`` of each request group, suffixed by ``suffix``."""
    return {"type": "object", "properties": properties, "additionalProperties": False,
            "patternProperties": {f"^{key}({suffix})?$": {"type": "string"} for key in keys}}


_LIMIT: Schema = {
    "type": ["integer", "string"], "pattern": "^[1-9][0-9]*$", "minimum": 1, "minLength": 1,
}
_P_1_10: Schema = {"resources": {"type": "string"}}
_P_1_16: Schema = {**_P_1_10, "limit": _LIMIT}
_P_1_17: Schema = {**_P_1_16, "required": {"type": ["string"]}}
_P_1_21: Schema = {**_P_1_17, "member_of": {"type": ["string"]}}
_P_1_25: Schema = {"limit": _LIMIT, "group_policy": {"type": "string", "enum": ["none", "isolate"]}}
_P_1_35: Schema = {**_P_1_25, "root_required": {"type": ["string"]}}
_P_1_36: Schema = {**_P_1_35, "same_subtree": {"type": ["string"]}}
_KEYS = ("resources", "required", "member_of")
_KEYS_1_31 = (*_KEYS, "in_tree")
_SCHEMAS = (
    ((1, 36), validator(_granular(_P_1_36, GROUP_SUFFIX_1_33, _KEYS_1_31))),
    ((1, 35), validator(_granular(_P_1_35, GROUP_SUFFIX_1_33, _KEYS_1_31))),
    ((1, 33), validator(_granular(_P_1_25, GROUP_SUFFIX_1_33, _KEYS_1_31))),
    ((1, 31), validator(_granular(_P_1_25, GROUP_SUFFIX, _KEYS_1_31))),
    ((1, 25), validator(_granular(_P_1_25, GROUP_SUFFIX, _KEYS))),
    ((1, 21), validator(_one_group(_P_1_21))),
    ((1, 17), validator(_one_group(_P_1_17))),
    ((1, 16), validator(_one_group(_P_1_16))),
    ((1, 10), validator(_one_group(_P_1_10))),
)

_GROUP_KEY = re.compile(rf"^(resources|required|member_of|in_tree)({GROUP_SUFFIX})?$")
_GROUP_KEY_1_33 = re.compile(rf"^(resources|required|member_of|in_tree)({GROUP_SUFFIX_1_33})?$")


def _first(query: list[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in query if k == name), None)


def _all(query: list[tuple[str, str]], name: str) -> list[str]:
    return [v for k, v in query if k == name]


class _Group(TypedDict, total=False):
    """A request group as the query string gives it, before it is a RequestGroup."""

    suffix: Required[str]
    resources: dict[str, int]
    required_traits: params.AnyOfTraits
    forbidden_traits: frozenset[str]
    member_of: list[frozenset[str]]
    forbidden_aggregates: frozenset[str]
    in_tree: str


def _groups(query: list[tuple[str, str]], version: Version) -> dict[str, _Group]:
    """The request groups by suffix, in order of first appearance, as plain dicts."""
    pattern = _GROUP_KEY_1_33 if version >= (1, 33) else _GROUP_KEY
    groups: dict[str, _Group] = {}
    for key, value in query:
        found = pattern.match(key)
        if not found:
            continue
        prefix, suffix = found.group(1), found.group(2) or ""
        group = groups.setdefault(suffix, {"suffix": suffix})
        if prefix == "resources":
            group["resources"] = params.parse_resources(value)
        elif prefix == "required":
            group["required_traits"], group["forbidden_traits"] = params.parse_required_params(
                _all(query, key),
                allow_forbidden=version >= (1, 22), allow_any=version >= (1, 39),
            )
        elif prefix == "member_of":
            group["member_of"], group["forbidden_aggregates"] = params.parse_member_of_params(
                _all(query, key), suffix,
                allow_multiple=version >= (1, 24), allow_forbidden=version >= (1, 32),
            )
        else:
            group["in_tree"] = params.parse_in_tree(value)
    return groups


def _check_groups(groups: dict[str, _Group], same_subtrees: list[frozenset[str]],
                  version: Version) -> None:
    """Upstream's rules on which groups may lack resources."""
    if version >= (1, 36):
        resourceless = [s for s, g in groups.items() if not g.get("resources")]
        if len(resourceless) == len(groups):
            raise BadRequest("There must be at least one resources or resources[$S] parameter.",
                             code=errors.QUERYPARAM_MISSING_VALUE)
        in_subtrees = set().union(*same_subtrees) if same_subtrees else set()
        bad = [s for s in resourceless if s not in in_subtrees]
        if bad:
            raise BadRequest(
                "Resourceless suffixed group request should be specified in `same_subtree` "
                f"query param: bad group(s) - {bad}.", code=errors.QUERYPARAM_BAD_VALUE)
        unknown = [s for s in sorted(in_subtrees) if s not in groups]
        if unknown:
            raise BadRequest(
                f"Real suffixes should be specified in `same_subtree`: {unknown} not found in "
                f"{list(groups)}.", code=errors.QUERYPARAM_BAD_VALUE)
    else:
        orphans = [f"required{s}" for s, g in groups.items()
                   if g.get("required_traits") and not g.get("resources")]
        if orphans:
            raise BadRequest(
                "All traits parameters must be associated with resources.  Found the following "
                f"orphaned traits keys: {', '.join(orphans)}")
        orphans = [f"member_of{s}" for s, g in groups.items()
                   if not g.get("resources") and (g.get("member_of")
                                                  or g.get("forbidden_aggregates"))]
        if orphans:
            raise BadRequest(
                "All member_of parameters must be associated with resources. Found the following "
                f"orphaned member_of keys: {', '.join(orphans)}")
        if not all(g.get("resources") for g in groups.values()):
            raise BadRequest("All request groups must specify resources.")
        if not groups:
            raise BadRequest(
                "At least one request group (`resources` or `resources{$S}`) is required.")
    if version >= (1, 22):
        conflicts = sorted(
            f"required{s}: ({', '.join(sorted(names))})"
            for s, g in groups.items()
            for names in g.get("required_traits", ())
            if names <= g.get("forbidden_traits", frozenset())
        )
        if conflicts:
            raise BadRequest(
                "Conflicting required and forbidden traits found in the following traits keys: "
                f"{', '.join(conflicts)}")


def parse_request(query: list[tuple[str, str]], version: Version) -> CandidateRequest:
    """The CandidateRequest a query string asks for; BadRequest in upstream's words."""
    limit_s = _first(query, "limit")
    group_policy = _first(query, "group_policy")
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    roots = _all(query, "root_required")
    if roots:
        if len(roots) > 1:
            raise BadRequest("Query parameter 'root_required' may be specified only once.",
                             code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
        root_required, root_forbidden = params.parse_legacy_traits(roots[0])
        conflicts = root_required & root_forbidden
        if conflicts:
            raise BadRequest(
                "Conflicting required and forbidden traits found in root_required: "
                f"{', '.join(sorted(conflicts))}", code=errors.QUERYPARAM_BAD_VALUE)
    same_subtrees: list[frozenset[str]] = []
    for value in _all(query, "same_subtree"):
        suffixes = frozenset(part.strip() for part in value.split(","))
        if "" in suffixes:
            raise BadRequest("Empty string (unsuffixed group) can not be specified in "
                             "`same_subtree` ", code=errors.QUERYPARAM_BAD_VALUE)
        same_subtrees.append(suffixes)
    groups = _groups(query, version)
    _check_groups(groups, same_subtrees, version)
    if not group_policy and sum(1 for s in groups if s) > 1:
        raise BadRequest('The "group_policy" parameter is required when specifying more than '
                         'one "resources{N}" parameter.')
    return CandidateRequest(
        groups=tuple(
            RequestGroup(
                suffix=g["suffix"],
                resources=g.get("resources", {}),
                required_traits=tuple(g.get("required_traits", ())),
                forbidden_traits=g.get("forbidden_traits", frozenset()),
                member_of=tuple(g.get("member_of", ())),
                forbidden_aggregates=g.get("forbidden_aggregates", frozenset()),
                in_tree=g.get("in_tree"),
            )
            for g in groups.values()
        ),
        group_policy=group_policy,
        limit=int(limit_s) if limit_s else None,
        root_required=root_required,
        root_forbidden=root_forbidden,
        same_subtrees=tuple(same_subtrees),
        nested_aware=version >= (1, 29),
    )


def check_names(index: ProviderIndex, request: CandidateRequest) -> None:
    """400 for a resource class or trait the catalogue does not have, in upstream's order."""
    traits = index.catalog.trait_ids

    def check_traits(names: frozenset[str]) -> None:
        missing = sorted(names - traits.keys())
        if missing:
            raise BadRequest(f"No such trait(s): {missing[0]}.")

    check_traits(request.root_required | request.root_forbidden)
    for group in request.groups:
        for rc in group.resources:
            if rc not in index.catalog.rc_ids:
                raise BadRequest(
                    f"Invalid resource class in resources parameter: No such resource class {rc}.")
        check_traits(frozenset(t for names in group.required_traits for t in names))
        check_traits(group.forbidden_traits)


def _summary_key(version: Version, requested: frozenset[str],
                 traits: bool = True) -> tuple[object, ...]:
    """The cache key of a provider summary: made once per request, so the records'
    caches share it instead of holding one more tuple per provider."""
    return ("summary", version >= (1, 27) or requested, traits and version >= (1, 17),
            version >= (1, 29))


def _summary(record: ProviderRecord, index: ProviderIndex, version: Version,
             requested: frozenset[str], key: tuple[object, ...]) -> bytes:
    """``"uuid":{summary}`` for one provider, cached on the (immutable) record."""
    cached = record.fragments.get(key)
    if cached is None:
        by_id = index.by_id
        all_classes = version >= (1, 27)
        summary: dict[str, JSONValue] = {"resources": {
            rc: {"capacity": inventory.capacity, "used": record.used(rc)}
            for rc, inventory in record.inventories.items()
            if all_classes or rc in requested
        }}
        if key[2]:  # traits (1.17), unless the caller asked for summaries without
            summary["traits"] = index.ordered_traits(record)
        if version >= (1, 29):
            summary["parent_provider_uuid"] = (
                by_id[record.parent_id].uuid if record.parent_id is not None else None)
            summary["root_provider_uuid"] = by_id[record.root_id].uuid
        cached = record.fragments[key] = orjson.dumps({record.uuid: summary})[1:-1]
    return cached


def _quoted_uuid(record: ProviderRecord) -> bytes:
    cached = record.fragments.get("uuid")
    if cached is None:
        cached = record.fragments["uuid"] = json_fragment(record.uuid)
    return cached


# Up to this many candidates, rendered items are not trimmed (see _allocation_requests).
_FEW = 100


def _lone_template(found: Candidates, with_mappings: bool) -> list[bytes]:
    """A lone root's allocation request, split where its quoted uuid goes.

    Every such candidate has the same shape and amounts; only the provider
    changes, so ``quoted_uuid.join(template)`` renders one.
    """
    template = [b'{"allocations":{']
    tail = b':{"resources":' + orjson.dumps(found.lone_amounts) + b"}}"
    if with_mappings:
        tail += b',"mappings":{'
        for i, suffix in enumerate(found.suffixes):
            template.append(tail + (b"," if i else b"") + orjson.dumps(suffix) + b":[")
            tail = b"]"
        tail += b"}"
    template.append(tail + b"}")
    return template


def _allocation_requests(version: Version, by_id: dict[int, ProviderRecord],
                         found: Candidates, body: JSONPieces) -> None:
    """Add the rendered allocation requests, comma-separated, to ``body``."""
    # Rendered items are held until the body is sent. Many are each copied out of
    # orjson's oversized buffer (json_fragment), which also makes joining them
    # faster (1,000 items: about 2.0 ms instead of 2.5); a few are not worth the copy.
    dumps = json_fragment if len(found) > _FEW else orjson.dumps
    if version < (1, 12):
        body.listing([dumps({"allocations": [
            {"resource_provider": {"uuid": by_id[p].uuid}, "resources": amounts}
            for p, amounts in candidate.allocations.items()
        ]}) for candidate in found.all()])
        return
    with_mappings = version >= (1, 34)
    if found.lone_ids:
        # Lone roots: rendered from a template as the body is sent, not held rendered.
        body.listing([_quoted_uuid(by_id[p]) for p in found.lone_ids],
                     template=_lone_template(found, with_mappings))
        return
    items = []
    for candidate in found.requests:
        item: dict[str, JSONValue] = {"allocations": {
            by_id[p].uuid: {"resources": amounts} for p, amounts in candidate.allocations.items()
        }}
        if with_mappings:
            item["mappings"] = {
                suffix: [by_id[p].uuid for p in providers]
                for suffix, providers in candidate.mappings.items()
            }
        items.append(dumps(item))
    body.listing(items)


def shape(version: Version, index: ProviderIndex, request: CandidateRequest,
          found: Candidates, *, traits: bool = True) -> JSONPieces:
    """The response body for the requested microversion, as rendered JSON pieces.

    Assembled from fragments because this is the hot path of every scheduling
    decision: a provider's summary is rendered once per snapshot of it. Everything
    that needs the index is done here, while the caller holds it; the pieces are
    joined (or streamed, for a whole-cloud answer) after. ``traits`` False: the
    summaries leave out the providers' traits (``Moorage-Summaries``).
    """
    by_id = index.by_id
    requested = request.resource_classes
    key = _summary_key(version, requested, traits)
    body = JSONPieces(b'{"allocation_requests":[')
    _allocation_requests(version, by_id, found, body)
    body.add(b'],"provider_summaries":{')
    body.listing([_summary(by_id[p], index, version, requested, key)
                  for p in found.summary_ids])
    body.add(b"}")
    if found.explanation is not None:
        body.add(b',"moorage_explanation":' + json_fragment(
            _explanation(found.explanation, by_id)))
    return body.add(b"}")


# -- the Moorage extension: each constraint counted on its own ---------------------
EXPLAIN_HEADER = "moorage-explain"


def explain_listing(req: Request) -> int | None:
    """How many excluded hosts to name per constraint, from the ``Moorage-Explain``
    header (absent: no explanation, the upstream answer unchanged)."""
    value = req.header(EXPLAIN_HEADER)
    if value is None:
        return None
    value = value.strip()
    if not value.isascii() or not value.isdigit() or int(value) > MAX_LISTED:
        raise BadRequest(
            f"Invalid Moorage-Explain header {value!r}: expected how many excluded hosts "
            f"to name per constraint, an integer from 0 to {MAX_LISTED}.")
    return int(value)


# -- the Moorage extension: summaries without traits --------------------------------
SUMMARIES_HEADER = "moorage-summaries"
WITHOUT_TRAITS = "resources"


def summaries_with_traits(req: Request) -> bool:
    """False when the ``Moorage-Summaries: resources`` header asks for provider
    summaries of resources and tree only: a scheduler that reads no trait from them
    is spared a few dozen per provider (absent: upstream's summaries)."""
    value = req.header(SUMMARIES_HEADER)
    if value is None:
        return True
    if value.strip() != WITHOUT_TRAITS:
        raise BadRequest(
            f"Invalid Moorage-Summaries header {value!r}: expected {WITHOUT_TRAITS!r} "
            "(provider summaries without their traits), or no header.")
    return False


def _explanation(found: Explanation, by_id: dict[int, ProviderRecord]) -> dict[str, JSONValue]:
    def constraint(counted: Counted) -> dict[str, JSONValue]:
        c = counted.constraint
        item: dict[str, JSONValue] = {"kind": c.kind, "group": c.group, "names": list(c.names),
                                "satisfied": counted.satisfied, "excluded": counted.excluded,
                                "excluded_roots": [by_id[i].uuid for i in counted.excluded_ids]}
        if c.amount is not None:
            item["amount"] = c.amount
        return item

    return {
        "hosts": found.hosts,
        "viable": found.viable,
        "constraints": [constraint(c) for c in found.constraints],
        "together": list(found.together),
        "relaxed": None if found.relaxed is None else {
            "constraint": found.relaxed[0], "viable": found.relaxed[1]},
    }


def _validate(req: Request) -> None:
    for version, schema in _SCHEMAS:
        if req.version >= version:
            req.validate_query(schema)
            return


@since("1.10")
def list_candidates(req: Request) -> Response:
    req.require_accept_json()
    req.authorize("placement:allocation_candidates:list")
    _validate(req)
    request = parse_request(req.query, req.version)
    listing = explain_listing(req)
    traits = summaries_with_traits(req)
    conf = req.service.conf.placement
    with req.service.index.fresh() as index:
        check_names(index, request)
        found = find_candidates(
            index, request,
            randomize=conf.randomize_allocation_candidates,
            max_candidates=conf.max_allocation_candidates,
            strategy=conf.allocation_candidates_generation_strategy,
            explain_listing=listing,
        )
        body = shape(req.version, index, request, found, traits=traits)
    return req.json_response(body)
