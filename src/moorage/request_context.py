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


# What can end a log line or steer the terminal showing it: the C0 and C1 controls
# (newline, carriage return, ESC and CSI...), DEL, and Unicode's line, paragraph and
# next-line separators.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED_CONTROLS = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED_CONTROLS.get(char) or (
        f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def printable(text: str) -> str:
    """``text`` with each control character written as an escape (``\\n``, ``\\x1b``):
    what a client sent can neither start a log line of its own nor steer a terminal."""
    return text if _CONTROLS.search(text) is None else _CONTROLS.sub(_escaped, text)


def _printable_arg(value: object) -> object:
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, BaseException):
        return printable(str(value))
    return value


class ContextFilter(logging.Filter):
    """Gives each record the thread's context as ``context`` (what oslo.log's formatters
    read first), None outside a request: a line logged between requests never names
    the last one. A filter on the handlers, not a record factory: a record made with
    ``extra={"context": ...}`` (oslo.log's adapters) keeps the context it was given.

    It also writes the control characters of the record's arguments as escapes
    (``printable``): every value a request carries (a path, a name, an error quoting
    either) reaches a log line as an argument, never as its format, so no client can
    forge a line or write escape sequences to an operator's terminal."""

    def filter(self, record: logging.LogRecord) -> bool:
        if "context" not in record.__dict__:
            record.context = _current.get()
        args = record.args
        if isinstance(args, tuple):
            record.args = tuple(_printable_arg(arg) for arg in args)
        elif isinstance(args, Mapping):
            record.args = {key: _printable_arg(arg) for key, arg in args.items()}
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
    (``logging_context_format_string``).

    The line is written once per request by every service, so it is made here rather
    than by ``Logger.info``: its text rendered at once, each piece a client sent made
    printable (the record then has no arguments for ``ContextFilter`` to scan, and no
    format for ``getMessage`` to apply), and the record made with the place it comes
    from rather than found by a walk up the stack. The record, the handlers, the
    filters and the formatter are logging's as for any other line."""
    if not logger.isEnabledFor(logging.INFO):
        return
    query = environ.get("QUERY_STRING")
    path = printable(environ.get("PATH_INFO", "") + (f"?{query}" if query else ""))
    message = (f'{printable(environ.get("REMOTE_ADDR", "-"))} '
               f'"{printable(environ.get("REQUEST_METHOD", "-"))} {path}" '
               f"status: {status:d} len: {length:d}{extra} time: {seconds * 1000:.1f}ms")
    logger.handle(logger.makeRecord(logger.name, logging.INFO, __file__, _LOG_REQUEST_LINE,
                                    message, (), None, "log_request"))


# Where a request's line says it was logged (its ``lineno``): log_request itself.
_LOG_REQUEST_LINE = log_request.__code__.co_firstlineno


def identify(user_id: str | None, project_id: str | None) -> None:
    """The caller, once authentication knows it, on the lines the request logs next."""
    context = _current.get()
    if context is not None:
        context.user_id = user_id
        context.project_id = project_id
