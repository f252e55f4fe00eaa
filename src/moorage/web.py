"""The small WSGI toolkit Moorage's HTTP services share: route matching, responses,
status lines, dates, Accept negotiation, and a threaded server for the services that
run inside another process (the compute API, the agents' HTTP APIs, the embedded
cloud). Each service keeps its own request type and error format (placement's, the
compute API's)."""

from __future__ import annotations

import contextlib
import datetime
import email.utils
import functools
import http
import io
import logging
import math
import re
import socket
import socketserver
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Generic, Self, TypeVar, cast
from wsgiref.headers import Headers
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer, make_server
from wsgiref.types import WSGIApplication, WSGIEnvironment

import orjson

from moorage.jsonvalue import JSONValue

if TYPE_CHECKING:
    from _typeshed import OptExcInfo
    from oslo_config.cfg import ConfigOpts

JSON = "application/json"
STATUS_LINES = {s.value: f"{s.value} {s.phrase}" for s in http.HTTPStatus}

H = TypeVar("H", bound=Callable[..., object])


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str | None = None


def behind_proxy(app: WSGIApplication, conf: ConfigOpts) -> WSGIApplication:
    """``app`` behind a TLS-terminating proxy when ``[oslo_middleware]
    enable_proxy_headers_parsing`` is set: oslo.middleware's HTTPProxyToWSGI takes
    the scheme, host and path prefix from the proxy's headers (``X-Forwarded-Proto``,
    ``X-Forwarded-Host``, ``X-Forwarded-Prefix``, ``Forwarded``), so that links and
    Location headers name the proxy's URL. Unset (the default, as upstream: only a
    proxy may set those headers), ``app`` itself, and a request pays nothing."""
    if not conf.oslo_middleware.enable_proxy_headers_parsing:
        return app
    from oslo_middleware import http_proxy_to_wsgi  # webob's import: only when used

    wrapped: WSGIApplication = http_proxy_to_wsgi.HTTPProxyToWSGI(app, conf)
    return wrapped


def http_date(moment: datetime.datetime) -> str:
    """An RFC 7231 date for last-modified headers (to the second: made once per
    second, as most answers of a second carry that second's)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return _http_date_of(math.floor(moment.timestamp()))


@functools.lru_cache(maxsize=64)
def _http_date_of(second: int) -> str:
    return email.utils.format_datetime(
        datetime.datetime.fromtimestamp(second, datetime.UTC), usegmt=True)


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



def nul_in(value: object) -> bool:
    """Whether a decoded request part (a string, or JSON: lists, objects, keys
    included) holds a NUL character, which no database column takes: PostgreSQL
    refuses it with an error the services would turn into a 500."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(nul_in(k) or nul_in(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(nul_in(v) for v in value)
    return False


def json_has_nul(body: bytes, data: object) -> bool:
    """``nul_in`` for a JSON body, walked only when its text could hold one."""
    return b"\\u0000" in body and nul_in(data)


NUL_REFUSED = "NUL characters are not allowed in {}."

# How deeply a request's JSON may nest: far beyond any body the services take (a
# placement reshape nests six levels, a server's block device mapping five), far
# below what the schema validators survive (they recurse: a body nested 1,000 deep
# exhausted the interpreter's stack while one built its message, and was a 500).
MAX_JSON_DEPTH = 32
DEPTH_REFUSED = "JSON nested more than {} levels deep is not allowed in {}."


def nested_deeper_than(value: object, limit: int) -> bool:
    """Whether decoded JSON ``value`` nests objects and arrays more than ``limit`` deep.
    Walked a level at a time, without recursion: a body thousands deep must not
    exhaust the stack here, and a wide one costs a list comprehension per level."""
    level: list[dict[str, object] | list[object]] = (
        [value] if isinstance(value, dict | list) else [])
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[dict[str, object] | list[object]] = []
        for item in level:
            children: Iterable[object] = item.values() if isinstance(item, dict) else item
            below.extend([child for child in children if isinstance(child, dict | list)])
        level = below
    return False


def json_body_problem(body: bytes, data: object, what: str = "the request body"
                      ) -> str | None:
    """Why a parsed JSON body is refused before any schema or handler reads it: nested
    deeper than ``MAX_JSON_DEPTH``, or holding a NUL character; None when it is not.
    Each service answers it as its own 400."""
    if (body.count(b"{") + body.count(b"[") > MAX_JSON_DEPTH
            and nested_deeper_than(data, MAX_JSON_DEPTH)):
        return DEPTH_REFUSED.format(MAX_JSON_DEPTH, what)
    if json_has_nul(body, data):
        return NUL_REFUSED.format(what)
    return None


