"""Work the compute API accepts: an operation recorded in the transaction that records
the server's new state, then handed to this process's conductor, if it runs one
(``lifecycle/operations.py`` says who carries it out and when)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.engine import Connection

from moorage.api.errors import ServiceUnavailable
from moorage.api.http import ApiRequest
from moorage.lifecycle import actions, operations
from moorage.lifecycle.operations import Operation
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.states import OperationKind


def require_conductor(req: ApiRequest) -> None:
    """Refuse work nobody would carry out: no conductor in this process, and the
    configuration does not say separate conductor processes run."""
    if req.state.conductor is None and req.state.conf.conductor.run_in_api:
        raise ServiceUnavailable("The conductor is not running; servers cannot be built "
                                 "or changed by this API process.")


def accept(req: ApiRequest, conn: Connection, uuid: str, kind: OperationKind,
           arguments: Mapping[str, Any] | None = None, *, new: bool = False) -> Operation:
    """Record the work in the caller's transaction: claimed at once by this process's
    conductor, if it has one. ``new``: the server was just created, so no older
    operation of it can exist. The work carries the request's ids (its log lines and
    calls name the request, wherever it runs) and its caller (who asked for a move); the
    request's action (``actions.ACTIONS``) is recorded with it."""
    conductor = req.state.conductor
    action = actions.ACTIONS[kind]
    if action is not None and req.request_id:
        record_action(req, conn, uuid, action)
    return operations.add(conn, uuid, kind, arguments,
                          owner=conductor.identity if conductor is not None else None,
                          lease_seconds=float(req.state.conf.conductor.lease_seconds),
                          first=new, request_id=req.request_id or None,
                          global_request_id=req.global_request_id,
                          user_id=req.context.user_id, project_id=req.context.project_id)


def record_action(req: ApiRequest, conn: Connection, uuid: str, action: str) -> None:
    """Record that this request asked ``action`` (nova's name) of the server, in the
    caller's transaction (os-instance-actions): ``accept`` calls it for the work it
    records; a request that changes a server without an operation calls it itself."""
    actions.record_action(conn, uuid, action, req.request_id, user_id=req.context.user_id,
                          project_id=req.context.project_id)


def dispatch(req: ApiRequest, operation: Operation, record: ServerRecord | None = None) -> None:
    """After the commit: hand the work to this process's conductor."""
    if req.state.conductor is not None:
        req.state.conductor.dispatch(operation, record)
