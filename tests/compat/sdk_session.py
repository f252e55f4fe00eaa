"""Serve openstacksdk calls, one JSON line each, for tests/compat/test_compute_clients.py.

Run by the compat venv's own python, never imported by the tests' interpreter:
``python sdk_session.py``. It connects as the ``OS_*`` variables say (Keystone
password auth: the SDK finds compute and image in the catalog), prints
``{"ready": true}``, then answers each line of stdin, ``{"call": "compute.servers",
"args": [...], "kwargs": {...}}``, with one line: ``{"result": ...}`` (a resource
as its ``to_dict(computed=False)``, a generator as a list) or ``{"error": the
exception's class, "message", "status": the HTTP status or null}``. The call is an
attribute path on the connection: ``create_server`` is the cloud layer,
``compute.create_server`` the proxy layer; an argument that is a request itself is
called first, and its result (a resource, ``compute.wait_for_server``'s argument)
passed on. It ends at the end of stdin, so it ends
with the test that started it. The SDK's own logging goes to stderr; nothing but the
answers reaches stdout.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from typing import Any

import openstack
from openstack import exceptions, resource


def plain(value: Any) -> Any:
    """``value`` as JSON can carry it."""
    if isinstance(value, resource.Resource):
        return plain(value.to_dict(computed=False))
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set)) or inspect.isgenerator(value):
        return [plain(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def call(connection: Any, request: dict[str, Any]) -> Any:
    """Run ``request`` on ``connection``; an argument that is itself a request (a dict
    with ``call``) is run first and its result, a resource, passed as is."""
    target = connection
    for name in request["call"].split("."):
        target = getattr(target, name)

    def argument(value: Any) -> Any:
        return call(connection, value) if isinstance(value, dict) and "call" in value \
            else value

    return target(*[argument(value) for value in request.get("args", [])],
                  **{key: argument(value) for key, value in request.get("kwargs", {}).items()})


def answer(connection: Any, request: dict[str, Any]) -> dict[str, Any]:
    try:
        return {"result": plain(call(connection, request))}
    except exceptions.HttpException as exc:
        return {"error": type(exc).__name__, "message": str(exc),
                "status": exc.status_code}
    except exceptions.SDKException as exc:
        return {"error": type(exc).__name__, "message": str(exc), "status": None}


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr  # whatever the SDK prints stays off the answers
    connection = openstack.connect()
    answers.write(json.dumps({"ready": True}) + "\n")
    answers.flush()
    for line in sys.stdin:
        answers.write(json.dumps(answer(connection, json.loads(line))) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