class RefusedBody(ValueError):
    """A JSON body refused before any schema or handler reads it; the message is the
    400's, which each service answers in its own error body."""


def parse_json_body(body: bytes, malformed: str = "Malformed request body") -> JSONValue:
    """The JSON document of a request body, or RefusedBody saying why not: not JSON
    (``malformed``, then the parser's reason), or ``json_body_problem``'s refusal."""
    try:
        data: JSONValue = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise RefusedBody(f"{malformed}: {exc}") from None
    problem = json_body_problem(body, data)
    if problem is not None:
        raise RefusedBody(problem)
    return data


def sends_body(environ: WSGIEnvironment) -> bool:
    """Whether the request comes with a body (a length above 0, a chunked one, or a
    length that is not a number). An application that answers without reading it
    says ``Connection: close``: the server has to drop the connection to skip the
    body (Granian does, without saying so), and a client told so does not send its
    next request on a connection about to close."""
    if environ.get("HTTP_TRANSFER_ENCODING"):
        return True
    try:
        return int(environ.get("CONTENT_LENGTH") or 0) > 0
    except ValueError:
        return True


class Request:
    """What every service's request reads of the WSGI environ: the method, the path,
    headers, the URL it came to and whether a body waits unread. Placement's
    ``Request`` and the compute API's ``ApiRequest`` add their own parsing, context
    and errors."""

    def __init__(self, environ: WSGIEnvironment) -> None:
        self.environ = environ
        self.method: str = environ["REQUEST_METHOD"]
        # PEP 3333 hands PATH_INFO over latin-1 decoded; names in paths are UTF-8.
        raw_path: str = environ.get("PATH_INFO", "") or ""
        try:
            self.path = raw_path.encode("latin-1").decode("utf-8")
        except UnicodeError:
            self.path = raw_path
        # The template of the route the path matched (a metrics label), once routed.
        self.route: str | None = None
        self.request_id = ""
        self._body: bytes | None = None
        self._base: str | None = None  # the URL the application is mounted at

    def header(self, name: str, default: str | None = None) -> str | None:
        """The request header ``name`` (``Content-Type``, ``X-Auth-Token``...)."""
        key = name.upper().replace("-", "_")
        value = self.environ.get(key if key in ("CONTENT_TYPE", "CONTENT_LENGTH")
                                 else "HTTP_" + key)
        return value if value is not None else default

    def absolute_url(self, path: str) -> str:
        """``path`` (below the application's mount point) as an absolute URL, on the
        host and scheme the request came to: Location headers are absolute, as webob
        makes them upstream, and clients follow them as given."""
        base = self._base
        if base is None:  # once per request: a list writes several links per item
            env = self.environ
            scheme = env.get("wsgi.url_scheme", "http")
            host = env.get("HTTP_HOST")
            if not host:
                host = env.get("SERVER_NAME", "localhost")
                port = str(env.get("SERVER_PORT", ""))
                if port and port != {"http": "80", "https": "443"}.get(scheme):
                    host = f"{host}:{port}"
            base = self._base = f"{scheme}://{host}{env.get('SCRIPT_NAME', '')}"
        return base + path

    @property
    def body_unread(self) -> bool:
        """A body was sent and not read (see ``sends_body``)."""
        return self._body is None and sends_body(self.environ)


class Router(Generic[H]):
    """Matches a path against the route table: (handlers by method, path parameters)."""

    def __init__(self, routes: dict[str, dict[str, H]]) -> None:
        self._static: dict[str, dict[str, H]] = {}
        self._patterns: list[tuple[str, re.Pattern[str], dict[str, H]]] = []
        for template, methods in routes.items():
            if "{" not in template:
                self._static[template] = methods
                continue
            regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template)
            self._patterns.append((template, re.compile(f"^{regex}$"), methods))

    def match(self, path: str) -> tuple[dict[str, H], dict[str, str]] | None:
        found = self.resolve(path)
        return None if found is None else (found[1], found[2])

    def resolve(self, path: str) -> tuple[str, dict[str, H], dict[str, str]] | None:
        """Like ``match``, led by the route's template (``/servers/{server_id}``): what
        metrics label a request by, whatever the path's parameters."""
        methods = self._static.get(path)
        if methods is not None:
            return path, methods, {}
        for template, pattern, methods in self._patterns:
            found = pattern.match(path)
            if found:
                return template, methods, found.groupdict()
        return None

    def template(self, path: str) -> str | None:
        """The template of the route ``path`` matches; None when none does."""
        found = self.resolve(path)
        return None if found is None else found[0]


