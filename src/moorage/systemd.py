"""Telling systemd how a service is doing (``Type=notify`` units, ``units``).

systemd starts a ``Type=notify`` service with ``$NOTIFY_SOCKET`` set and counts it
started only when it says ``READY=1``, so units that need it (the compute API needs
placement answering) start after it really answers, not after its process exists.
``STOPPING=1`` says a stop has begun (in-flight requests draining); ``STATUS=`` is the
line ``systemctl status`` shows. The protocol is one datagram of ``KEY=VALUE`` lines on
a Unix socket (sd_notify(3)); stdlib only, no libsystemd.

Who may send: systemd's default ``NotifyAccess=main`` takes messages from the unit's
main process only. Under granian that is the master, whose workers answer the
requests: ``announce_granian`` makes the master probe its own port and notify once a
worker answers, and notify ``STOPPING=1`` when it is told to stop.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from types import FrameType
from typing import Protocol

from moorage import transport

LOG = logging.getLogger(__name__)

SOCKET_ENV = "NOTIFY_SOCKET"
READY = "READY=1"
STOPPING = "STOPPING=1"

# How often the master asks its port whether a worker answers yet.
PROBE_INTERVAL = 0.1


def notify(*states: str) -> bool:
    """Send ``states`` (``READY=1``, ``STATUS=...``) to the service manager.

    False, doing nothing, when no manager listens (``$NOTIFY_SOCKET`` unset: run by
    hand, in a container, in the tests) or when the message cannot be delivered:
    a service never fails because its manager went away.
    """
    address = os.environ.get(SOCKET_ENV, "")
    if address.startswith("@"):
        address = "\0" + address[1:]  # the abstract namespace
    elif not address.startswith("/"):
        if address:  # vsock: and other transports are not ours to speak
            LOG.debug("%s=%s: not a Unix socket, not notifying", SOCKET_ENV, address)
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall("\n".join(states).encode())
    except OSError as exc:
        LOG.warning("cannot notify the service manager at %s (%s): %s",
                    os.environ.get(SOCKET_ENV), ", ".join(states), exc)
        return False
    return True


def serving_status(url: str) -> str:
    return f"STATUS=serving on {url}"


def _probe_host(host: str) -> str:
    """Where to ask a server listening on ``host``: a wildcard means this machine."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


def answers(host: str, port: int, timeout: float = 2.0) -> bool:
    """Whether an HTTP server on ``host:port`` answers ``GET /``, with any status but
    a 5xx (an agent's API answers 401 without its token; it does answer)."""
    probed = _probe_host(host)
    server = transport.Server(f"http://{f'[{probed}]' if ':' in probed else probed}:{port}",
                              timeout=timeout, maxsize=0)
    try:
        return server.request("GET", "/").status < 500
    except transport.TransportError:
        return False


def once(ready: Callable[[], bool], then: Callable[[], object], stop: threading.Event,
         name: str) -> threading.Thread:
    """A daemon thread that asks ``ready()`` every ``PROBE_INTERVAL`` until it says yes,
    then calls ``then()``; it gives up when ``stop`` is set first."""

    def wait_then() -> None:
        while not stop.is_set():
            if ready():
                if not stop.is_set():
                    then()
                return
            stop.wait(PROBE_INTERVAL)

    thread = threading.Thread(target=wait_then, name=name, daemon=True)
    thread.start()
    return thread


def notify_when_answering(host: str, port: int, status: str,
                          stop: threading.Event) -> threading.Thread:
    """A daemon thread that asks ``GET /`` of ``host:port`` until it answers, then
    sends ``READY=1`` and ``status``; it gives up when ``stop`` is set first."""
    return once(lambda: answers(host, port),
                lambda: notify(READY, status, f"MAINPID={os.getpid()}"), stop, "systemd-ready")


class _Granian(Protocol):
    workers: int

    def on_startup(self, hook: Callable[[], object]) -> Callable[[], object]: ...


SignalHandler = Callable[[int, FrameType | None], object] | int | None


