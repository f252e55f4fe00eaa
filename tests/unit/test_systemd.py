"""sd_notify over a real datagram socket: what reaches the manager, and that a service
without one (or whose manager went away) carries on."""

from __future__ import annotations

import os
import signal
import socket
import tempfile
import threading
from collections.abc import Iterator

import pytest

from moorage import systemd


@pytest.fixture
def manager(monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    with tempfile.TemporaryDirectory(prefix="sd-") as directory:
        path = os.path.join(directory, "notify")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.bind(path)
            sock.settimeout(5)
            monkeypatch.setenv(systemd.SOCKET_ENV, path)
            yield sock


def test_states_go_out_in_one_datagram(manager: socket.socket) -> None:
    assert systemd.notify(systemd.READY, "STATUS=serving on http://127.0.0.1:1")
    assert manager.recv(4096) == b"READY=1\nSTATUS=serving on http://127.0.0.1:1"


def test_an_abstract_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"moorage-unit-notify-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        monkeypatch.setenv(systemd.SOCKET_ENV, "@" + name)
        assert systemd.notify(systemd.STOPPING)
        assert sock.recv(4096) == b"STOPPING=1"


@pytest.mark.parametrize("address", [None, "", "vsock:2:1234", "/nonexistent/notify"])
def test_nothing_to_tell_is_not_an_error(monkeypatch: pytest.MonkeyPatch,
                                         address: str | None) -> None:
    if address is None:
        monkeypatch.delenv(systemd.SOCKET_ENV, raising=False)
    else:
        monkeypatch.setenv(systemd.SOCKET_ENV, address)
    assert systemd.notify(systemd.READY) is False


def test_a_stop_is_announced_once_then_handed_on(manager: socket.socket) -> None:
    """The wrapper put around granian's handler: STOPPING=1 first, then granian's own
    handler, every time (a second Ctrl-C still reaches it)."""
    seen: list[int] = []
    stopping = threading.Event()
    handle = systemd._announcing_stop(lambda signum, _frame: seen.append(signum), stopping,
                                      os.getpid())
    handle(signal.SIGTERM, None)
    handle(signal.SIGINT, None)
    assert seen == [signal.SIGTERM, signal.SIGINT]
    assert manager.recv(4096).splitlines()[0] == b"STOPPING=1"
    manager.settimeout(0.2)
    with pytest.raises(TimeoutError):
        manager.recv(4096)
    assert stopping.is_set()


def test_a_worker_hands_a_stop_on_without_announcing_it(manager: socket.socket) -> None:
    """A worker forked by granian runs the master's handler until it installs its own:
    it must not say STOPPING=1 for the master."""
    seen: list[int] = []
    stopping = threading.Event()
    handle = systemd._announcing_stop(lambda signum, _frame: seen.append(signum), stopping,
                                      os.getpid() + 1)
    handle(signal.SIGTERM, None)
    assert seen == [signal.SIGTERM] and not stopping.is_set()
    manager.settimeout(0.2)
    with pytest.raises(TimeoutError):
        manager.recv(4096)


def test_answers_only_an_http_server() -> None:
    with socket.socket() as idle:  # listens, never answers
        idle.bind(("127.0.0.1", 0))
        idle.listen()
        assert systemd.answers("127.0.0.1", idle.getsockname()[1], timeout=0.3) is False
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert systemd.answers("127.0.0.1", port, timeout=0.3) is False
