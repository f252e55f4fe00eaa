"""Kept-alive HTTP/1.1 connections to a server, shared by threads: the transport under
Moorage's own clients (placement, the compute API, the compute agents).

Why not urllib3, which these clients used before: for the small JSON requests a
boot is made of, its pool and response machinery cost about 180 µs of CPU per
request where this costs about 100 (``bench/transport_bench.py``),
and the conductor makes three such requests for every boot. What urllib3 gave is
kept: idle connections reused (``maxsize`` kept per server), except those the
server has closed meanwhile; a request sent once more on a new connection when the
server closed the kept-alive one it went out on without answering, where the
caller says that is safe; timeouts; https with the system's certificate
authorities.

Why not http.client either, since 2026-11-28: every answer's head went through the
email package's parser (its feed parser, a Message, a policy), which was a quarter of
the CPU of the scheduler's calls to placement, for headers nothing here reads. A
request here is written as one buffer, and an answer's head is read for the three
things that decide its body and the connection: Content-Length,
Transfer-Encoding: chunked and Connection: close. http.client's exceptions are kept
(``RemoteDisconnected`` for a hang-up), as are its limits on a head's size.
"""

from __future__ import annotations

import http.client
import re
import select
import socket
import ssl
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import BinaryIO
from urllib.parse import urlsplit

from moorage import request_context

# The server closed the connection without answering: typically a kept-alive
# connection it had just closed as idle. Nothing was answered, so a request that is
# safe to repeat is sent once more.
_HUNG_UP = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
            ConnectionAbortedError)


class TransportError(Exception):
    """The request got no answer. ``str()`` says why in a few words ("connection
    refused", "timed out", ...); ``unreachable``: no connection could be made."""

    def __init__(self, reason: str, *, unreachable: bool = False,
                 timed_out: bool = False) -> None:
        super().__init__(reason)
        self.unreachable = unreachable
        self.timed_out = timed_out


@dataclass(frozen=True, slots=True)
class Reply:
    """A server's answer, read whole."""

    status: int
    reason: str
    data: bytes


def problem(exc: BaseException) -> str:
    """The root cause of a failed exchange, in a few words."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return "unknown host name"
        if isinstance(cause, ConnectionResetError):
            return "connection reset"
        if isinstance(cause, http.client.RemoteDisconnected):
            return "the server closed the connection without answering"
        if isinstance(cause, http.client.IncompleteRead):
            return "the server closed the connection in the middle of its answer"
        if isinstance(cause, http.client.BadStatusLine):
            return f"the server did not answer in HTTP: {str(cause)[:80]!r}"
        cause = cause.__cause__
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


# What a request line's target or a header may not hold: a control character (a
# newline would end the line and start another) or, in the target, a space.
_BAD_TARGET = re.compile(r"[\x00-\x20\x7f]")
_BAD_FIELD = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# http.client's limits on an answer's head.
_MAX_LINE = 65536
_MAX_HEADERS = 100
# Methods whose request says "Content-Length: 0" when it has no body, as http.client
# writes them: a server may otherwise wait for a body or refuse with 411.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


@dataclass(frozen=True, slots=True)
class _Head:
    """What an answer's status line and headers say about reading it."""

    status: int
    reason: str
    length: int | None  # None: chunked, or until the server closes
    chunked: bool
    will_close: bool


