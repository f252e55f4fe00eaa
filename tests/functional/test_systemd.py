"""The services as systemd runs them (``Type=notify``, ``KillMode=mixed``): real
processes, a notification socket bound by the test as systemd binds its own, SIGTERM
to the main process only.

- ``READY=1`` comes from the main process (``NotifyAccess=main``) once the service
  answers, and ``STOPPING=1`` once it is told to stop;
- a request in flight at SIGTERM gets its whole answer, new connections are refused
  meanwhile, the process exits 0 and leaves the port free.

The request kept in flight is a write waiting for its turn on placement's SQLite
database: the test holds the ``flock`` beside the database that placement's writers
take turns on (``db/group_commit.py``), as a long write of another process
would. The compute agent's request is a ``PUT /service`` whose placement write waits
so.
"""

from __future__ import annotations

import array
import configparser
import contextlib
import fcntl
import json
import os
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import requests

from moorage.api.launcher import AgentProcess, ComputeApiProcess, ConductorProcess, FleetProcess
from moorage.cli.main import MoorageApp
from moorage.conf import load_config
from moorage.placement.launcher import PlacementProcess, ServerProcess

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}


class NotifySocket:
    """The service manager's end of sd_notify: a datagram socket that learns who sent
    each message (SO_PASSCRED), as systemd checks ``NotifyAccess=main``."""

    def __init__(self, address: str) -> None:
        self.address = address
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self._sock.bind("\0" + address[1:] if address.startswith("@") else address)
        self.received: list[tuple[int, list[str]]] = []

    def wait_for(self, state: str, timeout: float, process: ServerProcess | None = None
                 ) -> tuple[int, list[str]]:
        """The first message (sender's pid, lines) holding ``state``."""
        deadline = time.monotonic() + timeout
        while True:
            for pid, lines in self.received:
                if state in lines:
                    return pid, lines
            left = deadline - time.monotonic()
            if left <= 0 or (process is not None and not process.running()):
                raise AssertionError(f"no {state} in {timeout}s: {self.received}\n"
                                     f"{process.output() if process else ''}")
            self._sock.settimeout(min(left, 0.5))
            with contextlib.suppress(TimeoutError):
                self.received.append(self._receive())

    def _receive(self) -> tuple[int, list[str]]:
        size = struct.calcsize("3i")
        data, ancillary, _flags, _addr = self._sock.recvmsg(4096, socket.CMSG_SPACE(size))
        pid = -1
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = array.array("i", payload[:size])[0]
        return pid, data.decode().splitlines()

    def close(self) -> None:
        self._sock.close()


@pytest.fixture
def path_socket() -> Iterator[NotifySocket]:
    # A short directory: a Unix socket's path must fit in 108 bytes.
    with tempfile.TemporaryDirectory(prefix="sd-") as directory:
        notify = NotifySocket(os.path.join(directory, "notify"))
        yield notify
        notify.close()


@pytest.fixture
def abstract_socket() -> Iterator[NotifySocket]:
    notify = NotifySocket(f"@moorage-test-notify-{os.getpid()}-{time.monotonic_ns()}")
    yield notify
    notify.close()


