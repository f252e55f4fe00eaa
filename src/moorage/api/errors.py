"""Errors of the compute API, rendered in nova's shape:
``{"badRequest": {"code": 400, "message": "..."}}``.

Raise them anywhere below a handler (the data layer included); the application turns
them into responses. The message says what is wrong and, where it applies, what is
allowed.
"""

from __future__ import annotations

from typing import ClassVar

import orjson

# Nova's fault names, by status (nova.api.openstack.wsgi's table); others are
# "computeFault" (a 406 too).
FAULT_NAMES = {
    400: "badRequest",
    401: "unauthorized",
    403: "forbidden",
    404: "itemNotFound",
    405: "badMethod",
    409: "conflictingRequest",
    413: "overLimit",
    415: "badMediaType",
    429: "overLimit",
    501: "notImplemented",
    503: "serviceUnavailable",
}


class ApiError(Exception):
    """An error response: ``status`` and a message for the user."""

    def __init__(self, status: int, message: str,
                 headers: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = list(headers or [])

    @property
    def fault_name(self) -> str:
        return FAULT_NAMES.get(self.status, "computeFault")

    def body(self) -> bytes:
        return orjson.dumps({self.fault_name: {"code": self.status, "message": self.message}})


class _FixedStatus(ApiError):
    status_code: ClassVar[int] = 500

    def __init__(self, message: str, headers: list[tuple[str, str]] | None = None) -> None:
        super().__init__(self.status_code, message, headers)


class BadRequest(_FixedStatus):
    status_code = 400


class Unauthorized(_FixedStatus):
    status_code = 401


class Forbidden(_FixedStatus):
    status_code = 403


class NotFound(_FixedStatus):
    status_code = 404


class MethodNotAllowed(_FixedStatus):
    status_code = 405


class Conflict(_FixedStatus):
    status_code = 409


class RequestEntityTooLarge(_FixedStatus):
    status_code = 413


class UnsupportedMediaType(_FixedStatus):
    status_code = 415


class NotImplementedYet(_FixedStatus):
    status_code = 501


class ServiceUnavailable(_FixedStatus):
    status_code = 503