class _Connection:
    """One HTTP/1.1 connection: a request written in one send, its answer read from a
    buffered reader kept with the socket."""

    def __init__(self, sock: socket.socket, host: str) -> None:
        self.sock: socket.socket | None = sock
        self.host = host  # the Host header's value
        self._reader: BinaryIO = sock.makefile("rb")

    def send(self, method: str, target: str, headers: Mapping[str, str],
             body: bytes | None) -> None:
        if _BAD_TARGET.search(target) is not None:
            raise ValueError(f"a request target may not hold spaces or control "
                             f"characters: {target!r}")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host}",
                 "Accept-Encoding: identity"]
        for name, value in headers.items():
            if _BAD_FIELD.search(name) is not None or _BAD_FIELD.search(value) is not None \
                    or ":" in name:
                raise ValueError(f"not a header that can be sent: {name!r}: {value!r}")
            lines.append(f"{name}: {value}")
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        elif method in _BODY_METHODS:
            lines.append("Content-Length: 0")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        assert self.sock is not None
        self.sock.sendall(head + body if body else head)

    def head(self, method: str) -> _Head:
        """The answer's status and what decides how its body is read; an interim 1xx
        answer is skipped. RemoteDisconnected when the server closed without
        answering."""
        while True:
            line = self._line()
            if not line:
                raise http.client.RemoteDisconnected(
                    "Remote end closed connection without response")
            version, status, reason = _status_line(line)
            fields = self._fields()
            if not 100 <= status < 200:
                break
        connection = fields.get("connection", "").lower()
        chunked = fields.get("transfer-encoding", "").lower() == "chunked"
        if version == "HTTP/1.0":
            will_close = "keep-alive" not in connection
        else:
            will_close = "close" in connection
        length: int | None = None
        if method == "HEAD" or status in (204, 304):
            length = 0
        elif not chunked and "content-length" in fields:
            try:
                length = int(fields["content-length"])
            except ValueError:
                raise http.client.HTTPException(
                    f"the answer's Content-Length is not a number: "
                    f"{fields['content-length']!r}") from None
            if length < 0:
                raise http.client.HTTPException(
                    f"the answer's Content-Length is negative: {length}")
        if length is None and not chunked:
            will_close = True  # the body ends where the connection does
        return _Head(status, reason, length, chunked, will_close)

    def body(self, head: _Head, chunk_size: int) -> Iterator[bytes]:
        """The answer's body in pieces of at most ``chunk_size`` bytes;
        IncompleteRead when it ends before its length."""
        reader = self._reader
        if head.chunked:
            while size := self._chunk_size():
                while size:
                    piece = reader.read(min(size, chunk_size))
                    if not piece:
                        raise http.client.IncompleteRead(b"", size)
                    size -= len(piece)
                    yield piece
                self._line()  # the chunk's CRLF
            while self._line() not in (b"\r\n", b"\n", b""):
                pass  # the trailer
            return
        left = head.length
        while left is None or left > 0:
            piece = reader.read(chunk_size if left is None else min(left, chunk_size))
            if not piece:
                if left is not None:
                    raise http.client.IncompleteRead(b"", left)
                return
            if left is not None:
                left -= len(piece)
            yield piece

    def read_body(self, head: _Head) -> bytes:
        if head.length is not None and not head.chunked:
            data = self._reader.read(head.length) if head.length else b""
            if len(data) < head.length:
                raise http.client.IncompleteRead(data, head.length - len(data))
            return data
        return b"".join(self.body(head, 1 << 20))

    def close(self) -> None:
        if self.sock is not None:
            self._reader.close()
            self.sock.close()
            self.sock = None

    def _line(self) -> bytes:
        line = self._reader.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise http.client.LineTooLong("header line")
        return line

    def _fields(self) -> dict[str, str]:
        """The head's fields, by lower-case name (a repeated one: its last value)."""
        fields: dict[str, str] = {}
        for _ in range(_MAX_HEADERS + 1):
            line = self._line()
            if line in (b"\r\n", b"\n"):
                return fields
            if not line:
                raise http.client.IncompleteRead(b"")
            name, colon, value = line.decode("latin-1").partition(":")
            if colon:
                fields[name.strip().lower()] = value.strip()
        raise http.client.HTTPException(f"got more than {_MAX_HEADERS} headers")

    def _chunk_size(self) -> int:
        line = self._line()
        try:
            return int(line.split(b";", 1)[0], 16)
        except ValueError:
            raise http.client.IncompleteRead(b"") from None


def _status_line(line: bytes) -> tuple[str, int, str]:
    text = line.decode("latin-1").rstrip("\r\n")
    version, _, rest = text.partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/") or len(code) != 3 or not code.isdigit():
        raise http.client.BadStatusLine(text)
    return version, int(code), reason.strip()


def _closed_by_server(conn: _Connection) -> bool:
    """Whether an idle kept-alive connection is readable: the server closed it (an
    idle timeout) or sent what nobody asked for. Either way it is not reused, so a
    request that may not be sent twice does not go out on it (urllib3 checks the
    same)."""
    if conn.sock is None:
        return True
    poller = select.poll()
    poller.register(conn.sock, select.POLLIN)
    return bool(poller.poll(0))


