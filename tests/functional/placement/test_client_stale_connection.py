"""PlacementClient and a connection the server closes without answering (a kept-alive
connection closed just as a request went out on it)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from moorage.placement.client import PlacementClient, PlacementError

ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
          b"\r\n{}")


@pytest.fixture
def hangs_up_once() -> Iterator[tuple[str, list[bytes]]]:
    """A stand-in server: the first connection is closed after the request is read,
    with no response; later ones are answered. Records each request line."""
    listener = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []

    def serve() -> None:
        for number in range(2):
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data = conn.recv(65536)
                seen.append(data.split(b"\r\n", 1)[0])
                if number > 0:
                    conn.sendall(ANSWER)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", seen
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() still waiting
    listener.close()
    thread.join(timeout=5)


def test_an_idempotent_request_is_sent_again(hangs_up_once: tuple[str, list[bytes]]) -> None:
    url, seen = hangs_up_once
    assert PlacementClient(url, "admin").request("GET", "/traits") == {}
    assert seen == [b"GET /traits HTTP/1.1", b"GET /traits HTTP/1.1"]


def test_a_post_is_not_sent_twice(hangs_up_once: tuple[str, list[bytes]]) -> None:
    url, seen = hangs_up_once
    with pytest.raises(PlacementError, match="failed"):
        PlacementClient(url, "admin").request("POST", "/allocations", json={})
    assert seen == [b"POST /allocations HTTP/1.1"]
