"""`moorage placement serve --workers 2` and `moorage api serve` with two workers as an
operator's process supervisor sees them: a restart right after a crash with clients
connected, a worker killed, the master killed.

Real processes, real sockets: the server's connections are left in the states a
crash leaves them in (TIME_WAIT, clients still holding kept-alive connections).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import requests

from moorage.api.launcher import AgentProcess, ComputeApiProcess
from moorage.placement.launcher import PlacementProcess, ServerProcess

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}


def _serves(url: str) -> bool:
    try:
        return requests.get(url + "/resource_providers", headers=HEADERS,
                            timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _clients(url: str, count: int) -> list[requests.Session]:
    """Sessions holding kept-alive connections to the server, each used once."""
    sessions = []
    for _ in range(count):
        session = requests.Session()
        assert session.get(url + "/resource_providers", headers=HEADERS,
                           timeout=10).status_code == 200
        sessions.append(session)
    return sessions


def _workers(server: ServerProcess) -> list[psutil.Process]:
    """The server's two workers, once both listen on its port (the server answering
    says only that one does: killing it before the other listens would leave none)."""
    assert server.pid is not None
    deadline = time.monotonic() + 30
    while True:
        children = psutil.Process(server.pid).children(recursive=True)
        if (len(children) >= 2 and all(_listens(w, server.port) for w in children)) \
                or time.monotonic() > deadline:
            return children
        time.sleep(0.1)


def _listens(process: psutil.Process, port: int) -> bool:
    try:
        return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port
                   for c in process.net_connections(kind="tcp"))
    except psutil.Error:
        return False


def _wait(predicate: object, timeout: float, what: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():  # type: ignore[operator]
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"{what} after {timeout}s")


@pytest.fixture(params=["placement", "compute-api"])
def server(request: pytest.FixtureRequest, tmp_path: Path,
           placement_server: PlacementProcess) -> Iterator[ServerProcess]:
    process: ServerProcess
    if request.param == "placement":
        process = PlacementProcess(tmp_path / "p", workers=2)
    else:
        process = ComputeApiProcess(tmp_path / "api", placement_url=placement_server.url,
                                    workers=2)
    process.start()
    yield process
    process.kill()


def test_restarts_at_once_after_a_crash_with_clients_connected(tmp_path: Path) -> None:
    server = PlacementProcess(tmp_path / "p", workers=2).start()
    sessions = _clients(server.url, 20)
    server.kill(signal.SIGKILL)
    # The crash leaves the server's side of those connections behind.
    again = PlacementProcess(tmp_path / "p", workers=2, port=server.port)
    started = time.monotonic()
    again.start(timeout=30)
    try:
        assert time.monotonic() - started < 15
        assert _serves(again.url)
        for session in sessions:  # the clients' dead connections are replaced
            assert session.get(again.url + "/", timeout=10).status_code == 200
    finally:
        again.kill()


def test_a_killed_worker_is_replaced(server: ServerProcess) -> None:
    workers = _workers(server)
    assert len(workers) == 2, workers
    workers[0].kill()
    workers[0].wait(timeout=10)
    _wait(lambda: len(_workers(server)) == 2 and workers[0] not in _workers(server),
          30, "no worker replaced the killed one")
    assert server.running()
    for _ in range(20):
        assert requests.get(server.url + "/", timeout=5).status_code == 200


def test_a_worker_killed_twice_within_a_second_is_replaced(server: ServerProcess) -> None:
    """granian's own rule stopped the whole service at a second death within 5.5 s of
    a respawn; Moorage's starts the worker again (with a backoff from the third)."""
    assert server.pid is not None
    master = psutil.Process(server.pid)
    first = _workers(server)
    assert len(first) == 2, first
    first[0].kill()
    known = {w.pid for w in first}
    _wait(lambda: {w.pid for w in master.children()} - known, 10, "no replacement started")
    [replacement] = [w for w in master.children() if w.pid not in known]
    assert time.time() - replacement.create_time() < 1.0
    replacement.kill()  # within a second of its start
    replacement.wait(timeout=10)
    gone = {first[0].pid, replacement.pid}
    _wait(lambda: len(_workers(server)) == 2 and not gone & {w.pid for w in _workers(server)},
          30, "the worker killed twice was not replaced")
    assert server.running(), server.output()[-3000:]
    assert "crash loop" not in server.output()
    for _ in range(20):
        assert requests.get(server.url + "/", timeout=5).status_code == 200


