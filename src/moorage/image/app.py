"""The image service's WSGI application, glance v2 on the wire.

It runs below the compute API's listener at ``/image`` (``moorage.api.image_service``
mounts it), as devstack serves glance; its callers are who the compute API's
authentication says (``identify``), so one token and one policy file serve both.

Stages, in order: the version documents answer anyone; every other route needs a
caller (401); routing (404, 405 with Allow); the handler. Errors are glance's
bodies (``moorage.image.errors``); anything unexpected is a 500 without a traceback.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from moorage import request_context
from moorage.image.errors import (
    BadRequest,
    ImageError,
    InternalError,
    MethodNotAllowed,
    NotFound,
)
from moorage.image.http import Answer, ImageRequest, Streamed
from moorage.image.policy import Caller
from moorage.image.routes import PUBLIC, ROUTES
from moorage.image.service import ImageService
from moorage.policy import PolicyValue
from moorage.web import JSON, NUL_REFUSED, STATUS_LINES, Response, Router

LOG = logging.getLogger(__name__)
REQUEST_LOG = logging.getLogger("moorage.image.requests")

# Who the request is from; raises moorage.image.errors.Unauthorized.
Identify = Callable[[WSGIEnvironment], Caller]


@dataclass(frozen=True)
class Anonymous:
    """The caller of the public routes."""

    user_id: str | None = None
    project_id: str | None = None
    is_admin: bool = False

    def policy_values(self) -> dict[str, PolicyValue]:
        return {"user_id": None, "project_id": None, "roles": [], "is_admin": False}


# What counts an answered request: (route template, method, status, seconds).
Observe = Callable[[str, str, int, float], None]
UNMATCHED = "unmatched"


def _routed_path(path: str) -> str:
    """The path the route table is asked for. Only the version documents take a trailing
    slash: elsewhere it is an empty segment, as glance's router sees it, so
    ``GET /v2/images/`` (an empty image id) is a 404, not the list."""
    trimmed = path.rstrip("/") or "/"
    return trimmed if trimmed in PUBLIC else path


def build_app(service: ImageService, identify: Identify,
              observe: Observe | None = None) -> WSGIApplication:
    router = Router(ROUTES)

    def dispatch(req: ImageRequest) -> Answer:
        path = _routed_path(req.path)
        if "\x00" in path:
            raise BadRequest(NUL_REFUSED.format("the path"))
        if path not in PUBLIC:
            req.caller = identify(req.environ)
        found = router.resolve(path)
        if found is None:
            raise NotFound("The resource could not be found.")
        req.route, methods, req.params = found
        handler = methods.get(req.method)
        if handler is None:
            raise MethodNotAllowed(
                f"The method {req.method} is not allowed for this resource; allowed: "
                f"{', '.join(methods)}.", headers=[("Allow", ", ".join(methods))])
        return handler(req)

    def answer(environ: WSGIEnvironment, start_response: StartResponse,
               context: request_context.RequestContext) -> Iterable[bytes]:
        started = time.perf_counter()
        req = ImageRequest(environ, service, Anonymous())
        try:
            response = dispatch(req)
        except ImageError as exc:
            response = Response(status=exc.status, body=exc.body(), headers=exc.headers,
                                content_type=JSON)
        except Exception:
            LOG.exception("unexpected error serving %s %s", req.method, req.path)
            error = InternalError("Unexpected error. See the image service's log.")
            response = Response(status=500, body=error.body(), content_type=JSON)
        headers = list(response.headers)
        if isinstance(response, Streamed):
            length, body = response.length, response.chunks
        else:
            length, body = len(response.body), [response.body]
        if response.content_type and response.status not in (204, 304):
            headers.append(("Content-Type", response.content_type))
        headers.append(("Content-Length", str(length)))
        headers.append(("x-openstack-request-id", context.request_id))
        if req.body_unread:
            headers.append(("Connection", "close"))
        start_response(STATUS_LINES.get(response.status, str(response.status)), headers)
        elapsed = time.perf_counter() - started
        if observe is not None:
            # Labelled with the mount's prefix: /image/v2/images/{image_id}/file.
            observe(environ.get("SCRIPT_NAME", "") + (req.route or UNMATCHED), req.method,
                    response.status, elapsed)
        request_context.log_request(REQUEST_LOG, environ, response.status, length, elapsed)
        return body

    return request_context.serving(answer)
