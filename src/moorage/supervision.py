"""Worker processes that never outlive their server.

granian runs each ``--workers`` process as a child of the server's master. When a
worker dies, the master starts another (``respawn_failed_workers``); when the master
dies (SIGKILL, the OOM killer), nothing tells the workers, which would go on
serving on the port, unsupervised, and stop the next server from starting there.

``mark_master`` (in the master, before it starts its workers) names it in the
environment the workers inherit; ``die_with_master`` (in each worker, as its app is
made) asks Linux to send the worker SIGKILL the moment its parent exits
(``PR_SET_PDEATHSIG``). Only a process whose parent is the marked master does so:
a server run with no worker processes, or under another WSGI server, is left alone.

``serve`` runs a service under granian so; ``start_worker`` is the first step of each
worker's application factory (placement, the compute API, a fleet, an agent), and
``start_deployed`` that of an application another WSGI server imports
(``moorage.wsgi``).

The same holds one level up: a service a test run, a benchmark or ``moorage run``
starts (``placement.launcher.ServerProcess``) is named its parent in the environment
(``child_environment``), and ``die_with_parent``, the first thing the ``moorage``
command does, asks for SIGTERM when that parent ends: a run killed outright leaves no
service behind on its ports.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oslo_config import cfg

LOG = logging.getLogger(__name__)

MASTER_ENV = "MOORAGE_SERVER_MASTER_PID"
# The process that started a Moorage command, which the command ends with.
PARENT_ENV = "MOORAGE_PARENT_PID"
# prctl(2): the signal a process gets when its parent ends.
_PR_SET_PDEATHSIG = 1

# What the servers give granian: a dead worker is started again after this long.
RESPAWN_INTERVAL = 1.0
# A worker that dies this soon after it started died starting, or was killed again at
# once. granian's own rule stops the whole server at such a death; Moorage's: a worker
# that exited by itself this soon cannot start (a bad configuration) and stops the
# server, saying so; one killed (SIGKILL, the OOM killer) is started again, after a
# backoff that doubles from RESPAWN_INTERVAL to MAX_BACKOFF while it keeps dying.
QUICK_DEATH = 5.5
MAX_BACKOFF = 30.0
# How often a stopping master tells a worker that was starting to stop again.
RETELL_INTERVAL = 1.0


def mark_master() -> None:
    """This process is a server's master: its workers will die with it."""
    os.environ[MASTER_ENV] = str(os.getpid())


def die_with_master() -> bool:
    """In a worker of a marked master: SIGKILL when the master exits. True when set."""
    return _die_with(MASTER_ENV, signal.SIGKILL, "its master")