def announce_granian(server: _Granian, host: str, port: int, url: str) -> None:
    """Tell systemd when the granian ``server`` (about to ``serve()`` in this
    process, its master) answers on ``host:port``, and when it starts stopping.

    granian installs its own SIGTERM/SIGINT handlers as it starts, before its startup
    hooks run; the hook wraps them so that ``STOPPING=1`` goes out first, then
    granian stops: it closes the listening sockets and lets each worker finish the
    requests it holds (``[DEFAULT] graceful_shutdown_timeout``).

    The probe thread starts only once the master has forked its last worker: a
    thread running in the master while it forks (in the middle of an import, say, as
    a first getaddrinfo imports the idna codec) leaves the worker a copy of a lock
    nobody will release, and the worker hangs on its first import of that module.
    """
    if not os.environ.get(SOCKET_ENV):
        return  # no manager to tell: no probe requests either
    stopping = threading.Event()
    master = os.getpid()
    forked = [0]

    def after_fork_in_master() -> None:
        forked[0] += 1
        if os.getpid() == master and forked[0] == max(1, int(server.workers)):
            notify_when_answering(host, port, serving_status(url), stopping)

    def started() -> None:
        os.register_at_fork(after_in_parent=after_fork_in_master)
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, _announcing_stop(signal.getsignal(signum), stopping,
                                                   master))

    server.on_startup(started)


def _announcing_stop(handler: SignalHandler, stopping: threading.Event, master: int
                     ) -> Callable[[int, FrameType | None], object]:
    """``handler`` after ``STOPPING=1``, once, from the master only (a worker inherits
    the handler until granian installs its own). A flag, not the event, says whether
    it was sent: a second signal arriving while the first handler is inside the
    event's lock would wait for that lock forever."""
    announced = [False]

    def handle(signum: int, frame: FrameType | None) -> object:
        if os.getpid() == master and not announced[0]:
            announced[0] = True
            stopping.set()
            notify(STOPPING, "STATUS=stopping: finishing the requests in flight")
        if callable(handler):
            return handler(signum, frame)
        if handler == signal.SIG_DFL:  # nobody took the signal: die of it, as before
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        return None

    return handle


def stop_on_signal(what: str) -> threading.Event:
    """For the services run in one process (an agent, a conductor): an event set by
    SIGTERM or SIGINT, which also tell systemd the stop has begun."""
    stopping = threading.Event()
    seen = [False]  # not the event: see _announcing_stop

    def handle(signum: int, _frame: FrameType | None) -> None:
        if seen[0]:
            return
        seen[0] = True
        LOG.info("signal %d: stopping %s", signum, what)
        notify(STOPPING, f"STATUS=stopping {what}")
        stopping.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
    return stopping


# -- the unit files -------------------------------------------------------------------------

# The units ship in the package (systemd_units/), naming these two paths, which
# ``units`` replaces with the install's own.
UNIT_PROGRAM = "/usr/local/bin/moorage"
UNIT_CONFIG_FILE = "/etc/moorage/moorage.conf"


def installed_command() -> str:
    """How this install runs ``moorage``: the script beside its interpreter (a virtual
    environment's ``bin/``, ``/usr/local/bin``), else the interpreter with ``-m
    moorage``."""
    script = Path(sys.executable).with_name("moorage")
    if script.is_file() and os.access(script, os.X_OK):
        return str(script)
    return f"{sys.executable} -m moorage"


def units(command: str, config_files: Sequence[str] = (UNIT_CONFIG_FILE,)) -> dict[str, str]:
    """The unit of each service (file name -> text), starting ``command`` (this
    install's, ``installed_command``) with ``config_files``."""
    flags = " ".join(f"--config-file {path}" for path in config_files)
    shipped = resources.files("moorage") / "systemd_units"
    return {unit.name: unit.read_text().replace(
                f"ExecStart={UNIT_PROGRAM} ", f"ExecStart={command} ").replace(
                f"--config-file {UNIT_CONFIG_FILE}", flags)
            for unit in sorted(shipped.iterdir(), key=lambda found: found.name)
            if unit.name.endswith(".service")}
