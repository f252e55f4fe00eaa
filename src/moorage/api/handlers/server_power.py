"""The power actions of POST /servers/{id}/action (os-stop, os-start, reboot) and an
admin's os-resetState, in nova's shapes.

Each is authorized, refused for a locked server (nova's check_instance_lock, before
the state), checked against its transition's precondition (a 409 in nova's words)
and then accepted: the transition and the operation a conductor carries out on the
server's host, written together (``accept``). os-resetState moves no guest: its
transition is the whole of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.engine import Connection

from moorage.api import work
from moorage.api.errors import BadRequest, Conflict, Forbidden
from moorage.api.handlers.server_records import refuse_locked, require, target
from moorage.api.http import ApiRequest
from moorage.api.quotas.engine import OverQuota
from moorage.lifecycle import machine, store
from moorage.lifecycle.machine import Transition
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.states import ApiAction, OperationKind
from moorage.lifecycle.store import NO_CHANGES, Applied, ServerChanges
from moorage.web import Response


def accept(req: ApiRequest, record: ServerRecord, action: str, accepted: Transition,
           kind: OperationKind, arguments: Mapping[str, Any] | None = None,
           changes: ServerChanges = NO_CHANGES,
           admit: Callable[[Connection], None] | None = None) -> None:
    """Record the new state (``accepted``) and the work, if nothing else changed the
    server meanwhile, and hand the work to the conductor. ``admit``: a quota's check,
    in the same transaction (OverQuota: 403)."""
    work.require_conductor(req)
    with req.state.database.writer() as writer:
        if admit is not None:
            try:
                admit(writer.conn)
            except OverQuota as refusal:
                raise Forbidden(str(refusal)) from None
        if store.apply(writer.conn, accepted, record.uuid, changes) is not Applied.APPLIED:
            raise Conflict(f"Cannot '{action}' instance {record.uuid}: another operation "
                           f"changed it meanwhile ({accepted.name} needs "
                           f"{accepted.needs()}); try again.")
        operation = work.accept(req, writer.conn, record.uuid, kind, arguments)
    work.dispatch(req, operation)


def _on_host(record: ServerRecord) -> None:
    """nova's check_instance_host: a server that never reached a host has no guest to
    act on (409)."""
    if record.host is None:
        raise Conflict(f"Instance {record.uuid} is not ready: it has no host.")


def _power(req: ApiRequest, record: ServerRecord, action: str, rule: str,
           accepted: Transition, kind: OperationKind,
           arguments: Mapping[str, Any] | None = None) -> Response:
    req.authorize(rule, target(record))
    refuse_locked(req, record)
    require(record, accepted, action)
    _on_host(record)
    accept(req, record, action, accepted, kind, arguments)
    return Response(status=202)


def stop(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    # nova takes any value for os-stop (null by convention)
    return _power(req, record, "stop", "os_compute_api:servers:stop",
                  machine.ACTIONS["os-stop"], OperationKind.STOP)


def start(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    return _power(req, record, "start", "os_compute_api:servers:start",
                  machine.ACTIONS["os-start"], OperationKind.START)


def reboot(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    allowed = ", ".join(machine.REBOOT_TYPES)
    if not isinstance(argument, dict) or set(argument) != {"type"}:
        raise BadRequest(f"reboot takes {{\"type\": ...}}, the type one of {allowed} "
                         f"(any case), not {argument!r}.")
    reboot_type = argument["type"]
    if not isinstance(reboot_type, str) or reboot_type.upper() not in machine.REBOOTS \
            or reboot_type not in (reboot_type.upper(), reboot_type.lower(),
                                   reboot_type.capitalize()):
        raise BadRequest(f"Invalid input for field/attribute type. Value: {reboot_type!r}. "
                         f"It is not one of {allowed} (or Hard, hard, Soft, soft).")
    reboot_type = reboot_type.upper()
    return _power(req, record, "reboot", "os_compute_api:servers:reboot",
                  machine.REBOOTS[reboot_type], OperationKind.REBOOT, {"type": reboot_type})


def reset_state(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    """An admin's os-resetState: active or error, no task state; whatever ran is not
    waited for (its next step finds the state changed and stops)."""
    req.authorize("os_compute_api:os-admin-actions:reset_state", target(record))
    allowed = ", ".join(machine.RESET_STATES)
    if not isinstance(argument, dict) or set(argument) != {"state"}:
        raise BadRequest(f"os-resetState takes {{\"state\": ...}}, the state one of "
                         f"{allowed}, not {argument!r}.")
    state = argument["state"]
    if state not in machine.RESET_STATES:
        raise BadRequest(f"Invalid input for field/attribute state. Value: {state!r}. "
                         f"It is not one of {allowed}.")
    reset = machine.RESET_STATES[state]
    require(record, reset, "os-resetState")
    with req.state.database.writer() as writer:
        if store.apply(writer.conn, reset, record.uuid) is not Applied.APPLIED:
            raise Conflict(f"Cannot 'os-resetState' instance {record.uuid}: it was "
                           f"changed meanwhile ({reset.name} needs {reset.needs()}); "
                           "try again.")
        work.record_action(req, writer.conn, record.uuid, ApiAction.RESET_STATE)
    return Response(status=202)
