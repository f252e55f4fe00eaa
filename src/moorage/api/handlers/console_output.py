"""os-getConsoleOutput: what the guest wrote to its console, read from its host now
(the libvirt driver reads the serial log its domain writes), in nova's shape
``{"output": text}``.

``length`` keeps the last that many lines; -1 or none, all the host keeps (nova's
API documents -1 as unlimited). As nova, control characters other than tab and
newline are removed from the text.
"""

from __future__ import annotations

import re

from moorage.api.errors import BadRequest, Conflict, NotFound, NotImplementedYet, ServiceUnavailable
from moorage.api.handlers.server_records import target
from moorage.api.http import ApiRequest, json_response
from moorage.compute.client import AgentUnreachable, ConsoleUnavailable
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.states import TaskState
from moorage.web import Response

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f]")
_INTEGER = re.compile(r"-?[0-9]+")


def requested_length(argument: object) -> int | None:
    """The lines asked for (None: all): an integer from -1, or one as a string."""
    if argument is None:
        return None
    if not isinstance(argument, dict) or not set(argument) <= {"length"}:
        raise BadRequest(f"os-getConsoleOutput takes {{\"length\": lines}} (or an empty "
                         f"object), not {argument!r}.")
    length = argument.get("length")
    if length is None:
        return None
    if isinstance(length, str) and _INTEGER.fullmatch(length):
        length = int(length)
    if isinstance(length, bool) or not isinstance(length, int) or length < -1:
        raise BadRequest(f"Invalid input for field/attribute length. Value: {length!r}. "
                         "It must be an integer of -1 or more (-1: all lines).")
    return None if length == -1 else length


def tail(output: str, length: int | None) -> str:
    """The last ``length`` lines of ``output`` (all of it for None, nothing for 0)."""
    if length is None:
        return output
    if length == 0:
        return ""
    return "\n".join(output.split("\n")[-length:])


def console_output(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    req.authorize("os_compute_api:os-console-output", target(record))
    length = requested_length(argument)
    if record.host is None or record.task_state == TaskState.DELETING:
        raise Conflict(f"Instance {record.uuid} is not ready.")
    agents = req.state.agents
    if agents is None:
        raise ServiceUnavailable("No compute agent can be reached from this API process.")
    try:
        output = agents.console_output(record.host, record.uuid)
    except ConsoleUnavailable as exc:
        if exc.missing:
            raise NotFound("Guest does not have a console available.") from None
        raise NotImplementedYet(f"Unable to get console output: {exc}") from None
    except AgentUnreachable:
        raise Conflict(f"Instance {record.uuid} is not ready: its host does not "
                       "answer.") from None
    return json_response({"output": _CONTROL.sub("", tail(output, length))})
