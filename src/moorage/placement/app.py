"""The placement WSGI application: one function that reads top to bottom.

Order of the stages, and why:
1. request id        every response, errors included, carries x-openstack-request-id;
                     every log line the request causes names it, and the caller's
                     X-OpenStack-Request-ID is passed on (moorage.request_context)
2. authentication    as upstream, an unauthenticated request is refused before anything else
3. microversion      handlers and error bodies are shaped by it
4. body checks       a body needs a content type and an integer length
5. routing           404 for unknown paths, 405 with Allow for a wrong method
6. version gate      routes newer than the requested microversion are 404
7. handler           parse and validate -> data layer -> shape for the microversion
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from oslo_middleware import cors

from moorage import request_context
from moorage.metrics import UNMATCHED
from moorage.placement import auth, microversion
from moorage.placement.http import (
    BadRequest,
    Conflict,
    HTTPError,
    InternalServerError,
    MethodNotAllowed,
    NotAcceptable,
    NotFound,
    Request,
    Response,
    StreamedResponse,
    error_response,
)
from moorage.placement.routes import ROUTES
from moorage.placement.service import PlacementService
from moorage.placement.storage import errors as storage_errors
from moorage.web import NUL_REFUSED, STATUS_LINES, Router, behind_proxy

LOG = logging.getLogger(__name__)
REQUEST_LOG = logging.getLogger("moorage.placement.requests")



def _check_body_headers(req: Request) -> None:
    length = req.environ.get("CONTENT_LENGTH")
    if not length:
        return
    try:
        has_body = int(length) > 0
    except ValueError:
        raise BadRequest("content-length header must be an integer") from None
    if has_body and not req.environ.get("CONTENT_TYPE"):
        raise BadRequest("content-type header required when content-length > 0")


def make_app(service: PlacementService) -> WSGIApplication:
    """The WSGI application serving ``service``."""
    router = Router(ROUTES)
    authenticate = auth.authenticator(service.conf)
    observe = service.metrics.observe

    def route_of(req: Request) -> str:
        """The route label: the template dispatch matched, or (refused before routing:
        401, a bad microversion) the one the path would match."""
        route = req.route if req.route is not None else router.template(req.path)
        return UNMATCHED if route is None else route or "/"

    def dispatch(req: Request) -> Response:
        req.credentials = authenticate(req)
        request_context.identify(req.credentials.user_id, req.credentials.project_id)
        try:
            req.version = microversion.from_environ(req.environ)
        except microversion.MicroversionError as exc:
            if exc.status == 406:
                raise NotAcceptable(exc.detail) from None
            raise BadRequest(exc.detail) from None
        req.version_known = True
        if "\x00" in req.path:  # PostgreSQL cannot compare with it: a 500 there, once
            raise BadRequest(NUL_REFUSED.format("the path"))
        _check_body_headers(req)
        found = router.resolve(req.path)
        if found is None:
            req.route = UNMATCHED
            raise NotFound("")
        req.route, methods, req.path_params = found
        handler = methods.get(req.method)
        if handler is None:
            raise MethodNotAllowed(
                "The method specified is not allowed for this resource.",
                headers=[("allow", ", ".join(methods))],
            )
        min_version = getattr(handler, "min_version", None)
        if min_version is not None and req.version < min_version:
            status = getattr(handler, "too_old_status", 404)
            raise (MethodNotAllowed if status == 405 else NotFound)("")
        try:
            return handler(req)
        except storage_errors.NotFound as exc:
            raise NotFound(exc.message, code=exc.code) from None
        except storage_errors.Conflict as exc:
            raise Conflict(exc.message, code=exc.code) from None
        except storage_errors.InvalidData as exc:
            raise BadRequest(exc.message, code=exc.code) from None

    def answer(environ: WSGIEnvironment, start_response: StartResponse,
               context: request_context.RequestContext) -> Iterable[bytes]:
        started = time.perf_counter()
        req = Request(environ, service)
        req.request_id = context.request_id
        try:
            response = dispatch(req)
        except HTTPError as exc:
            response = error_response(exc, environ, req)
        except Exception:
            LOG.exception("unexpected error serving %s %s", req.method, req.path)
            response = error_response(
                InternalServerError("An unexpected error occurred; see the service log."),
                environ, req)
        headers = response.headers
        # Handlers give Location relative to the application; clients get it absolute.
        headers = [
            (name, req.absolute_url(value)) if name == "location" and value.startswith("/")
            else (name, value)
            for name, value in headers
        ]
        if response.content_type and response.status not in (204, 304):
            headers.append(("content-type", response.content_type))
        length = response.length if isinstance(response, StreamedResponse) else len(response.body)
        headers.append(("content-length", str(length)))
        headers.append(("x-openstack-request-id", req.request_id))
        if req.body_unread:
            headers.append(("connection", "close"))
        if req.version_known:
            headers.append((microversion.HEADER, f"{microversion.SERVICE_TYPE} {req.version}"))
            headers.append(("vary", microversion.HEADER))
        start_response(STATUS_LINES.get(response.status, str(response.status)), headers)
        elapsed = time.perf_counter() - started
        observe(route_of(req), req.method, response.status, elapsed)
        request_context.log_request(REQUEST_LOG, environ, response.status, length, elapsed,
                                    f" microversion: {req.version}")
        if isinstance(response, StreamedResponse):
            # An iterable that is not a list: the server sends it as it comes.
            return response.chunks
        return [response.body]

    app: WSGIApplication = request_context.serving(answer)
    if service.conf.api.auth_strategy == auth.KEYSTONE:
        app = auth.wrap_keystone(app, service.conf)
    # CORS sits outside authentication so that preflight requests need no token.
    if service.conf.cors.allowed_origin:
        app = cors.CORS(app, service.conf)
    # Outermost: every layer sees the scheme and host the client used.
    return behind_proxy(app, service.conf)