# -- a threaded server -------------------------------------------------------------

LOG = logging.getLogger(__name__)


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True
    # A burst of connections (a conductor's workers, a fleet's callers) waits in the
    # kernel's queue instead of being reset (socketserver's default is 5).
    request_queue_size = 1024

    def server_activate(self) -> None:
        super().server_activate()
        self.stopping = False
        self._lock = threading.Lock()
        self._idle: set[socket.socket] = set()  # kept-alive, waiting for a request
        self._busy: set[socket.socket] = set()  # a request read, its answer not sent
        self._quiet = threading.Condition(self._lock)  # notified when one is no longer busy

    def waiting(self, connection: socket.socket, idle: bool) -> bool:
        """Mark a connection idle or busy; False when the server stops (close it)."""
        with self._lock:
            if idle:
                self._idle.add(connection)
                self._busy.discard(connection)
                self._quiet.notify_all()
            else:
                self._idle.discard(connection)
                if not self.stopping:
                    self._busy.add(connection)
            return not self.stopping

    def finished(self, connection: socket.socket) -> None:
        """The connection's handler is done with it."""
        with self._lock:
            self._idle.discard(connection)
            self._busy.discard(connection)
            self._quiet.notify_all()

    def drain(self, timeout: float | None) -> int:
        """Wait until every request in flight is answered, ``timeout`` seconds at most
        (None: no limit); the number still unanswered."""
        with self._lock:
            self._quiet.wait_for(lambda: not self._busy, timeout)
            return len(self._busy)

    def close_idle(self) -> None:
        """Stop: close every kept-alive connection waiting for a request, and make the
        busy ones close after their answer. A request already sent on an idle
        connection was not read yet: its client sees the connection closed and
        nothing done."""
        with self._lock:
            self.stopping = True
            idle, self._idle = self._idle, set()
        for connection in idle:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Body:
    """A request's body as ``wsgi.input``: never reads past its Content-Length, so
    the next request on a kept-alive connection starts where it should."""

    def __init__(self, stream: io.BufferedIOBase, length: int) -> None:
        self._stream = stream
        self.left = length

    def read(self, size: int | None = -1) -> bytes:
        return self._take(self._stream.read, size)

    def readline(self, size: int | None = -1) -> bytes:
        return self._take(self._stream.readline, size)

    def _take(self, read: Callable[[int], bytes], size: int | None) -> bytes:
        if size is None or size < 0 or size > self.left:
            size = self.left
        data = read(size) if size else b""
        self.left -= len(data)
        return data

    def readlines(self, hint: int = -1) -> list[bytes]:
        lines = []
        while self.left:
            lines.append(self.readline())
        return lines

    def __iter__(self) -> Iterator[bytes]:
        while self.left:
            yield self.readline()


class _ChunkedBody:
    """A chunked request body (``Transfer-Encoding: chunked``, what glance's clients send
    an upload as) as ``wsgi.input``: the chunks' data, decoded, then end of file."""

    def __init__(self, stream: io.BufferedIOBase) -> None:
        self._stream = stream
        self._left = 0  # of the current chunk
        self.done = False

    def _next_chunk(self) -> None:
        line = self._stream.readline(1024)
        try:
            self._left = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise ValueError(f"malformed chunk size line {line!r}") from None
        if self._left == 0:
            while self._stream.readline(1024) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            self.done = True

    def read(self, size: int | None = -1) -> bytes:
        parts: list[bytes] = []
        wanted = -1 if size is None or size < 0 else size
        while not self.done and wanted != 0:
            if self._left == 0:
                self._next_chunk()
                continue
            take = self._left if wanted < 0 else min(self._left, wanted)
            data = self._stream.read(take)
            if not data:
                self.done = True
                break
            parts.append(data)
            self._left -= len(data)
            if wanted > 0:
                wanted -= len(data)
            if self._left == 0:
                self._stream.readline(8)  # the CRLF after the chunk's data
        return b"".join(parts)

    def readline(self, size: int | None = -1) -> bytes:
        return self.read(size)

    def readlines(self, hint: int = -1) -> list[bytes]:
        return [self.read()]

    def __iter__(self) -> Iterator[bytes]:
        while chunk := self.read(1 << 16):
            yield chunk


