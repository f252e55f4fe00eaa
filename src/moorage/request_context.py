"""Which request the work of this thread is for: the request id every log line names,
and the id passed on to the services this work calls.

Upstream's rules (oslo.middleware's request_id, nova's global_request_id): every
request gets its own new local id (``req-<uuid>``, the ``x-openstack-request-id``
of its response). A caller may send ``X-OpenStack-Request-ID: req-<uuid>``, its
own id; a valid one becomes the request's *global* id (anything else is ignored:
the header is the caller's to set, so it is never trusted to be more than an id).
A call this work makes to another service sends the global id, or the local one
when there is none, so the whole tree of calls one user request causes shares one
id across the services' logs.

Why a context variable: the request's context is set by the application for the
request (or by the conductor for the operation a request recorded) and read far
below it, by the transport under every client (``outgoing_id``) and by oslo.log's
formatter (``ContextFilter`` puts it on each record), without threading it
through every call between them. Each thread has its own value; a request's value
is restored when it ends.
"""

from __future__ import annotations

import contextvars
import logging
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeGuard, TypeVar
from wsgiref.types import StartResponse, WSGIEnvironment

from oslo_context import context as oslo_context

HEADER = "X-OpenStack-Request-ID"
_ENVIRON_KEY = "HTTP_X_OPENSTACK_REQUEST_ID"
_REQUEST_ID = re.compile(r"req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

RequestContext = oslo_context.RequestContext

_current: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar(
    "moorage_request_context", default=None)


def is_request_id(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a request id as OpenStack makes them: ``req-`` and a
    lower-case UUID."""
    return isinstance(value, str) and _REQUEST_ID.fullmatch(value) is not None


def global_id_of(environ: Mapping[str, object]) -> str | None:
    """The caller's id (``X-OpenStack-Request-ID``) when it is a valid request id."""
    value = environ.get(_ENVIRON_KEY)
    return value if is_request_id(value) else None


def new_context(*, request_id: str | None = None, global_request_id: str | None = None
                ) -> RequestContext:
    """A context with ``request_id`` (a new one if None). oslo.context also keeps the
    newest context of each thread in a store of its own; ours is ``current()``."""
    return RequestContext(request_id=request_id or oslo_context.generate_request_id(),
                          global_request_id=global_request_id, overwrite=False)


@contextmanager
def active(context: RequestContext) -> Iterator[RequestContext]:
    """``context`` is this thread's while the block runs; the previous one after."""
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


Answer = TypeVar("Answer")


def serving(answer: Callable[[WSGIEnvironment, StartResponse, RequestContext], Answer]
            ) -> Callable[[WSGIEnvironment, StartResponse], Answer]:
    """The WSGI application that runs ``answer`` in the context of the request it
    serves: a new local id, the caller's valid ``X-OpenStack-Request-ID`` as its global
    id (the one wrapper of placement, the compute API and the agents)."""

    def application(environ: WSGIEnvironment, start_response: StartResponse) -> Answer:
        context = new_context(global_request_id=global_id_of(environ))
        with active(context):
            return answer(environ, start_response, context)

    return application


def current() -> RequestContext | None:
    """The context of the request (or operation) this thread works for, if any."""
    return _current.get()


def outgoing_id() -> str | None:
    """What a call to another service sends as ``X-OpenStack-Request-ID``: the global id
    of the work under way, or its local id; None outside any request."""
    context = _current.get()
    if context is None:
        return None
    return str(context.global_request_id or context.request_id)


class ContextFilter(logging.Filter):
    """Gives each record the thread's context as ``context`` (what oslo.log's formatters
    read first), None outside a request: a line logged between requests never names
    the last one. A filter on the handlers, not a record factory: a record made with
    ``extra={"context": ...}`` (oslo.log's adapters) keeps the context it was given."""

    def filter(self, record: logging.LogRecord) -> bool:
        if "context" not in record.__dict__:
            record.context = _current.get()
        return True


def filter_handlers(logger: logging.Logger) -> None:
    """Put a ContextFilter on each of ``logger``'s handlers that has none."""
    for handler in logger.handlers:
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())


def log_request(logger: logging.Logger, environ: WSGIEnvironment, status: int,
                length: int, seconds: float, extra: str = "") -> None:
    """The one INFO line of a served request: who asked, what, the answer and how long
    it took. The request's ids and caller are the context's, in the line's prefix
    (``logging_context_format_string``)."""
    if not logger.isEnabledFor(logging.INFO):
        return
    query = environ.get("QUERY_STRING")
    path = environ.get("PATH_INFO", "") + (f"?{query}" if query else "")
    logger.info('%s "%s %s" status: %d len: %d%s time: %.1fms',
                environ.get("REMOTE_ADDR", "-"), environ.get("REQUEST_METHOD", "-"), path,
                status, length, extra, seconds * 1000)


def identify(user_id: str | None, project_id: str | None) -> None:
    """The caller, once authentication knows it, on the lines the request logs next."""
    context = _current.get()
    if context is not None:
        context.user_id = user_id
        context.project_id = project_id