class Server:
    """Connections to the server of ``url`` (scheme, host and port; a path in it is
    the ``prefix`` of every request's), shared by the threads that call
    ``request``. ``tls``: how an https server is verified (and this side's certificate,
    if any); the system's certificate authorities by default."""

    def __init__(self, url: str, *, timeout: float, maxsize: int = 16,
                 tls: ssl.SSLContext | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http or https URL: {url!r}")
        self.url = url
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.maxsize = maxsize
        self._host = parts.hostname
        self._port = parts.port
        self._tls = ((tls or ssl.create_default_context()) if parts.scheme == "https"
                     else None)
        self._idle: list[_Connection] = []
        default_port = 443 if parts.scheme == "https" else 80
        host = f"[{self._host}]" if ":" in self._host else self._host
        self._host_header = (host if self._port in (None, default_port)
                             else f"{host}:{self._port}")
        self._lock = threading.Lock()

    def request(self, method: str, path: str, *, body: bytes | None = None,
                headers: Mapping[str, str] | None = None, resend: bool = False) -> Reply:
        """Send ``method prefix+path`` and read the whole answer; TransportError when
        there is none. ``resend``: should the server close the connection without
        answering, send the request once more on a new one (for requests that are
        safe to repeat). Made while serving a request (or carrying out the operation
        one recorded), it sends that work's id in X-OpenStack-Request-ID."""
        url = self.prefix + path
        request_id = request_context.outgoing_id()
        if request_id is not None:
            headers = {request_context.HEADER: request_id, **(headers or {})}
        try:
            try:
                return self._exchange(method, url, body, headers or {})
            except _HUNG_UP:
                if not resend:
                    raise
                return self._exchange(method, url, body, headers or {})
        except TimeoutError:
            raise TransportError("timed out", timed_out=True) from None
        except TransportError:
            raise
        except (OSError, http.client.HTTPException) as exc:
            raise TransportError(problem(exc)) from exc

    def download(self, path: str, write: Callable[[bytes], object], *,
                 headers: Mapping[str, str] | None = None,
                 chunk_size: int = 1 << 20) -> Reply:
        """``GET prefix+path`` and hand a 200's body to ``write``, ``chunk_size`` bytes
        at a time, never holding it whole (an image's data); the Reply's ``data`` is
        then empty. Any other answer is read whole (its ``data`` says why).
        TransportError when there is no answer; nothing is sent twice (``write`` may
        have had part of it). A body cut short of its Content-Length ends early
        without an error (http.client's reads in chunks do not raise): the caller
        checks the length it expected."""
        url = self.prefix + path
        request_id = request_context.outgoing_id()
        if request_id is not None:
            headers = {request_context.HEADER: request_id, **(headers or {})}
        conn = self._checkout()
        try:
            conn.send("GET", url, headers or {}, None)
            head = conn.head("GET")
            if head.status != 200:
                data = conn.read_body(head)
            else:
                data = b""
                try:
                    for chunk in conn.body(head, chunk_size):
                        write(chunk)
                except http.client.IncompleteRead:
                    conn.close()
                    return Reply(head.status, head.reason, data)
        except TimeoutError:
            conn.close()
            raise TransportError("timed out", timed_out=True) from None
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise TransportError(problem(exc)) from exc
        except BaseException:
            conn.close()
            raise
        return self._finish(conn, head, data)

    def close(self) -> None:
        """Close the idle connections (those in use close when their answer is read)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _exchange(self, method: str, url: str, body: bytes | None,
                  headers: Mapping[str, str]) -> Reply:
        conn = self._checkout()
        try:
            conn.send(method, url, headers, body)
            head = conn.head(method)
            data = conn.read_body(head)
        except BaseException:
            conn.close()
            raise
        return self._finish(conn, head, data)

    def _finish(self, conn: _Connection, head: _Head, data: bytes) -> Reply:
        """The answer read: its connection kept for the next request, unless the
        server said it closes it."""
        if head.will_close:
            conn.close()
        else:
            self._checkin(conn)
        return Reply(head.status, head.reason, data)

    def _checkout(self) -> _Connection:
        while True:
            with self._lock:
                if not self._idle:
                    break
                idle = self._idle.pop()
            if not _closed_by_server(idle):
                return idle
            idle.close()
        port = self._port or (443 if self._tls is not None else 80)
        sock: socket.socket | None = None
        try:
            sock = socket.create_connection((self._host, port), timeout=self.timeout)
            # A request's head and body go out in one send: no wait for Nagle, as
            # urllib3 has it.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_hostname=self._host)
        except TimeoutError:
            if sock is not None:
                sock.close()
            raise TransportError("timed out connecting", unreachable=True,
                                 timed_out=True) from None
        except OSError as exc:
            if sock is not None:
                sock.close()
            raise TransportError(problem(exc), unreachable=True) from exc
        return _Connection(sock, self._host_header)

    def _checkin(self, conn: _Connection) -> None:
        with self._lock:
            if len(self._idle) < self.maxsize:
                self._idle.append(conn)
                return
        conn.close()


class Servers:
    """A ``Server`` per scheme, host and port, made on first use (the conductor's
    clients of many compute agents); at most ``limit`` are kept, the least recently
    made dropped first."""

    def __init__(self, *, timeout: float, maxsize: int = 16, limit: int = 256) -> None:
        self.timeout = timeout
        self.maxsize = maxsize
        self.limit = limit
        self._servers: dict[tuple[str, str | None, int | None], Server] = {}
        self._lock = threading.Lock()

    def for_url(self, url: str) -> tuple[Server, str]:
        """The Server of ``url`` and the path (with query) to request on it."""
        parts = urlsplit(url)
        key = (parts.scheme, parts.hostname, parts.port)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        with self._lock:
            server = self._servers.get(key)
            if server is None:
                server = Server(f"{parts.scheme}://{parts.netloc}", timeout=self.timeout,
                                maxsize=self.maxsize)
                self._servers[key] = server
                while len(self._servers) > self.limit:
                    oldest = next(iter(self._servers))
                    self._servers.pop(oldest).close()
        return server, path
