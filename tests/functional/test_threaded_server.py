"""The threaded WSGI server of the agents, a fleet and the in-process services
(moorage.web.ThreadedServer), over real sockets: HTTP/1.1 keep-alive, bodies left
unread, answers of unknown length, idle connections, stop."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from moorage.web import ThreadedServer

Start = Callable[..., Any]


def _app(environ: dict[str, Any], start_response: Start) -> list[bytes]:
    path = environ["PATH_INFO"]
    peer = f"{environ['REMOTE_ADDR']}:{environ.get('REMOTE_PORT', '')}"
    if path == "/echo":
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [body]
    if path == "/ignore-body":  # answers without reading what was sent
        start_response("202 Accepted", [("Content-Type", "text/plain")])
        return [b"ignored"]
    if path == "/pieces":  # two pieces: no Content-Length, so the server must close
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"one-", b"two"]
    if path == "/fail":
        raise RuntimeError("the application failed")
    if path == "/closing":  # as placement and the compute API answer an unread body
        start_response("405 Method Not Allowed", [("Content-Type", "text/plain"),
                                                  ("connection", "close")])
        return [b"refused"]
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [peer.encode()]


@pytest.fixture
def server() -> Iterator[ThreadedServer]:
    running = ThreadedServer(_app, "127.0.0.1", 0, name="test-http").start()
    try:
        yield running
    finally:
        running.stop()


def _connection(server: ThreadedServer) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)


def _local_port(conn: http.client.HTTPConnection) -> int:
    assert conn.sock is not None
    return int(conn.sock.getsockname()[1])


def test_requests_share_one_connection(server: ThreadedServer) -> None:
    conn = _connection(server)
    ports = set()
    for _ in range(5):
        conn.request("GET", "/")
        response = conn.getresponse()
        assert response.status == 200
        assert response.version == 11
        assert not response.will_close
        response.read()
        ports.add(_local_port(conn))
    assert len(ports) == 1, "each request opened a new connection"
    conn.close()


def test_body_is_read_exactly_and_the_next_request_follows(server: ThreadedServer) -> None:
    conn = _connection(server)
    conn.request("POST", "/echo", body=b"first body")
    assert conn.getresponse().read() == b"first body"
    # The handler does not read this body: the server must skip it, not take it
    # for the start of the next request.
    conn.request("POST", "/ignore-body", body=b"GET /evil HTTP/1.1\r\n\r\n")
    response = conn.getresponse()
    assert (response.status, response.read()) == (202, b"ignored")
    conn.request("POST", "/echo", body=b"second")
    response = conn.getresponse()
    assert (response.status, response.read()) == (200, b"second")


def test_an_answer_of_unknown_length_closes_the_connection(server: ThreadedServer) -> None:
    conn = _connection(server)
    conn.request("GET", "/pieces")
    response = conn.getresponse()
    assert response.getheader("Connection") == "close"
    assert response.read() == b"one-two"
    assert response.will_close


def test_a_failing_application_answers_500_and_closes(server: ThreadedServer) -> None:
    conn = _connection(server)
    conn.request("GET", "/fail")
    response = conn.getresponse()
    assert response.status == 500
    assert response.getheader("Connection") == "close"
    response.read()


def test_connection_close_from_the_application_closes_after_the_answer(
        server: ThreadedServer) -> None:
    conn = _connection(server)
    conn.request("POST", "/closing", body=b"x" * 100)
    response = conn.getresponse()
    assert response.status == 405  # not wsgiref's 500 for a hop-by-hop header
    assert response.getheader("Connection") == "close"
    assert response.read() == b"refused"
    assert response.will_close


def test_connection_close_from_the_client_is_honoured(server: ThreadedServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert received.startswith(b"HTTP/1.1 200")
    assert b"Connection: close" in received


def test_an_idle_connection_is_closed_after_the_timeout(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    from moorage import web
    monkeypatch.setattr(web._QuietHandler, "timeout", 0.3)
    running = ThreadedServer(_app, "127.0.0.1", 0).start()
    try:
        with socket.create_connection(("127.0.0.1", running.port), timeout=10) as sock:
            started = time.monotonic()
            assert sock.recv(1) == b"", "the server kept an idle connection open"
            assert time.monotonic() - started < 5
    finally:
        running.stop()


def test_stop_closes_kept_alive_connections() -> None:
    running = ThreadedServer(_app, "127.0.0.1", 0).start()
    conn = _connection(running)
    conn.request("GET", "/")
    conn.getresponse().read()
    assert conn.sock is not None
    sock = conn.sock
    running.stop()
    sock.settimeout(5)
    # The kept-alive connection is closed by the stop, not left to a thread that
    # would go on answering after the server stopped.
    assert sock.recv(1) == b""


def test_many_clients_at_once(server: ThreadedServer) -> None:
    errors: list[BaseException] = []

    def client() -> None:
        try:
            conn = _connection(server)
            for n in range(20):
                conn.request("POST", "/echo", body=f"{n}".encode())
                assert conn.getresponse().read() == f"{n}".encode()
            conn.close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=client) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