def child_environment() -> dict[str, str]:
    """What to add to the environment of a Moorage command started from this process
    so that it ends (``die_with_parent``) when this process does. Empty off the main
    thread: Linux signals the child when the *thread* that started it ends."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {PARENT_ENV: str(os.getpid())}


def die_with_parent() -> bool:
    """In a command started with ``child_environment``: SIGTERM when the process that
    started it ends, however it ends (SIGTERM: a server stops as it does when told
    to). True when set."""
    return _die_with(PARENT_ENV, signal.SIGTERM, "the process that started it")


def _die_with(variable: str, sig: int, whom: str) -> bool:
    """Ask for ``sig`` when the parent named by ``variable`` exits, if this process's
    parent is the one named."""
    named = os.environ.get(variable)
    if sys.platform != "linux" or not named or not named.isdigit():
        return False
    if os.getppid() != int(named):
        if _ended(int(named)):
            # Started by it (the environment says so), which ended before this process
            # could ask: a run killed while its services still imported their code
            # (seconds on a loaded machine) left them serving, orphaned. End now.
            os.kill(os.getpid(), sig)
            return True
        return False  # a grandchild: its own parent is another process
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        LOG.warning("process %d cannot ask to end with %s (%s): %s", os.getpid(), whom,
                    named, os.strerror(ctypes.get_errno()))
        return False
    if os.getppid() != int(named):
        # The parent ended between the check and the request: end now, as asked.
        os.kill(os.getpid(), sig)
    return True


def _ended(pid: int) -> bool:
    """Whether no process ``pid`` runs any more (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


class StartRefused(RuntimeError):
    """An application a WSGI server imported that cannot start, in one line: a bad
    option, a missing configuration file, a database not at the newest schema
    (``moorage.wsgi``). The server's worker fails to boot with it."""


def start_worker() -> cfg.ConfigOpts:
    """The first steps of every granian worker's application factory: die with the
    master, read the configuration the master exported, log as the master does."""
    # (Imported here: the ``moorage`` command imports this module first of all, for
    # ``die_with_parent``, and must not pay for the configuration and logging.)
    from moorage import logs
    from moorage.conf.environment import config_from_environment

    die_with_master()
    conf = config_from_environment()
    logs.setup_worker(conf)
    return conf


def start_deployed(*, placement: bool) -> cfg.ConfigOpts:
    """The first steps of an application a WSGI server of the operator's imported
    (``moorage.wsgi``), as ``start_worker``'s for Moorage's own: the configuration
    found as upstream's is (``placement``: the placement application's variables),
    every option's value read, logging set up, keystonemiddleware there if the
    strategy needs it. A ValueError or RuntimeError of one line otherwise."""
    from moorage import keystone, logs
    from moorage.conf import check_all_options
    from moorage.conf.environment import deployed_config

    conf = deployed_config(placement=placement)
    check_all_options(conf)
    logs.setup(conf)
    keystone.require(conf)
    return conf


@contextlib.contextmanager
def refused_unless_started(what: str) -> Iterator[None]:
    """Around the making of a deployed application: a ValueError or RuntimeError (a
    bad option, a missing file, a database not at the newest schema) is StartRefused,
    one line, ``what cannot start: why``, logged too."""
    try:
        yield
    except (ValueError, RuntimeError) as exc:
        LOG.error("%s cannot start: %s", what, exc)
        raise StartRefused(f"{what} cannot start: {exc}") from None


def respawn_backoff(quick_deaths: int) -> float:
    """How long to wait before starting a worker again after its ``quick_deaths``-th
    death in a row soon after it started: none after the first, then
    RESPAWN_INTERVAL doubling each time, at most MAX_BACKOFF."""
    if quick_deaths <= 1:
        return 0.0
    return float(min(RESPAWN_INTERVAL * 2 ** (quick_deaths - 2), MAX_BACKOFF))


@dataclass(frozen=True)
class WorkerDeath:
    """A worker found dead: which, how long it had lived, and how it ended (its exit
    status; negative: the signal that killed it; None: not known)."""

    index: int
    lived: float
    status: int | None

    @property
    def could_not_start(self) -> bool:
        """It exited by itself soon after it started: it cannot start, and another
        started the same way would not either."""
        return self.status is not None and self.status >= 0 and self.lived < QUICK_DEATH

    @property
    def quick(self) -> bool:
        return self.lived < QUICK_DEATH


def _supervising_server() -> type:
    """granian's server class, with Moorage's rule for the workers that die (above)
    in place of granian's crash-loop exit, and a stop every worker hears. It hooks
    two steps of granian's master: ``_respawn_workers``, the one it takes for every
    replacement (a dead worker, a reload, a lifetime's end; acting only on the workers
    found dead), and ``_stop_workers``. granian is held below 2.9 for them
    (pyproject.toml); tests/functional/test_process_model.py kills and stops workers
    to check them."""
    from granian import Granian

    class SupervisingServer(Granian):  # type: ignore[misc,valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            self.quick_deaths: dict[int, int] = {}

        def _respawn_workers(self, workers: list[int], spawn_target: object,
                             target_loader: object, delay: float = 0) -> None:
            now = time.monotonic()
            dead = [WorkerDeath(index, now - self.wrks[index].birth,
                                getattr(self.wrks[index].inner, "exitcode", None))
                    for index in workers if not self.wrks[index].is_alive()]
            wait = 0.0
            for death in dead:
                if death.could_not_start:
                    LOG.error("worker-%d exited with status %d %.1f s after it started: "
                              "it cannot start (the lines above say why); the server "
                              "stops", death.index + 1, death.status, death.lived)
                    self.interrupt_children.append(death.index)  # exit status 1
                    self.interrupt_signal = True
                    self.main_loop_interrupt.set()
                    return
                count = self.quick_deaths.get(death.index, 0) + 1 if death.quick else 0
                self.quick_deaths[death.index] = count
                wait = max(wait, respawn_backoff(count))
            if wait:
                LOG.warning("worker(s) %s died again %.1f s or less after starting: the "
                            "next starts in %.0f s", ", ".join(
                                str(d.index + 1) for d in dead if d.quick),
                            QUICK_DEATH, wait)
                deadline = time.monotonic() + wait
                while time.monotonic() < deadline:
                    if self.interrupt_signal:  # told to stop meanwhile
                        return
                    time.sleep(0.1)
            super()._respawn_workers(workers, spawn_target, target_loader, delay)
            self.respawned_wrks.clear()  # granian's crash-loop rule: replaced above

        def _stop_workers(self) -> None:
            """granian's stop, told again: a worker still starting when the master was
            told to stop (a run killed as it started its services) handles signals
            with the master's handlers it was forked with, which stop nothing there; the
            master then waited for it forever. Each worker that started less than
            QUICK_DEATH ago is told again every RETELL_INTERVAL until it ends."""
            now = time.monotonic()
            starting = [w for w in self.wrks if now - w.birth < QUICK_DEATH]
            stopped = threading.Event()

            def retell() -> None:
                while not stopped.wait(RETELL_INTERVAL):
                    for worker in starting:
                        if worker.is_alive():
                            worker.terminate()

            if starting:
                threading.Thread(target=retell, name="retell-stop", daemon=True).start()
            try:
                super()._stop_workers()
            finally:
                stopped.set()

    return SupervisingServer


def serve(target: str, *, host: str, port: int, workers: int, threads: int,
          stop_timeout: int) -> None:
    """Serve the WSGI application ``target`` makes ("module:factory") under granian, as
    every Moorage service is served, until the master is stopped: this process is
    the master (``mark_master``); a dead worker is replaced at once, with a backoff
    when it keeps dying (``_supervising_server``); granian's ``respawn_interval``
    (``RESPAWN_INTERVAL``) spaces the replacements of a reload; on SIGTERM each
    worker finishes the requests it holds,
    ``stop_timeout`` seconds at most (0: no limit); systemd, when it runs the
    service, hears when it answers and when it stops (``systemd.announce_granian``).
    Logging is the services' (``logs``), granian's own lines included."""
    from granian.constants import Interfaces

    from moorage import logs, systemd

    mark_master()
    server = _supervising_server()(target, address=host, port=port, interface=Interfaces.WSGI,
                     workers=workers, blocking_threads=threads, factory=True,
                     log_access=False, log_dictconfig=logs.GRANIAN_LOGGING,
                     respawn_failed_workers=True, respawn_interval=RESPAWN_INTERVAL,
                     workers_kill_timeout=stop_timeout or None)
    shown = f"[{host}]" if ":" in host else host
    systemd.announce_granian(server, host, port, f"http://{shown}:{port}")
    server.serve()
