"""Serve upstream Keystone (the keystone venv's, ``tools/keystone.sh``) over HTTP.

Run by the keystone venv's own python, never imported by the tests' interpreter:
``python keystone_server.py CONFIG_FILE``. It asks Linux to end it when its parent
(the test run) ends, builds keystone's WSGI application from ``CONFIG_FILE`` (its
database already synced and bootstrapped, its key repositories made:
``tests.keystone_fixtures`` does that), listens on a free port of 127.0.0.1 and prints
that port on its first line of stdout. Until then, a failure is one line on stderr and
exit status 2 (the fixture shows it).
"""

from __future__ import annotations

import ctypes
import signal
import sys
import warnings
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

# prctl(2): the signal a process gets when its parent ends.
PR_SET_PDEATHSIG = 1


class QuietHandler(WSGIRequestHandler):
    """No access log on stderr (keystone logs each request itself)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class ThreadingServer(ThreadingMixIn, WSGIServer):
    """One thread per connection: services validate tokens while the test asks."""

    daemon_threads = True


def die_with_parent() -> None:
    """SIGKILL when the process that started this one ends, however it ends."""
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def application(config_file: str) -> Any:
    warnings.simplefilter("ignore", DeprecationWarning)  # eventlet's, on import
    from keystone.server.flask import core
    from oslo_db.sqlalchemy import engines

    # oslo.db yields the CPU (time.sleep(0)) at each of the ~20 connection check-ins of
    # a request, for eventlet's green threads: this server has none, and on a busy
    # machine each yield costs a scheduler slice (0.15 s a request on two loaded cores).
    engines._thread_yield = lambda dbapi_connection, record: None

    sys.argv[1:] = []  # keystone's configuration reads the command line too
    return core.initialize_application(name="public", config_files=[config_file])


def main(argv: list[str]) -> int:
    die_with_parent()
    if len(argv) != 2:
        print("usage: keystone_server.py CONFIG_FILE", file=sys.stderr)
        return 2
    try:
        app = application(argv[1])
    except Exception as exc:  # any start-up failure: one line for the fixture
        print(f"keystone did not configure: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    server = make_server("127.0.0.1", 0, app, server_class=ThreadingServer,
                         handler_class=QuietHandler)
    print(server.server_port, flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