def test_a_worker_that_cannot_start_stops_the_service_saying_why(tmp_path: Path) -> None:
    """The configuration went bad on disk while the service ran; then a worker died.
    Its replacement cannot start: the master stops (status 1) and says why, rather
    than start it again and again."""
    server = PlacementProcess(tmp_path / "p", workers=2).start()
    try:
        workers = _workers(server)
        with server.config_file.open("a") as config:
            config.write("\n[DEFAULT]\ndebug = not-a-boolean\n")
        workers[0].kill()
        _wait(lambda: not server.running(), 30, "the master went on")
        assert server.returncode == 1, server.output()[-3000:]
        output = server.output()
        assert "it cannot start" in output, output[-3000:]
        assert "not-a-boolean" in output, output[-3000:]
    finally:
        server.kill()


def test_a_master_told_to_stop_while_its_workers_start_stops(tmp_path: Path) -> None:
    """SIGTERM as the workers are forked: they still hold the master's signal handlers,
    which stop nothing there, and granian's master waited for them forever (a run
    killed as it started its services left them serving)."""
    server = PlacementProcess(tmp_path / "p", workers=2)
    server.launch()
    try:
        _wait(lambda: "Spawning worker-2" in server.output(), 30, "no worker spawned")
        assert server.pid is not None
        os.kill(server.pid, signal.SIGTERM)  # the master alone, as a supervisor does
        _wait(lambda: not server.running(), 10, "the master still waits for its workers")
    finally:
        server.kill()


def test_the_masters_death_takes_the_workers_with_it(server: ServerProcess) -> None:
    workers = _workers(server)
    assert server.pid is not None
    os.kill(server.pid, signal.SIGKILL)
    _wait(lambda: not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE
                          for w in workers), 15, "workers outlived their master")

    def port_free() -> bool:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((server.host, server.port))
            except OSError:
                return False
            return True

    _wait(port_free, 10, "the port is still held after the master's death")


def test_a_compute_agents_worker_is_replaced_and_dies_with_its_master(
        tmp_path: Path, placement_server: PlacementProcess) -> None:
    """`moorage compute run`: one granian worker, in which the agent lives."""
    agent = AgentProcess(tmp_path / "agent", "pm1", placement_url=placement_server.url)
    agent.start()
    try:
        assert agent.pid is not None
        master = psutil.Process(agent.pid)
        first = master.children()
        assert len(first) == 1, first
        first[0].kill()
        first[0].wait(timeout=10)
        _wait(lambda: [w.pid for w in master.children()] not in ([], [first[0].pid]),
              30, "no worker replaced the killed one")
        _wait(lambda: _answers(agent.url + "/guests"), 30, "the new agent does not answer")
        replacement = master.children()
        os.kill(agent.pid, signal.SIGKILL)
        _wait(lambda: not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE
                              for w in replacement), 15, "the agent outlived its master")
    finally:
        agent.kill()


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


# A run (a test session, a benchmark, `moorage run`) that starts a placement service,
# says where it listens and under which pid, then waits to be killed.
_STARTER = """
import sys, time
from pathlib import Path
from moorage.placement.launcher import PlacementProcess
server = PlacementProcess(Path(sys.argv[1])).start()
print(server.pid, server.port, flush=True)
time.sleep(600)
"""


def test_a_service_ends_with_the_run_that_started_it_even_killed(tmp_path: Path) -> None:
    starter = psutil.Popen([sys.executable, "-c", _STARTER, str(tmp_path / "p")],
                           stdout=subprocess.PIPE, text=True)
    pid: int | None = None
    try:
        assert starter.stdout is not None
        pid, port = (int(word) for word in starter.stdout.readline().split())
        service = psutil.Process(pid)
        assert _serves(f"http://127.0.0.1:{port}")
        starter.kill()  # SIGKILL: the run cleans nothing up
        starter.wait(timeout=10)
        _wait(lambda: not service.is_running() or service.status() == psutil.STATUS_ZOMBIE,
              20, "the service outlived the run that started it")
    finally:
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            starter.kill()
        if pid is not None:
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()