class _Answer(ServerHandler):
    """wsgiref's handler answering in HTTP/1.1: an answer whose length is known keeps
    the connection open for the next request; any other closes it."""

    http_version = "1.1"
    request_handler: _QuietHandler

    def start_response(self, status: str, headers: list[tuple[str, str]],
                       exc_info: OptExcInfo | None = None) -> Callable[[bytes], None]:
        """An application's ``Connection: close`` (placement and the compute API say it
        when they leave a body unread, for granian's sake) closes the connection after
        the answer; wsgiref refuses hop-by-hop headers from applications, so the
        header itself is this server's to send (``cleanup_headers``)."""
        kept = []
        for name, value in headers:
            if name.lower() == "connection":
                if value.strip().lower() == "close":
                    self.request_handler.close_connection = True
                continue
            kept.append((name, value))
        return super().start_response(status, kept, exc_info)

    def cleanup_headers(self) -> None:
        super().cleanup_headers()
        handler = self.request_handler
        # Set by start_response, before this (the stubs do not declare it).
        headers = cast(Headers, getattr(self, "headers"))  # noqa: B009
        if "Content-Length" not in headers:
            handler.close_connection = True
        if handler.close_connection:
            headers["Connection"] = "close"

    def handle_error(self) -> None:
        self.request_handler.close_connection = True
        super().handle_error()


class _QuietHandler(WSGIRequestHandler):
    """HTTP/1.1 with keep-alive (wsgiref's own handler answers one request per
    connection: under a burst of spawns a fleet's server started a thread and the
    conductor a TCP connection for every request). Each application logs its own
    line per request; the server's own messages (a malformed request) go to the log at
    DEBUG, not to stderr. A connection idle for ``timeout`` seconds is closed, so idle
    clients do not pin the server's threads."""

    protocol_version = "HTTP/1.1"
    timeout = 60.0
    # The status line, headers and body go out in separate writes: without this, a
    # kept-alive connection waits for the client's delayed ACK between them.
    disable_nagle_algorithm = True
    # Bodies a handler left unread up to this size are read and dropped to keep the
    # connection; a larger remainder closes it.
    _DRAIN_LIMIT = 1 << 16

    def handle(self) -> None:
        server = self.server
        assert isinstance(server, _ThreadingWSGIServer)
        self.close_connection = True
        try:
            while server.waiting(self.connection, idle=True):
                self.raw_requestline = self.rfile.readline(65537)
                if not server.waiting(self.connection, idle=False) or not self.raw_requestline:
                    return
                if not self._answer():
                    return
        except (TimeoutError, ConnectionError):
            return  # idle too long, or the client went away
        finally:
            server.finished(self.connection)

    def _answer(self) -> bool:
        """Answer the request whose line was read; True to read another on this
        connection."""
        if len(self.raw_requestline) > 65536:
            self.requestline = self.request_version = self.command = ""
            self.send_error(414)
            return False
        if not self.parse_request():  # an error was sent
            return False
        chunked = (self.headers.get("Transfer-Encoding") or "").strip().lower() == "chunked"
        if self.headers.get("Transfer-Encoding"):
            # Whatever the application leaves of a chunked body unread ends the
            # connection: answer, then close.
            self.close_connection = True
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
            self.close_connection = True
        body: _Body | _ChunkedBody = (_ChunkedBody(self.rfile) if chunked
                                      else _Body(self.rfile, max(length, 0)))
        server = self.server
        assert isinstance(server, _ThreadingWSGIServer)
        answer = _Answer(cast(IO[bytes], body), cast(IO[bytes], self.wfile),
                         self.get_stderr(), self.get_environ(), multithread=True)
        answer.request_handler = self
        app = server.get_app()
        assert app is not None
        answer.run(app)
        self.wfile.flush()
        if isinstance(body, _ChunkedBody):
            return False
        if body.left:
            if body.left > self._DRAIN_LIMIT:
                return False
            body.read()
        return not self.close_connection

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Nothing: each application logs its own line per request, with its id."""

    def log_message(self, format: str, *args: object) -> None:
        LOG.debug("%s " + format, self.address_string(), *args)


class ThreadedServer:
    """A threaded WSGI server of one application, served from a background thread
    (``start``) or the calling one (``serve_forever``). Idle, it checks for a stop
    every 50 ms, so stopping is quick; ``stop`` refuses new connections at once and
    lets the requests in flight finish (a spawn the conductor waits for)."""

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

    def stop(self, drain: float | None = 10.0) -> None:
        """Stop accepting and close the listening socket (new connections are
        refused), close the idle kept-alive connections, then wait ``drain`` seconds
        at most (None: no limit) for the requests in flight to be answered; each
        busy connection is closed after its answer. Those still running then are
        left to their daemon threads, which end with the process."""
        if self._thread is not None and self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=10)
        self._server.server_close()
        self._server.close_idle()
        left = self._server.drain(drain)
        if left:
            LOG.warning("%s: %d request(s) still running after %ss; not waiting for them",
                        self.name, left, drain)
