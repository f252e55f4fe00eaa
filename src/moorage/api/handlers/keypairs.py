"""Key pairs (``/os-keypairs``): a user's public keys, by name, in nova's shapes at each
microversion (``moorage.api.microversion``'s os-keypairs gates).

A key pair belongs to a user, not to a project: every handler acts on the caller's own
key pairs, or, from 2.10, on those of the user an admin names (``user_id``). Policy
decides on that user (nova's ``admin or user_id:%(user_id)s``), and the key pair is
looked for under that user only, so another user's key pair is a 404, never a 403.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy.engine import Connection

from moorage.api import microversion as mv
from moorage.api.errors import BadRequest, Forbidden
from moorage.api.handlers.paging import page_body, page_limit
from moorage.api.http import ApiRequest, json_response, no_content
from moorage.api.key_material import InvalidKeypair, KeypairType, generate, imported
from moorage.api.quotas import engine
from moorage.api.storage import keypairs as store
from moorage.api.storage import quotas as quota_store
from moorage.api.storage.keypairs import KeypairRecord
from moorage.api.timestamps import nova_time
from moorage.jsonvalue import JSONValue
from moorage.web import Response

_USER = "user_id"
_PAGING = ("limit", "marker")


# -- the views (nova's fields, by version) --------------------------------------------
View = dict[str, JSONValue]


def listed(record: KeypairRecord, *, typed: bool) -> View:
    """A key pair in a list: name, public key, fingerprint (and its type from 2.2)."""
    view: View = {"name": record.name, "public_key": record.public_key,
                  "fingerprint": record.fingerprint}
    if typed:
        view["type"] = str(record.type)
    return view


def shown(record: KeypairRecord, *, typed: bool) -> View:
    """A key pair shown alone: the listed fields, its owner, its id and nova's record
    fields (never updated nor soft-deleted here, as in nova)."""
    return {**listed(record, typed=typed), "user_id": record.user_id, "id": record.id,
            "created_at": nova_time(record.created_at), "updated_at": None,
            "deleted": False, "deleted_at": None}


def created(record: KeypairRecord, private_key: str | None, *, typed: bool) -> View:
    """A key pair just made: the listed fields, its owner, and a generated private key,
    answered this once."""
    view: View = {**listed(record, typed=typed), "user_id": record.user_id}
    if private_key is not None:
        view["private_key"] = private_key
    return view


# -- the request -----------------------------------------------------------------------
def _check_query(req: ApiRequest, allowed: Collection[str]) -> None:
    """From 2.75 a query parameter the route does not take is a 400 (nova's
    ``additionalProperties: false``); before, it is ignored."""
    if not req.at(mv.KEYPAIR_STRICT_QUERY):
        return
    unknown = sorted(set(req.query) - set(allowed))
    if unknown:
        raise BadRequest(f"Invalid input for query parameters {', '.join(unknown)}: "
                         f"not allowed; allowed: {', '.join(sorted(allowed))}.")


def _user(req: ApiRequest, asked: str | None) -> str:
    """Whose key pairs: the user an admin named (from 2.10), else the caller."""
    if asked and req.at(mv.KEYPAIR_USER):
        return asked
    return req.context.user_id or ""


def _queried_user(req: ApiRequest, allowed: Collection[str]) -> str:
    _check_query(req, allowed)
    values = req.query.getall(_USER)
    return _user(req, values[0] if values else None)  # nova reads the first


def _page(req: ApiRequest) -> tuple[int | None, str | None]:
    """(limit, marker) from 2.35: nova's limit, a non-negative integer at most
    MAX_LIMIT (MAX_LIMIT when not given); before 2.35, the whole list."""
    if not req.at(mv.KEYPAIR_PAGING):
        return None, None
    return page_limit(req.query), req.query.get("marker")


# -- the handlers ----------------------------------------------------------------------
def list_keypairs(req: ApiRequest) -> Response:
    """List the caller's key pairs (an admin: a user's, from 2.10), by name; limit and
    marker page them from 2.35."""
    user_id = _queried_user(req, (_USER, *_PAGING))
    req.authorize("os_compute_api:os-keypairs:index", {"user_id": user_id})
    limit, marker = _page(req)
    with req.state.database.reader() as conn:
        found = store.list_keypairs(conn, user_id, limit=limit, marker=marker)
    typed = req.at(mv.KEYPAIR_TYPE)
    last = found[-1].name if found and limit is not None else None
    return json_response(page_body(req, "os-keypairs", "keypairs",
                                   [{"keypair": listed(r, typed=typed)} for r in found], last))


def show_keypair(req: ApiRequest) -> Response:
    """Show one of the caller's key pairs (an admin: a user's, from 2.10)."""
    user_id = _queried_user(req, (_USER,))
    req.authorize("os_compute_api:os-keypairs:show", {"user_id": user_id})
    with req.state.database.reader() as conn:
        record = store.load_keypair(conn, user_id, req.params["keypair_name"])
    return json_response({"keypair": shown(record, typed=req.at(mv.KEYPAIR_TYPE))})


def create_keypair(req: ApiRequest) -> Response:
    """Import a public key as a key pair, or (before 2.92) generate one and answer its
    private key, once: it is not stored."""
    body = req.json_object("keypair")
    user_id = _user(req, body.get(_USER))
    req.authorize("os_compute_api:os-keypairs:create", {"user_id": user_id})
    name = str(body["name"]).strip()  # nova's normalize_name
    kind = KeypairType(body.get("type", KeypairType.SSH))
    try:
        # No public key: generate one (the version's schema required one from 2.92).
        material = (imported(str(body["public_key"]), kind) if "public_key" in body
                    else generate(kind, user_id))
    except InvalidKeypair as exc:
        raise BadRequest(str(exc)) from None
    with req.state.database.writer() as writer:
        _admit_keypair(req, writer.conn, user_id)
        record = store.create_keypair(writer.conn, user_id, name, kind,
                                      material.public_key, material.fingerprint)
    typed = req.at(mv.KEYPAIR_TYPE)
    return json_response({"keypair": created(record, material.private_key, typed=typed)},
                         status=201 if typed else 200)


def _admit_keypair(req: ApiRequest, conn: Connection, user_id: str) -> None:
    """One more key pair for ``user_id`` within the key_pairs quota (403, nova's
    words), in the transaction that creates it, the caller's project locked."""
    conf = req.state.conf
    if not engine.enforced(conf):
        return
    project_id = req.context.project_id or ""
    quota_store.lock_project(conn, project_id)
    try:
        engine.check_key_pairs(conn, conf, project_id, user_id,
                               lambda: store.count_keypairs(conn, user_id))
    except engine.OverQuota as refusal:
        raise Forbidden(str(refusal)) from None


def delete_keypair(req: ApiRequest) -> Response:
    """Delete one of the caller's key pairs (an admin: a user's, from 2.10)."""
    user_id = _queried_user(req, (_USER,))
    req.authorize("os_compute_api:os-keypairs:delete", {"user_id": user_id})
    with req.state.database.writer() as writer:
        store.delete_keypair(writer.conn, user_id, req.params["keypair_name"])
    return no_content(204 if req.at(mv.KEYPAIR_TYPE) else 202)
