"""moorage.transport over real sockets: kept-alive connections reused, a hang-up sent
again only when allowed, and every failure a TransportError saying why."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from moorage import transport
from moorage.placement.launcher import free_port

Behaviour = Callable[[int, bytes], bytes | None]  # (request number, request) -> answer


def _answer(body: bytes, *, close: bool = False) -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + (b"Connection: close\r\n" if close else b"")
            + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)


class StandIn:
    """A server that answers each request as ``behaviour`` says (None: hang up), and
    counts the connections it accepted and the requests it read."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections = 0
        self.requests: list[bytes] = []
        self._open: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            self._open.append(conn)
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    @staticmethod
    def _read_request(conn: socket.socket) -> bytes | None:
        """One whole request (head, and the body its Content-Length says), however the
        client split it into segments; None when the client closed."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            body += chunk
        return head + b"\r\n\r\n" + body

    def _talk(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    data = self._read_request(conn)
                except OSError:
                    return
                if not data:
                    return
                self.requests.append(data.split(b"\r\n", 1)[0])
                answer = self.behaviour(len(self.requests), data)
                if answer is None:
                    return  # hang up without answering
                conn.sendall(answer)
                if b"Connection: close" in answer:
                    return

    def close_idle(self) -> None:
        """Close every connection accepted so far, as an idle timeout would."""
        for conn in self._open:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()


@pytest.fixture
def stand_in() -> Iterator[Callable[[Behaviour], StandIn]]:
    made: list[StandIn] = []

    def make(behaviour: Behaviour) -> StandIn:
        made.append(StandIn(behaviour))
        return made[-1]

    yield make
    for server in made:
        server.stop()


def test_requests_share_one_kept_alive_connection(stand_in: Callable[[Behaviour], StandIn]
                                                  ) -> None:
    server = stand_in(lambda n, _req: _answer(f'{{"n": {n}}}'.encode()))
    client = transport.Server(server.url + "/prefix", timeout=5)
    replies = [client.request("GET", f"/thing/{n}") for n in range(5)]
    assert [r.data for r in replies] == [f'{{"n": {n}}}'.encode() for n in range(1, 6)]
    assert all(r.status == 200 and r.reason == "OK" for r in replies)
    assert server.requests[0] == b"GET /prefix/thing/0 HTTP/1.1"
    assert server.connections == 1


def test_an_answer_that_closes_is_not_reused(stand_in: Callable[[Behaviour], StandIn]
                                             ) -> None:
    server = stand_in(lambda _n, _req: _answer(b"{}", close=True))
    client = transport.Server(server.url, timeout=5)
    for _ in range(3):
        assert client.request("GET", "/").data == b"{}"
    assert server.connections == 3


def _hangs_up_on_the_second(stand_in: Callable[[Behaviour], StandIn]
                            ) -> tuple[StandIn, transport.Server]:
    """A server that closes without answering the second request, on the connection
    kept alive after the first (already sent)."""
    server = stand_in(lambda n, _req: None if n == 2 else _answer(b"{}"))
    client = transport.Server(server.url, timeout=5)
    client.request("GET", "/first")
    return server, client


def test_a_hang_up_is_sent_again_when_allowed(stand_in: Callable[[Behaviour], StandIn]
                                              ) -> None:
    server, client = _hangs_up_on_the_second(stand_in)
    assert client.request("PUT", "/second", body=b"{}", resend=True).data == b"{}"
    assert server.requests == [b"GET /first HTTP/1.1", b"PUT /second HTTP/1.1",
                               b"PUT /second HTTP/1.1"]
    assert server.connections == 2


def test_a_hang_up_is_an_error_when_not_allowed(stand_in: Callable[[Behaviour], StandIn]
                                                ) -> None:
    server, client = _hangs_up_on_the_second(stand_in)
    with pytest.raises(transport.TransportError,
                       match=r"closed the connection without answering|connection reset"
                       ) as caught:
        client.request("POST", "/second", body=b"{}")
    assert not caught.value.unreachable
    assert server.requests == [b"GET /first HTTP/1.1", b"POST /second HTTP/1.1"]


def test_a_connection_the_server_closed_while_idle_is_not_reused(
        stand_in: Callable[[Behaviour], StandIn]) -> None:
    """An idle timeout: the server closes a kept-alive connection after answering. A
    POST, which is never sent twice, must go out on a new connection."""
    server = stand_in(lambda _n, _req: _answer(b"{}"))
    client = transport.Server(server.url, timeout=5)
    client.request("GET", "/first")
    server.close_idle()
    time.sleep(0.2)
    assert client.request("POST", "/second", body=b"{}").data == b"{}"
    assert server.connections == 2


def test_no_server_is_unreachable() -> None:
    client = transport.Server(f"http://127.0.0.1:{free_port()}", timeout=5)
    with pytest.raises(transport.TransportError, match="connection refused") as caught:
        client.request("GET", "/")
    assert caught.value.unreachable


def test_a_server_that_does_not_answer_times_out(stand_in: Callable[[Behaviour], StandIn]
                                                 ) -> None:
    def slow(_n: int, _req: bytes) -> bytes:
        time.sleep(2)
        return _answer(b"{}")

    client = transport.Server(stand_in(slow).url, timeout=0.3)
    started = time.monotonic()
    with pytest.raises(transport.TransportError, match="timed out") as caught:
        client.request("GET", "/")
    assert caught.value.timed_out and not caught.value.unreachable
    assert time.monotonic() - started < 1.5


def test_servers_are_one_per_origin(stand_in: Callable[[Behaviour], StandIn]) -> None:
    first = stand_in(lambda _n, _req: _answer(b"1"))
    second = stand_in(lambda _n, _req: _answer(b"2"))
    servers = transport.Servers(timeout=5, limit=1)
    server, path = servers.for_url(first.url + "/hosts/h1/guests?x=1")
    assert path == "/hosts/h1/guests?x=1"
    assert servers.for_url(first.url + "/other")[0] is server
    assert server.request("GET", path).data == b"1"
    other, _ = servers.for_url(second.url + "/")
    assert other.request("GET", "/").data == b"2"
    # At most ``limit`` kept: the first was dropped, a new one is made for it.
    assert servers.for_url(first.url + "/")[0] is not server


def test_a_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(ValueError, match="not an http or https URL"):
        transport.Server("ftp://example.com", timeout=5)


def test_a_download_streams_a_200_and_reads_anything_else_whole(
        stand_in: Callable[[Behaviour], StandIn]) -> None:
    body = bytes(range(256)) * 40  # 10,240 bytes
    server = stand_in(lambda n, _req: _answer(body) if n == 1 else (
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 7\r\n\r\nmissing"))
    client = transport.Server(server.url + "/image", timeout=5)
    chunks: list[bytes] = []
    reply = client.download("/v2/images/i1/file", chunks.append, chunk_size=4096)
    assert (reply.status, reply.data) == (200, b"")
    assert b"".join(chunks) == body
    assert len(chunks) >= 3 and max(len(c) for c in chunks) <= 4096  # never held whole
    streamed = len(chunks)
    missing = client.download("/v2/images/i2/file", chunks.append)
    assert (missing.status, missing.data, len(chunks)) == (404, b"missing", streamed)
    assert server.requests == [b"GET /image/v2/images/i1/file HTTP/1.1",
                               b"GET /image/v2/images/i2/file HTTP/1.1"]
    assert server.connections == 1  # the connection was kept for the next request


# -- reading an answer's head and body as HTTP/1.1 frames them ------------------------
def test_a_chunked_answer_is_read_whole_and_its_connection_kept(
        stand_in: Callable[[Behaviour], StandIn]) -> None:
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5;name=value\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n")
    server = stand_in(lambda n, _req: chunked if n == 1 else _answer(b"next"))
    client = transport.Server(server.url, timeout=5)
    assert client.request("GET", "/a").data == b"hello, world"
    assert client.request("GET", "/b").data == b"next"  # framing read to its end
    assert server.connections == 1


def test_interim_and_empty_answers_leave_the_connection_ready(
        stand_in: Callable[[Behaviour], StandIn]) -> None:
    answers = {1: b"HTTP/1.1 100 Continue\r\n\r\n" + _answer(b"after 100"),
               2: b"HTTP/1.1 204 No Content\r\n\r\n",
               3: b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n"}
    server = stand_in(lambda n, _req: answers.get(n) or _answer(b"last"))
    client = transport.Server(server.url, timeout=5)
    assert client.request("GET", "/1").data == b"after 100"
    assert (client.request("DELETE", "/2").status, client.request("GET", "/3").status) \
        == (204, 304)
    assert client.request("GET", "/4").data == b"last"
    assert server.connections == 1


def test_an_http_1_0_answer_and_one_without_length_end_their_connection(
        stand_in: Callable[[Behaviour], StandIn]) -> None:
    answers = {1: b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}",
               2: b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end"}
    server = stand_in(lambda n, _req: answers.get(n) or _answer(b"{}"))
    client = transport.Server(server.url, timeout=5)
    assert client.request("GET", "/1").data == b"{}"
    assert client.request("GET", "/2").data == b"to the end"
    assert client.request("GET", "/3").data == b"{}"
    assert server.connections == 3


def test_an_answer_cut_short_or_not_http_is_an_error(
        stand_in: Callable[[Behaviour], StandIn]) -> None:
    answers = {1: b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nabc",
               2: b"SSH-2.0-OpenSSH_9.2\r\nConnection: close\r\n\r\n",
               3: (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                   b"Connection: close\r\n\r\nff\r\nshort")}
    server = stand_in(lambda n, _req: answers[n])
    client = transport.Server(server.url, timeout=5)
    with pytest.raises(transport.TransportError, match="in the middle of its answer"):
        client.request("GET", "/1")
    with pytest.raises(transport.TransportError, match=r"did not answer in HTTP: 'SSH-2\.0"):
        client.request("GET", "/2")
    with pytest.raises(transport.TransportError, match="in the middle of its answer"):
        client.request("GET", "/3")


def test_a_request_is_written_as_http_client_wrote_it(
        stand_in: Callable[[Behaviour], StandIn]) -> None:
    seen: list[bytes] = []

    def record(_n: int, request: bytes) -> bytes:
        seen.append(request)
        return _answer(b"{}")

    server = stand_in(record)
    client = transport.Server(server.url, timeout=5)
    client.request("PUT", "/empty", headers={"X-Auth-Token": "t"})
    client.request("POST", "/full", body=b'{"a": 1}')
    client.request("GET", "/plain")
    port = server.url.rsplit(":", 1)[1]
    empty, full, plain = (request.split(b"\r\n\r\n", 1) for request in seen)
    assert empty[0].split(b"\r\n") == [
        b"PUT /empty HTTP/1.1", f"Host: 127.0.0.1:{port}".encode(),
        b"Accept-Encoding: identity", b"X-Auth-Token: t", b"Content-Length: 0"]
    assert b"Content-Length: 8" in full[0].split(b"\r\n") and full[1] == b'{"a": 1}'
    assert not any(line.startswith(b"Content-Length") for line in plain[0].split(b"\r\n"))


@pytest.mark.parametrize(("path", "headers"), [
    ("/a b", {}), ("/a\r\nX-Injected: 1", {}),
    ("/", {"X-Token": "t\r\nX-Injected: 1"}), ("/", {"X-Bad:Name": "v"})])
def test_what_would_forge_a_request_line_or_header_is_refused(
        stand_in: Callable[[Behaviour], StandIn], path: str, headers: dict[str, str]
        ) -> None:
    server = stand_in(lambda _n, _req: _answer(b"{}"))
    client = transport.Server(server.url, timeout=5)
    with pytest.raises(ValueError, match=r"control characters|not a header"):
        client.request("GET", path, headers=headers)
    assert server.requests == []
