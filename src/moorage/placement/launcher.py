"""Start a placement server as a child process and wait until it answers.

Used by ``moorage run`` and the sample cloud, by the tests (which talk to a real
server over HTTP) and by the benchmarks.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from moorage import transport
from moorage.supervision import child_environment

# Ports this process has handed out: two servers started side by side (the compat
# runner's threads) must not get the same.
_handed_out: set[int] = set()
_handed_out_lock = threading.Lock()

# Where free_port looks first: below the kernel's ephemeral range, which is where
# every bind to port 0 gets its port (the servers the tests start in their own
# process, the clients' connections). A port picked there could be given to such a
# bind in another process between the probe and the server binding it (the kernel
# offers it again as soon as the probe closes it); then the new server cannot listen
# (its start refuses the address) and, worse, whoever was told the port reaches the
# other process's server, whose GET / answers 200 too.
_PICKED_FROM = 20000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_random = random.Random()


def ephemeral_ports() -> tuple[int, int] | None:
    """The kernel's range for ports bound as 0 (Linux), or None where unknown."""
    try:
        low, high = (int(n) for n in _EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        return None
    return low, high


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now, never the same twice in this process,
    and (where the kernel's ephemeral range leaves room below it) one that no other
    process's bind to port 0 can be given before the server it is for binds it."""
    ephemeral = ephemeral_ports()
    if ephemeral is not None and ephemeral[0] - _PICKED_FROM >= 1000:
        for _attempt in range(200):
            port = _random.randrange(_PICKED_FROM, ephemeral[0])
            if _hand_out(port, host):
                return port
    for _attempt in range(1000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        with _handed_out_lock:
            if port not in _handed_out:
                _handed_out.add(port)
                return port
    raise RuntimeError(f"no free port on {host} that this process has not handed out "
                       f"already ({len(_handed_out)} handed out)")


def _hand_out(port: int, host: str) -> bool:
    """Record ``port`` as handed out if this process has not, and it binds now."""
    with _handed_out_lock:
        if port in _handed_out:
            return False
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                return False
        _handed_out.add(port)
        return True


def write_config(path: Path, sections: Mapping[str, Mapping[str, object]]) -> Path:
    """Write an INI file from {section: {option: value}}."""
    lines: list[str] = []
    for section, options in sections.items():
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {value}" for key, value in options.items())
        lines.append("")
    path.write_text("\n".join(lines))
    return path


class ServerStartError(RuntimeError):
    """The server exited or did not answer in time; carries its output."""


class ServerProcess:
    """An HTTP server run as a child process in its own session, ready when GET / is 200."""

    name = "server"

    def __init__(self, workdir: Path, host: str = "127.0.0.1", port: int | None = None) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.host = host
        self.port = port or free_port(host)
        self.url = f"http://{host}:{self.port}"
        self.log_path = self.workdir / f"{self.name}.log"
        self._process: subprocess.Popen[bytes] | None = None

    #: Run the server with ``moorage -q``: its log keeps warnings and errors only,
    #: not a line per request (``moorage run`` quiets its services so).
    quiet = False

    def command(self) -> list[str]:
        """The argv that runs the server."""
        raise NotImplementedError

    def moorage(self, *args: str) -> list[str]:
        """The argv of a ``moorage`` command, ``-q`` first when ``quiet``."""
        return [sys.executable, "-m", "moorage", *(["-q"] if self.quiet else []), *args]

    # Variables added to this process's environment (failpoints, for the tests).
    extra_env: dict[str, str] = {}
    headers: dict[str, str] = {}  # sent by the readiness probe (a service token...)

    def environment(self) -> dict[str, str]:
        # The server ends when this process does, even killed (supervision).
        return {**os.environ, "PYTHONUNBUFFERED": "1", **child_environment(),
                **self.extra_env}

    def prepare(self) -> None:
        """Anything to do before the server starts (a schema sync, ...)."""

    def start(self, timeout: float = 60.0) -> ServerProcess:
        return self.launch().wait_ready(timeout)

    def launch(self) -> ServerProcess:
        """Start the process and return at once (``wait_ready`` waits for it to serve):
        several servers start side by side."""
        self.prepare()
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
                env=self.environment(), start_new_session=True,
            )
        return self

    def wait_ready(self, timeout: float = 60.0) -> ServerProcess:
        """Wait until the launched process serves; ServerStartError with its output if
        it exits first or does not answer within ``timeout`` seconds."""
        assert self._process is not None, "launch the server first"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ServerStartError(
                    f"{self.name} exited with {self._process.returncode}:\n{self.output()}"
                )
            if self.ready():
                return self
            time.sleep(0.05)
        self.stop()
        raise ServerStartError(f"{self.name} did not answer in {timeout}s:\n{self.output()}")

    def ready(self) -> bool:
        """Whether the started process serves (by default: GET / with ``headers``
        answers 200)."""
        server = transport.Server(self.url, timeout=1.0, maxsize=0)
        try:
            return server.request("GET", "/", headers=self.headers).status == 200
        except transport.TransportError:
            return False

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the process's whole group (its workers too) and reap it."""
        if self._process is None or self._process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, sig)
        self._process.wait(timeout=30)

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the process's whole group, without waiting (SIGSTOP, SIGCONT)."""
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, sig)

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def returncode(self) -> int | None:
        """The exit status once it ended (negative: the signal that ended it)."""
        return self._process.poll() if self._process is not None else None

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self._process is None or self._process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, signal.SIGTERM)
        try:
            self._process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=5)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PlacementProcess(ServerProcess):
    """One ``moorage placement serve`` child process."""

    name = "placement"

    def __init__(
        self,
        workdir: Path,
        *,
        database_url: str | None = None,
        config: Mapping[str, Mapping[str, object]] | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        workers: int = 1,
    ) -> None:
        super().__init__(workdir, host, port)
        sections: dict[str, dict[str, object]] = {
            "api": {"auth_strategy": "noauth2"},
            "placement_database": {
                "connection": database_url or f"sqlite:///{self.workdir / 'placement.sqlite'}"
            },
            "placement_server": {"host": host, "port": self.port, "workers": workers},
        }
        for section, options in (config or {}).items():
            sections.setdefault(section, {}).update(options)
        self.config_file = write_config(self.workdir / "placement.conf", sections)

    def command(self) -> list[str]:
        return self.moorage("placement", "serve", "--config-file", str(self.config_file))

    def start(self, timeout: float = 60.0) -> PlacementProcess:
        super().start(timeout)
        return self


@contextlib.contextmanager
def running(workdir: Path, **kwargs: object) -> Iterator[PlacementProcess]:
    """A started server for the duration of a ``with`` block."""
    server = PlacementProcess(workdir, **kwargs)  # type: ignore[arg-type]
    with server:
        yield server
