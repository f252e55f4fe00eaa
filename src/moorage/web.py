"""The small WSGI toolkit Moorage's HTTP services share: route matching, responses,
status lines, dates, Accept negotiation, and a threaded server for the services that
run inside another process (the compute API, the agents' HTTP APIs, the embedded
cloud). Each service keeps its own request type and error format (placement's, the
compute API's)."""

from __future__ import annotations

import datetime
import email.utils
import http
import logging
import re
import socketserver
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Self, TypeVar
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

JSON = "application/json"
STATUS_LINES = {s.value: f"{s.value} {s.phrase}" for s in http.HTTPStatus}

H = TypeVar("H", bound=Callable[..., object])


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str | None = None


def http_date(moment: datetime.datetime) -> str:
    """An RFC 7231 date for last-modified headers."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return email.utils.format_datetime(moment.astimezone(datetime.UTC), usegmt=True)


def media_ranges(accept: str) -> list[tuple[str, float]]:
    """The (media range, quality) pairs of an Accept header."""
    ranges = []
    for item in accept.split(","):
        media, *params = (p.strip() for p in item.split(";"))
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if media:
            ranges.append((media.lower(), quality))
    return ranges


def quality(ranges: list[tuple[str, float]], offer: str) -> float:
    """The quality an Accept header gives ``offer``: its most specific matching range's."""
    kind = offer.split("/", 1)[0]
    best: tuple[int, float] = (-1, 0.0)
    for media, quality in ranges:
        specificity = 2 if media == offer else 1 if media == f"{kind}/*" else (
            0 if media == "*/*" else -1)
        if specificity > best[0]:
            best = (specificity, quality)
    return best[1]


def accepts_json(accept: str) -> bool:
    """True if an Accept header admits application/json with a non-zero quality."""
    return quality(media_ranges(accept), JSON) > 0



class Router(Generic[H]):
    """Matches a path against the route table: (handlers by method, path parameters)."""

    def __init__(self, routes: dict[str, dict[str, H]]) -> None:
        self._static: dict[str, dict[str, H]] = {}
        self._patterns: list[tuple[re.Pattern[str], dict[str, H]]] = []
        for template, methods in routes.items():
            if "{" not in template:
                self._static[template] = methods
                continue
            regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template)
            self._patterns.append((re.compile(f"^{regex}$"), methods))

    def match(self, path: str) -> tuple[dict[str, H], dict[str, str]] | None:
        methods = self._static.get(path)
        if methods is not None:
            return methods, {}
        for pattern, methods in self._patterns:
            found = pattern.match(path)
            if found:
                return methods, found.groupdict()
        return None


# -- a threaded server -------------------------------------------------------------

LOG = logging.getLogger(__name__)

WSGIApplication = Callable[[dict[str, Any], Callable[..., Any]], Any]


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True
    # A burst of connections (a conductor's workers, a fleet's callers) waits in the
    # kernel's queue instead of being reset (socketserver's default is 5).
    request_queue_size = 1024


class _QuietHandler(WSGIRequestHandler):
    """Request lines go to the log at DEBUG, not to stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        LOG.debug("%s " + format, self.address_string(), *args)


class ThreadedServer:
    """A threaded WSGI server of one application, served from a background thread
    (``start``) or the calling one (``serve_forever``). Idle, it checks for a stop
    every 50 ms, so stopping is quick."""

    def __init__(self, app: WSGIApplication, host: str = "127.0.0.1", port: int = 0,
                 name: str = "http") -> None:
        self._server = make_server(host, port, app, server_class=_ThreadingWSGIServer,
                                   handler_class=_QuietHandler)
        self.host = host
        self.port = int(self._server.server_address[1])
        self.name = name
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name=self.name, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever(0.05)

    def stop(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=10)
        self._server.server_close()
