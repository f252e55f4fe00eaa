"""The lock and unlock actions, in nova's shapes: a locked server refuses every change
but an admin's (``server_records.refuse_locked``, where nova checks the lock).

Who locked it is kept (``locked_by``: "owner" when the server's own project locked
it, "admin" when another did), so that an owner cannot lift an admin's lock: only
the one who locked, or whoever ``unlock_override`` allows, unlocks. From 2.73 a
lock carries its reason, shown as ``locked_reason``. The lock is one of the server's
attributes, written by ``server_records.rewrite``'s compare-and-set.
"""

from __future__ import annotations

import dataclasses

from moorage.api import microversion as mv
from moorage.api.errors import BadRequest
from moorage.api.handlers.server_records import rewrite
from moorage.api.http import ApiRequest
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.states import ApiAction
from moorage.web import Response

RULE = "os_compute_api:os-lock-server:"
REASON_MAX = 255
OWNER, ADMIN = "owner", "admin"


def _locker(req: ApiRequest, record: ServerRecord) -> str:
    """Who the caller locks as: the server's project is its owner."""
    return OWNER if req.context.project_id == record.project_id else ADMIN


def _reason(req: ApiRequest, argument: object) -> str | None:
    """The lock's reason: before 2.73 the body's value is not read (as nova); from it,
    null or ``{"locked_reason": text}`` of 1 to 255 characters."""
    if not req.at(mv.SERVER_LOCKED_REASON) or argument is None:
        return None
    if not isinstance(argument, dict) or not set(argument) <= {"locked_reason"}:
        raise BadRequest(f"lock takes null or {{\"locked_reason\": text}}, not {argument!r}.")
    reason = argument.get("locked_reason")
    if reason is None:
        return None
    if not isinstance(reason, str) or not 1 <= len(reason) <= REASON_MAX:
        raise BadRequest(f"Invalid input for field/attribute locked_reason. Value: "
                         f"{reason!r}. It must be a string of 1 to {REASON_MAX} characters.")
    return reason


def lock(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    reason = _reason(req, argument)

    def change(current: ServerRecord) -> ServerRecord:
        locker = _locker(req, current)
        if current.attributes.locked and locker == OWNER:
            return current  # nova: the owner's lock on a locked server changes nothing
        return dataclasses.replace(current, attributes=dataclasses.replace(
            current.attributes, locked=True, locked_by=locker, locked_reason=reason))

    rewrite(req, record.uuid, RULE + "lock", change, instance_action=ApiAction.LOCK)
    return Response(status=202)


def unlock(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    def change(current: ServerRecord) -> ServerRecord:
        locked_by = current.attributes.locked_by
        if locked_by is not None and locked_by != _locker(req, current):
            # nova: not the one who locked it (an owner, an admin's lock)
            req.authorize(RULE + "unlock:unlock_override",
                          {"project_id": current.project_id})
        return dataclasses.replace(current, attributes=dataclasses.replace(
            current.attributes, locked=False, locked_by=None, locked_reason=None))

    rewrite(req, record.uuid, RULE + "unlock", change, instance_action=ApiAction.UNLOCK)
    return Response(status=202)