@contextlib.contextmanager
def writes_waiting(database: Path) -> Iterator[None]:
    """Placement's writes to ``database`` wait while the block runs (its writers'
    turn, a flock beside the file, is held here)."""
    with open(f"{database}.writer-lock", "a+b") as turn:
        fcntl.flock(turn.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(turn.fileno(), fcntl.LOCK_UN)


def _in_background(call: object) -> tuple[threading.Thread, dict[str, object]]:
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["response"] = call()  # type: ignore[operator]
        except Exception as exc:  # the test asserts on it
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _refuses_connections(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def _port_free(host: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
        return True


def _wait(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _ready_when_answering(notify: NotifySocket, server: ServerProcess) -> list[str]:
    """Wait for READY=1: sent by the main process, when the service answers."""
    pid, lines = notify.wait_for("READY=1", 60, server)
    # The answer is there the moment READY=1 is: a READY sent as the master started,
    # before any worker listens, would find the connection refused here.
    assert requests.get(server.url + "/", timeout=1).status_code < 500
    assert pid == server.pid, (pid, server.pid)
    return lines


def _stops_gracefully(notify: NotifySocket, server: ServerProcess,
                      in_flight: threading.Thread, outcome: dict[str, object],
                      release: contextlib.ExitStack) -> None:
    """SIGTERM to the main process with a request in flight: STOPPING=1, new
    connections refused, the request still waiting; then let it finish: it is answered
    and the process exits 0, the port free."""
    assert server.pid is not None
    main = psutil.Process(server.pid)
    time.sleep(1.0)  # the request has reached the server and waits
    assert in_flight.is_alive() and not outcome
    os.kill(server.pid, signal.SIGTERM)
    pid, _lines = notify.wait_for("STOPPING=1", 10, server)
    assert pid == server.pid
    _wait(lambda: _refuses_connections(server.host, server.port), 10,
          "new connections still accepted while stopping")
    assert in_flight.is_alive(), f"the request in flight ended at SIGTERM: {outcome}"
    release.close()
    in_flight.join(timeout=30)
    assert "error" not in outcome, outcome
    assert main.wait(timeout=30) == 0, server.output()
    _wait(lambda: _port_free(server.host, server.port), 10, "the port is still held")


def test_placement_with_two_workers_under_systemd(tmp_path: Path,
                                                  path_socket: NotifySocket) -> None:
    server = PlacementProcess(tmp_path / "p", workers=2)
    server.extra_env = {"NOTIFY_SOCKET": path_socket.address}
    server.launch()
    try:
        lines = _ready_when_answering(path_socket, server)
        assert f"STATUS=serving on {server.url}" in lines

        with contextlib.ExitStack() as release:
            release.enter_context(writes_waiting(tmp_path / "p" / "placement.sqlite"))
            in_flight, outcome = _in_background(lambda: requests.post(
                server.url + "/resource_providers", headers=HEADERS,
                json={"name": "drained"}, timeout=60))
            _stops_gracefully(path_socket, server, in_flight, outcome, release)
        response = outcome["response"]
        assert isinstance(response, requests.Response)
        assert response.status_code == 200, response.text
        assert response.json()["name"] == "drained"
    finally:
        server.kill()


AGENT_TOKEN = "sd-token"


def test_compute_agent_under_systemd(tmp_path: Path, placement_server: PlacementProcess,
                                     abstract_socket: NotifySocket) -> None:
    agent = AgentProcess(tmp_path / "agent", "sd-host", placement_url=placement_server.url,
                         config={"DEFAULT": {"service_token": AGENT_TOKEN}})
    agent.extra_env = {"NOTIFY_SOCKET": abstract_socket.address}
    agent.launch()
    try:
        lines = _ready_when_answering(abstract_socket, agent)
        assert f"STATUS=serving on {agent.url}" in lines
        # Its providers were in placement before it said so.
        providers = requests.get(placement_server.url + "/resource_providers?name=sd-host",
                                 headers=HEADERS, timeout=10).json()["resource_providers"]
        assert len(providers) == 1

        with contextlib.ExitStack() as release:
            # Disabling the service writes COMPUTE_STATUS_DISABLED to placement, which
            # waits for its turn: the agent's request is in flight until then.
            release.enter_context(writes_waiting(placement_server.workdir
                                                 / "placement.sqlite"))
            in_flight, outcome = _in_background(lambda: requests.put(
                agent.url + "/service", json={"disabled": True},
                headers={"X-Service-Token": AGENT_TOKEN}, timeout=60))
            _stops_gracefully(abstract_socket, agent, in_flight, outcome, release)
        response = outcome["response"]
        assert isinstance(response, requests.Response)
        assert response.status_code == 200, response.text
        assert json.loads(response.text) == {"service": {"disabled": True}}
    finally:
        agent.kill()



def _announced(service: ServerProcess, directory: str) -> NotifySocket:
    """Start ``service`` under a notification socket of its own; wait for READY=1
    from its main process."""
    notify = NotifySocket(os.path.join(directory, service.name))
    service.extra_env = {"NOTIFY_SOCKET": notify.address}
    service.launch()
    pid, _lines = notify.wait_for("READY=1", 60, service)
    assert pid == service.pid
    return notify


def _terminated(notify: NotifySocket, service: ServerProcess) -> None:
    assert service.pid is not None
    main = psutil.Process(service.pid)
    os.kill(service.pid, signal.SIGTERM)
    pid, _lines = notify.wait_for("STOPPING=1", 10, service)
    assert pid == service.pid
    assert main.wait(timeout=30) == 0, service.output()
    notify.close()


def test_compute_api_conductor_and_fleet_tell_systemd(
        tmp_path: Path, placement_server: PlacementProcess) -> None:
    """The other services: READY=1 from their main process once they serve (the
    compute API and the fleet answer then), STOPPING=1 at SIGTERM, exit 0."""
    api = ComputeApiProcess(tmp_path / "api", placement_url=placement_server.url)
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text("name: sd\nhost_groups:\n  - {name: f, count: 3, driver: fake}\n")
    conductor = ConductorProcess(tmp_path / "conductor", api.config_file)
    fleet = FleetProcess(tmp_path / "fleet", fleet_file, placement_url=placement_server.url,
                         api_url=api.url)
    with tempfile.TemporaryDirectory(prefix="sd-") as directory:
        try:
            api_notify = _announced(api, directory)
            assert requests.get(api.url + "/", timeout=1).status_code == 200
            _terminated(_announced(conductor, directory), conductor)
            fleet_notify = _announced(fleet, directory)
            assert requests.get(fleet.url + "/", timeout=1).status_code == 200
            _terminated(fleet_notify, fleet)
            _terminated(api_notify, api)
        finally:
            for service in (fleet, conductor, api):
                service.kill()


# -- the unit files ------------------------------------------------------------------------

# The units as the package ships them; `moorage config systemd` writes them for an
# install (its own moorage, the configuration files given).
UNITS = Path(__file__).resolve().parents[2] / "src" / "moorage" / "systemd_units"
SERVICES = {"moorage-placement.service": "placement serve",
            "moorage-api.service": "api serve",
            "moorage-conductor.service": "conductor serve",
            "moorage-compute.service": "compute run"}


def _unit(path: Path) -> configparser.ConfigParser:
    # strict=False: systemd allows a key more than once; no interpolation: % is
    # systemd's own specifier.
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(path)
    return unit


def test_one_unit_per_service() -> None:
    assert sorted(p.name for p in UNITS.glob("*.service")) == sorted(SERVICES)


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_unit_starts_a_real_command(name: str) -> None:
    """ExecStart names a moorage command that exists, with options it accepts."""
    service = _unit(UNITS / name)["Service"]
    program, *argv = shlex.split(service["ExecStart"])
    assert program == "/usr/local/bin/moorage"
    app = MoorageApp()
    factory, command, options = app.command_manager.find_command(argv)
    assert command == SERVICES[name]
    parsed = factory(app, None).get_parser(f"moorage {command}").parse_args(options)
    assert parsed.config_file == ["/etc/moorage/moorage.conf"]
    helped = subprocess.run([sys.executable, "-m", "moorage", *command.split(), "--help"],
                            capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0, helped.stderr
    for option in (o for o in options if o.startswith("--")):
        assert option in helped.stdout


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_unit_waits_for_readiness_and_drains(name: str) -> None:
    unit = _unit(UNITS / name)
    service = unit["Service"]
    assert unit["Unit"]["Description"]
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    # READY=1 comes from the main process: a granian master, the agent, the conductor.
    assert (service["Type"], service["NotifyAccess"]) == ("notify", "main")
    assert service["Restart"] == "on-failure"
    # SIGTERM to the main process alone, which stops its workers gracefully.
    assert service["KillMode"] == "mixed"
    # The stop outlasts the drain it waits for ([DEFAULT] graceful_shutdown_timeout).
    drain = load_config([]).graceful_shutdown_timeout
    assert int(service["TimeoutStopSec"]) > drain
    assert service["User"] == "moorage"
    assert (service["NoNewPrivileges"], service["ProtectSystem"], service["PrivateTmp"]) == (
        "yes", "strict", "yes")
    # The one place it writes under ProtectSystem=strict: /var/lib/moorage.
    assert service["StateDirectory"] == "moorage"


# The directives the units may use, with the values allowed where systemd takes a
# choice: what the test checks itself on a machine without systemd-analyze.
KNOWN_DIRECTIVES: dict[str, dict[str, frozenset[str] | None]] = {
    "Unit": {"Description": None, "After": None, "Wants": None,
             "StartLimitIntervalSec": None, "StartLimitBurst": None},
    "Service": {"Type": frozenset({"notify"}), "NotifyAccess": frozenset({"main"}),
                "ExecStart": None, "User": None, "Group": None, "SupplementaryGroups": None,
                "Restart": frozenset({"on-failure"}), "RestartSec": None,
                "KillMode": frozenset({"mixed"}), "TimeoutStartSec": None,
                "TimeoutStopSec": None, "StateDirectory": None, "StateDirectoryMode": None,
                "NoNewPrivileges": frozenset({"yes"}),
                "ProtectSystem": frozenset({"strict"}), "ProtectHome": frozenset({"yes"}),
                "PrivateTmp": frozenset({"yes"}), "PrivateDevices": frozenset({"yes"}),
                "ProtectKernelTunables": frozenset({"yes"}),
                "ProtectKernelModules": frozenset({"yes"}),
                "ProtectControlGroups": frozenset({"yes"}),
                "RestrictSUIDSGID": frozenset({"yes"}), "LockPersonality": frozenset({"yes"}),
                "RestrictAddressFamilies": None},
    "Install": {"WantedBy": None},
}


def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    """systemd's own check (unknown keys, bad values) where this machine has
    systemd-analyze. Where it has not, this test does not pass unchecked: it holds
    every directive to the list above (names systemd knows, values it takes), the part
    of `verify` the other tests do not cover."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        for unit in UNITS.glob("*.service"):
            parsed = _unit(unit)
            assert set(parsed.sections()) == set(KNOWN_DIRECTIVES), unit.name
            for section, directives in KNOWN_DIRECTIVES.items():
                for key, value in parsed[section].items():
                    assert key in directives, f"{unit.name}: [{section}] {key} is unknown"
                    allowed = directives[key]
                    assert allowed is None or value in allowed, (
                        f"{unit.name}: [{section}] {key}={value}")
        return
    # verify checks that ExecStart's program is executable: this install's moorage,
    # as `moorage config systemd` writes the units for it.
    written = subprocess.run([sys.executable, "-m", "moorage", "config", "systemd",
                              "--output-dir", str(tmp_path)],
                             capture_output=True, text=True, timeout=60)
    assert written.returncode == 0, written.stderr
    done = subprocess.run([analyze, "verify", *sorted(str(p) for p in tmp_path.iterdir())],
                          capture_output=True, text=True, timeout=120)
    # Unknown keys and unparsable values are only warnings: any output is a failure.
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def test_config_systemd_writes_the_units_for_this_install(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "moorage", "config", "systemd",
                           "--output-dir", str(tmp_path), "--config-file", "/srv/a.conf",
                           "--config-file", "/srv/b.conf"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(SERVICES)
    for name, command in SERVICES.items():
        written = _unit(tmp_path / name)
        shipped = _unit(UNITS / name)
        program, *argv = shlex.split(written["Service"]["ExecStart"])
        # This install's moorage, which runs: not the template's /usr/local/bin.
        assert Path(program).parent == Path(sys.executable).parent
        assert os.access(program, os.X_OK)
        assert argv == [*command.split(), "--config-file", "/srv/a.conf",
                        "--config-file", "/srv/b.conf"]
        helped = subprocess.run([program, *command.split(), "--help"], capture_output=True,
                                text=True, timeout=60)
        assert helped.returncode == 0, helped.stderr
        # Everything else is the shipped unit's.
        for section in shipped.sections():
            rest = {k: v for k, v in shipped[section].items() if k != "ExecStart"}
            assert {k: v for k, v in written[section].items() if k != "ExecStart"} == rest
    missing = subprocess.run([sys.executable, "-m", "moorage", "config", "systemd",
                              "--output-dir", str(tmp_path / "absent")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"--output-dir {tmp_path / 'absent'}: no such directory"
