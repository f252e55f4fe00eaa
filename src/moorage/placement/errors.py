"""Errors of the placement API: the exceptions below a handler raise, one HTTP status
each, and the codes they carry (the ``code`` of an error body, from 1.23).

The codes are upstream's, so clients that branch on them keep working. The errors
sit here, below the HTTP layer (``moorage.placement.http``, which renders them and
which handlers import them from), so that the service and its policy can raise them
without importing the layer that holds the service.
"""

from __future__ import annotations

from typing import ClassVar
from wsgiref.types import WSGIEnvironment

DEFAULT = "placement.undefined_code"
INVENTORY_INUSE = "placement.inventory.inuse"
CONCURRENT_UPDATE = "placement.concurrent_update"
DUPLICATE_NAME = "placement.duplicate_name"
PROVIDER_IN_USE = "placement.resource_provider.inuse"
PROVIDER_CANNOT_DELETE_PARENT = "placement.resource_provider.cannot_delete_parent"
RESOURCE_PROVIDER_NOT_FOUND = "placement.resource_provider.not_found"
ILLEGAL_DUPLICATE_QUERYPARAM = "placement.query.duplicate_key"
QUERYPARAM_BAD_VALUE = "placement.query.bad_value"
QUERYPARAM_MISSING_VALUE = "placement.query.missing_value"

# The sentence before the detail, as upstream (webob) words it, so that clients
# matching on error text keep working.
_EXPLANATIONS = {
    400: "The server could not comply with the request since it is either malformed "
    "or otherwise incorrect.",
    401: "This server could not verify that you are authorized to access the document "
    "you requested. Either you supplied the wrong credentials (e.g., bad password), or "
    "your browser does not understand how to supply the credentials required.",
    403: "Access was denied to this resource.",
    404: "The resource could not be found.",
    409: "There was a conflict when trying to complete your request.",
    413: "The body of your request was too large for this server.",
    500: "The server has either erred or is incapable of performing the requested "
    "operation.",
}


class HTTPError(Exception):
    """An error response. Raise it anywhere below a handler."""

    status: ClassVar[int] = 500

    def __init__(
        self,
        detail: str = "",
        *,
        code: str | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.headers = headers or []

    def full_detail(self, environ: WSGIEnvironment) -> str:
        if self.status == 405:
            return (
                f"The method {environ.get('REQUEST_METHOD', '')} is not allowed for this "
                f"resource. \n\n {self.detail}"
            )
        if self.status == 406:
            accept = environ.get("HTTP_ACCEPT", "")
            return (
                "The resource could not be generated that was acceptable to your browser "
                f"(content of type {accept}. \n\n {self.detail}"
            )
        if self.status == 415:
            return (
                f"The request media type {environ.get('CONTENT_TYPE', '')} is not supported "
                f"by this server. \n\n {self.detail}"
            )
        return f"{_EXPLANATIONS.get(self.status, '')}\n\n {self.detail}  "


class BadRequest(HTTPError):
    status = 400


class Unauthorized(HTTPError):
    status = 401


class Forbidden(HTTPError):
    status = 403


class NotFound(HTTPError):
    status = 404


class MethodNotAllowed(HTTPError):
    status = 405


class NotAcceptable(HTTPError):
    status = 406


class Conflict(HTTPError):
    status = 409


class RequestEntityTooLarge(HTTPError):
    status = 413


class UnsupportedMediaType(HTTPError):
    status = 415


class InternalServerError(HTTPError):
    status = 500
