"""Connections as clients and crowds leave them: every service keeps serving with 300
idle connections open to it (granian's placement, compute API, fleet and compute
agent), and placement and the compute API say
``Connection: close`` when they answer without reading the body they were sent, so a
client does not send its next request on a connection the server is about to drop.

Real processes and sockets; the in-process agents of the embedded cloud and the
tests (a thread pool of their process) are checked as well.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from moorage.api.launcher import AgentProcess, ComputeApiProcess, FleetProcess
from moorage.compute.launcher import agent_config, start_agent
from moorage.placement.launcher import PlacementProcess
from moorage.virt.fake import FakeDriver, FakeHost

IDLE = 300
ADMIN = b"X-Auth-Token: admin\r\n"


def _address(url: str) -> tuple[str, int]:
    host, _, port = url.removeprefix("http://").partition(":")
    return host, int(port.split("/", 1)[0])


def _exchange(sock: socket.socket, request: bytes, timeout: float = 10.0) -> str:
    """Send ``request`` and read its whole answer; its status line and headers."""
    sock.settimeout(timeout)
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    text = head.decode("latin-1")
    length = next((int(line.split(":", 1)[1]) for line in text.split("\r\n")[1:]
                   if line.lower().startswith("content-length:")), 0)
    while len(body) < length:  # the whole answer, so the next one starts clean
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return text


def _get(address: tuple[str, int], path: str) -> str:
    with socket.create_connection(address, timeout=10) as sock:
        return _exchange(sock, f"GET {path} HTTP/1.1\r\nHost: x\r\n".encode() + ADMIN
                         + b"Connection: close\r\n\r\n")


@contextlib.contextmanager
def _idle_crowd(address: tuple[str, int]) -> Iterator[list[socket.socket]]:
    """IDLE connections: a third say nothing, a third sent half a request line, a third
    finished a request and keep the connection (kept-alive, waiting)."""
    crowd: list[socket.socket] = []
    try:
        for index in range(IDLE):
            sock = socket.create_connection(address, timeout=10)
            crowd.append(sock)
            if index % 3 == 1:
                sock.sendall(b"GET /resource_pro")
            elif index % 3 == 2:
                assert " 200 " in _exchange(
                    sock, b"GET / HTTP/1.1\r\nHost: x\r\n" + ADMIN + b"\r\n").split("\r\n")[0]
        yield crowd
    finally:
        for sock in crowd:
            sock.close()


def _serves_beside_a_crowd(url: str, path: str) -> None:
    address = _address(url)
    with _idle_crowd(address) as crowd:
        assert len(crowd) == IDLE
        for _ in range(5):
            started = time.monotonic()
            status = _get(address, path).split("\r\n")[0]
            assert " 200 " in status, status
            assert time.monotonic() - started < 5.0


@pytest.fixture
def placement_two_workers(tmp_path: Path) -> Iterator[PlacementProcess]:
    with PlacementProcess(tmp_path / "placement", workers=2) as server:  # started
        yield server


def test_placement_serves_beside_300_idle_connections(
        placement_two_workers: PlacementProcess) -> None:
    _serves_beside_a_crowd(placement_two_workers.url, "/resource_providers")


def test_compute_api_serves_beside_300_idle_connections(
        tmp_path: Path, placement_server: PlacementProcess) -> None:
    with ComputeApiProcess(tmp_path / "api", placement_url=placement_server.url) as api:
        _serves_beside_a_crowd(api.url, "/v2.1/flavors")


def test_fleet_serves_beside_300_idle_connections(
        tmp_path: Path, placement_server: PlacementProcess) -> None:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text("name: idle\nhost_groups:\n  - name: h\n    count: 2\n"
                          "    driver: fake\n")
    # No compute API: the hosts only report to placement.
    with FleetProcess(tmp_path / "fleet", fleet_file, placement_url=placement_server.url,
                      api_url="") as fleet:
        _serves_beside_a_crowd(fleet.url, "/")


def test_a_single_agent_serves_beside_300_idle_connections(
        tmp_path: Path, placement_server: PlacementProcess) -> None:
    with AgentProcess(tmp_path / "agent", "idle1",
                      placement_url=placement_server.url) as agent:
        _serves_beside_a_crowd(agent.url, "/guests")


def test_the_threaded_server_of_in_process_agents_serves_beside_300_idle_connections(
        placement_server: PlacementProcess) -> None:
    """The embedded cloud's and the tests' agents, served by threads of one process."""
    conf = agent_config("idle2", "fake", placement_url=placement_server.url)
    running = start_agent(conf, FakeDriver(conf, FakeHost(nodes=("idle2",))), port=0)
    try:
        _serves_beside_a_crowd(running.url, "/guests")
    finally:
        running.stop()


# -- bodies a server does not read ------------------------------------------------------
@pytest.fixture(params=["placement", "compute-api"])
def granian_service(request: pytest.FixtureRequest, tmp_path: Path,
                    placement_server: PlacementProcess) -> Iterator[tuple[str, str]]:
    """A service and a route that refuses its body unread (405: wrong method)."""
    if request.param == "placement":
        yield placement_server.url, "/resource_classes"
        return
    with ComputeApiProcess(tmp_path / "api", placement_url=placement_server.url) as api:
        yield api.url, "/v2.1/flavors/detail"


def test_a_body_left_unread_closes_the_connection_and_says_so(
        granian_service: tuple[str, str]) -> None:
    url, refusing = granian_service
    body = b'{"x": "' + b"y" * 100_000 + b'"}'
    with socket.create_connection(_address(url), timeout=10) as sock:
        head = _exchange(sock, f"PATCH {refusing} HTTP/1.1\r\nHost: x\r\n".encode() + ADMIN
                         + b"Content-Type: application/json\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        assert head.split("\r\n")[0].split(" ")[1] == "405", head
        assert "\r\nconnection: close" in head.lower(), head
    # A request whose body is read keeps its connection for the next one.
    with socket.create_connection(_address(url), timeout=10) as sock:
        for _ in range(2):
            head = _exchange(sock, b"GET / HTTP/1.1\r\nHost: x\r\n" + ADMIN + b"\r\n")
            assert " 200 " in head.split("\r\n")[0], head
            assert "connection: close" not in head.lower(), head
