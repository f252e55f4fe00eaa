"""What a PUT /os-services/{service_id} asks to change, read from its path and body as
the asked microversion has it: pure functions from the request's parts to an
``OperatorChange``, each refusal the 400 (or 404) nova answers.

Before 2.53 the path names an action and the body the service (``ServiceAction``):
``enable``, ``disable``, ``disable-log-reason`` and, from 2.11, ``force-down``; the
answer is what the action set (``action_answer``). From 2.53 the path names the
service by uuid and the body says what changes (``change_of``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

import jsonschema

from moorage.api.errors import BadRequest, NotFound
from moorage.api.handlers.common import boolean
from moorage.api.microversion import SERVICE_FORCED_DOWN, SERVICE_UUIDS, Version, at
from moorage.api.schemas import SERVICE_ACTION_V2_1, SERVICE_ACTION_V2_11, SERVICE_UPDATE_V2_53
from moorage.api.storage.services import OperatorChange
from moorage.api.validation import validate
from moorage.json_schema import Checked
from moorage.jsonvalue import JSONValue

# The body each era of the API takes (moorage.api.schemas; dispatch checked the union).
_V2_1 = Checked(jsonschema.Draft202012Validator(SERVICE_ACTION_V2_1))
_V2_11 = Checked(jsonschema.Draft202012Validator(SERVICE_ACTION_V2_11))
_V2_53 = Checked(jsonschema.Draft202012Validator(SERVICE_UPDATE_V2_53))


def check_body(body: JSONValue, version: Version) -> None:
    """400 naming the field when ``body`` is not what ``version`` takes."""
    if at(version, SERVICE_UUIDS):
        validate(_V2_53, body)
    else:
        validate(_V2_11 if at(version, SERVICE_FORCED_DOWN) else _V2_1, body)


class ServiceAction(enum.StrEnum):
    """The actions of PUT /os-services/{action} before 2.53."""

    ENABLE = "enable"
    DISABLE = "disable"
    DISABLE_LOG_REASON = "disable-log-reason"
    FORCE_DOWN = "force-down"


@dataclass(frozen=True)
class ActionRequest:
    """An action before 2.53: what it does, to the service of ``host`` and ``binary``."""

    action: ServiceAction
    host: str
    binary: str
    change: OperatorChange


def action_request(name: str, body: Mapping[str, JSONValue], version: Version
                   ) -> ActionRequest:
    """The action the path names, with its body (checked by ``check_body``)."""
    actions = set(ServiceAction)
    if not at(version, SERVICE_FORCED_DOWN):
        actions.discard(ServiceAction.FORCE_DOWN)
    if name not in actions:
        raise NotFound("Unknown action")  # nova's words: the path is not an action here
    action = ServiceAction(name)
    if action is ServiceAction.ENABLE:
        change = OperatorChange(disabled=False)
    elif action is ServiceAction.DISABLE:
        change = OperatorChange(disabled=True)
    elif action is ServiceAction.DISABLE_LOG_REASON:
        reason = body.get("disabled_reason")
        if not isinstance(reason, str):
            raise BadRequest("Missing disabled reason field")
        change = OperatorChange(disabled=True, disabled_reason=reason)
    else:
        if "forced_down" not in body:
            raise BadRequest("Missing forced_down field")
        change = OperatorChange(forced_down=boolean(body["forced_down"], "forced_down"))
    return ActionRequest(action, str(body["host"]), str(body["binary"]), change)


def action_answer(request: ActionRequest) -> dict[str, JSONValue]:
    """What an action answers: the service named, and what the action set."""
    answer: dict[str, JSONValue] = {"host": request.host, "binary": request.binary}
    change = request.change
    if change.forced_down is not None:
        answer["forced_down"] = change.forced_down
    else:
        answer["status"] = "disabled" if change.disabled else "enabled"
        if change.disabled_reason:
            answer["disabled_reason"] = change.disabled_reason
    return answer


def change_of(body: Mapping[str, JSONValue]) -> OperatorChange:
    """The change a 2.53 body asks for (checked by ``check_body``)."""
    status = body.get("status")
    reason = body.get("disabled_reason")
    if reason is not None and status != "disabled":
        # nova refuses a reason with "enabled" and ignores one without a status;
        # Moorage refuses both, rather than drop what the operator wrote.
        raise BadRequest("disabled_reason is only allowed with status 'disabled'.")
    forced_down = (boolean(body["forced_down"], "forced_down")
                   if "forced_down" in body else None)
    change = OperatorChange(
        disabled=None if status is None else status == "disabled",
        disabled_reason=reason if isinstance(reason, str) else None,
        forced_down=forced_down)
    if change.empty:
        raise BadRequest("No updates were requested: give at least one of 'status' and "
                         "'forced_down'.")
    return change
