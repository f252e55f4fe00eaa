"""The compute API WSGI application: one function that reads top to bottom.

Order of the stages, and why:
1. request id        every response, errors included, carries x-openstack-request-id;
                     every log line the request causes names it, and the caller's
                     X-OpenStack-Request-ID is passed on (moorage.request_context)
2. authentication    unauthenticated requests are refused before anything else;
                     /internal/ routes check the service token instead
3. routing           404 for unknown paths, 405 with Allow for a wrong method
   microversion      under /v2.1, the version asked for (moorage.api.microversion): 400
                     malformed, 406 out of range; every answer then names its version
4. body schema       the body against the schema /openapi.json publishes for the route
                     (moorage.api.schemas): 400 naming the field, before any handler
5. handler           check policy and what needs data -> data layer -> shape the response
Errors become nova's bodies; anything unexpected is a 500 without a traceback.
The image service answers below /image on the same listener (moorage.api.image_service),
with the same authentication.
"""

from __future__ import annotations

import logging
import time
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from moorage import request_context
from moorage.api import auth, image_service, microversion, validation
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
from moorage.internal_access import InternalAccess
from moorage.lifecycle.history import CorruptHistory
from moorage.metrics import UNMATCHED, conductor_metrics
from moorage.placement.client import PlacementError
from moorage.web import JSON, NUL_REFUSED, STATUS_LINES, Response, Router, behind_proxy

LOG = logging.getLogger(__name__)
REQUEST_LOG = logging.getLogger("moorage.api.requests")
# The paths that speak microversions (not /, /openapi.json, /internal/, /metrics).
VERSIONED = "/v2.1"
# The name api/service.py knows the application type by.
WSGIApp = WSGIApplication


def _merge_vary(headers: list[tuple[str, str]], added: list[tuple[str, str]]
                ) -> list[tuple[str, str]]:
    """``headers`` with ``added``, one Vary header listing every name (a handler's own
    Vary, such as the capabilities page's Accept, first)."""
    vary = [value for name, value in headers + added if name.lower() == "vary"]
    merged = [(n, v) for n, v in headers + added if n.lower() != "vary"]
    return [*merged, ("Vary", ", ".join(vary))]


def _routed(path: str) -> str | None:
    """The path the router matches: nova's, where a trailing slash is part of the path
    (``/os-simple-tenant-usage/`` is no route: a 404, as Tempest checks), but for the
    version document (``/v2.1/``), which clients ask for with and without."""
    if path == VERSIONED + "/":
        return VERSIONED
    if len(path) > 1 and path.endswith("/"):
        return None
    return path


def build_app(state: ApiState) -> WSGIApplication:
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
    warning = InternalAccess.of(state.conf).start_warning(
        "compute API", "the agents' registrations and heartbeats (PUT /internal/services/...)")
    if warning is not None:
        LOG.warning("%s", warning)

    def dispatch(req: ApiRequest) -> Response:
        req.context = authenticate(req)
        request_context.identify(req.context.user_id, req.context.project_id)
        if "\x00" in req.path:
            raise BadRequest(NUL_REFUSED.format("the path"))
        query = req.environ.get("QUERY_STRING", "")
        if "%00" in query or "\x00" in query:  # before any handler reads it, or not
            raise BadRequest(NUL_REFUSED.format("the query string"))
        path = _routed(req.path)
        found = router.resolve(path) if path is not None else None
        if path is None or found is None:
            req.route = UNMATCHED
            raise NotFound("The resource could not be found.")
        req.route, methods, req.params = found
        if path == VERSIONED or path.startswith(VERSIONED + "/"):
            try:
                req.negotiated = microversion.requested(req.environ)
            except microversion.MicroversionError as exc:
                raise ApiError(exc.status, exc.message) from None
        handler = methods.get(req.method)
        if handler is None:
            raise MethodNotAllowed(
                f"The method {req.method} is not allowed for this resource; "
                f"allowed: {', '.join(methods)}.", headers=[("allow", ", ".join(methods))])
        body_schema = validation.validator(handler.__name__, req.version)
        if body_schema is not None:
            # A route whose schema is null takes no body (nova's PUT of one tag).
            absent = not req.body and validation.takes_no_body(body_schema)
            validation.validate(body_schema, None if absent else req.json())
        try:
            return handler(req)
        except PlacementError as exc:
            raise ServiceUnavailable(f"Placement failed: {exc}") from None

    def answer(environ: WSGIEnvironment, start_response: StartResponse,
               context: request_context.RequestContext) -> list[bytes]:
        started = time.perf_counter()
        req = ApiRequest(environ, state)
        req.request_id = context.request_id
        req.global_request_id = context.global_request_id
        try:
            response = dispatch(req)
        except ApiError as exc:
            response = Response(status=exc.status, body=exc.body(), headers=list(exc.headers),
                                content_type=JSON)
        except CorruptHistory as exc:
            # A hand-edited row: say which server and field, once, without a traceback.
            LOG.error("%s %s: %s", req.method, req.path, exc)
            error = ApiError(500, str(exc))
            response = Response(status=500, body=error.body(), content_type=JSON)
        except Exception:
            LOG.exception("unexpected error serving %s %s", req.method, req.path)
            error = ApiError(500, "Unexpected API Error. See the compute API log.")
            response = Response(status=500, body=error.body(), content_type=JSON)
        headers = list(response.headers)
        if response.content_type and response.status not in (204, 304):
            headers.append(("content-type", response.content_type))
        headers.append(("content-length", str(len(response.body))))
        if req.negotiated is not None:
            headers = _merge_vary(headers, microversion.response_headers(req.negotiated))
        headers.append(("x-openstack-request-id", req.request_id))
        headers.append(("x-compute-request-id", req.request_id))
        if req.body_unread:
            headers.append(("connection", "close"))
        start_response(STATUS_LINES.get(response.status, str(response.status)), headers)
        elapsed = time.perf_counter() - started
        observe(route_of(req), req.method, response.status, elapsed)
        request_context.log_request(REQUEST_LOG, environ, response.status, len(response.body),
                                    elapsed)
        return [response.body]

    app: WSGIApplication = image_service.mount(request_context.serving(answer), state,
                                               authenticate)
    if state.conf.api.auth_strategy == auth.KEYSTONE:
        app = auth.wrap_keystone(app, state.conf)
    # Outermost: every layer sees the scheme and host the client used.
    return behind_proxy(app, state.conf)
