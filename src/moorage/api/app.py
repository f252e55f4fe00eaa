"""The compute API WSGI application: one function that reads top to bottom.

Order of the stages, and why:
1. request id        every response, errors included, carries x-openstack-request-id
2. authentication    unauthenticated requests are refused before anything else;
                     /internal/ routes check the service token instead
3. routing           404 for unknown paths, 405 with Allow for a wrong method
4. handler           parse and validate -> data layer -> shape the response
Errors become nova's bodies; anything unexpected is a 500 without a traceback.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from moorage.api import auth
from moorage.api.errors import (
    ApiError,
    BadRequest,
    MethodNotAllowed,
    NotFound,
    ServiceUnavailable,
)
from moorage.api.http import ApiRequest
from moorage.api.routes import ROUTES
from moorage.api.state import ApiState
from moorage.metrics import UNMATCHED, conductor_metrics
from moorage.placement.client import PlacementError
from moorage.web import JSON, NUL_REFUSED, STATUS_LINES, Response, Router

LOG = logging.getLogger(__name__)

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def build_app(state: ApiState) -> WSGIApp:
    """The WSGI application serving ``state``."""
    router = Router(ROUTES)
    authenticate = auth.authenticator(state.conf)
    observe = state.metrics.observe
    if state.conductor is not None:
        conductor_metrics()  # its series exist (at 0) before the first event

    def route_of(req: ApiRequest) -> str:
        """The route label: the template dispatch matched, or (refused before routing:
        401) the one the path would match."""
        if req.route is not None:
            return req.route
        path = req.path.rstrip("/") if len(req.path) > 1 else req.path
        return router.template(path) or UNMATCHED
    if state.service_token is None:
        LOG.warning("[DEFAULT] service_token is unset: the internal routes agents call "
                    "(/internal/...) are open. DEVELOPMENT MODE; set a token in production.")

    def dispatch(req: ApiRequest) -> Response:
        req.context = authenticate(req)
        if "\x00" in req.path:
            raise BadRequest(NUL_REFUSED.format("the path"))
        query = req.environ.get("QUERY_STRING", "")
        if "%00" in query or "\x00" in query:  # before any handler reads it, or not
            raise BadRequest(NUL_REFUSED.format("the query string"))
        path = req.path.rstrip("/") if len(req.path) > 1 else req.path
        found = router.resolve(path)
        if found is None:
            req.route = UNMATCHED
            raise NotFound("The resource could not be found.")
        req.route, methods, req.params = found
        handler = methods.get(req.method)
        if handler is None:
            raise MethodNotAllowed(
                f"The method {req.method} is not allowed for this resource; "
                f"allowed: {', '.join(methods)}.", headers=[("allow", ", ".join(methods))])
        try:
            return handler(req)
        except PlacementError as exc:
            raise ServiceUnavailable(f"Placement failed: {exc}") from None

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        started = time.perf_counter()
        req = ApiRequest(environ, state)
        req.request_id = f"req-{uuid.uuid4()}"
        try:
            response = dispatch(req)
        except ApiError as exc:
            response = Response(status=exc.status, body=exc.body(), headers=list(exc.headers),
                                content_type=JSON)
        except Exception:
            LOG.exception("unexpected error serving %s %s", req.method, req.path)
            error = ApiError(500, "Unexpected API Error. See the compute API log.")
            response = Response(status=500, body=error.body(), content_type=JSON)
        headers = list(response.headers)
        if response.content_type and response.status not in (204, 304):
            headers.append(("content-type", response.content_type))
        headers.append(("content-length", str(len(response.body))))
        headers.append(("x-openstack-request-id", req.request_id))
        headers.append(("x-compute-request-id", req.request_id))
        if req.body_unread:
            headers.append(("connection", "close"))
        start_response(STATUS_LINES.get(response.status, str(response.status)), headers)
        observe(route_of(req), req.method, response.status, time.perf_counter() - started)
        return [response.body]

    app: WSGIApp = application
    if state.conf.api.auth_strategy == auth.KEYSTONE:
        app = auth.wrap_keystone(app, state.conf)
    return app
