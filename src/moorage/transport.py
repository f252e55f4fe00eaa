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
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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
        cause = cause.__cause__
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class _HTTPConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        # A request's head and body go out in one send, but a body sent after a
        # 100-continue would wait for Nagle: off, as urllib3 has it.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _HTTPSConnection(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _closed_by_server(conn: http.client.HTTPConnection) -> bool:
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
        self._idle: list[http.client.HTTPConnection] = []
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
            conn.request("GET", url, headers=dict(headers or {}))
            response = conn.getresponse()
            if response.status != 200:
                data = response.read()
            else:
                data = b""
                while chunk := response.read(chunk_size):
                    write(chunk)
        except TimeoutError:
            conn.close()
            raise TransportError("timed out", timed_out=True) from None
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise TransportError(problem(exc)) from exc
        except BaseException:
            conn.close()
            raise
        return self._finish(conn, response, data)

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
            conn.request(method, url, body=body, headers=dict(headers))
            response = conn.getresponse()
            data = response.read()
        except BaseException:
            conn.close()
            raise
        return self._finish(conn, response, data)

    def _finish(self, conn: http.client.HTTPConnection,
                response: http.client.HTTPResponse, data: bytes) -> Reply:
        """The answer read: its connection kept for the next request, unless the
        server said it closes it."""
        if response.will_close:
            conn.close()
        else:
            self._checkin(conn)
        return Reply(response.status, response.reason, data)

    def _checkout(self) -> http.client.HTTPConnection:
        while True:
            with self._lock:
                if not self._idle:
                    break
                idle = self._idle.pop()
            if not _closed_by_server(idle):
                return idle
            idle.close()
        conn: http.client.HTTPConnection
        if self._tls is not None:
            conn = _HTTPSConnection(self._host, self._port, timeout=self.timeout,
                                    context=self._tls)
        else:
            conn = _HTTPConnection(self._host, self._port, timeout=self.timeout)
        try:
            conn.connect()
        except TimeoutError:
            raise TransportError("timed out connecting", unreachable=True,
                                 timed_out=True) from None
        except OSError as exc:
            raise TransportError(problem(exc), unreachable=True) from exc
        return conn

    def _checkin(self, conn: http.client.HTTPConnection) -> None:
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
