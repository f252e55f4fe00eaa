"""What the server scripts the tests run in other venvs share (``keystone_server.py``,
``glance_server.py``, ``compat/upstream_placement_server.py``): dying with the test run
that started them, and serving a WSGI application on a free port of 127.0.0.1 with the
standard library's threaded server, over TLS when given a certificate, announcing the
port on the first line of stdout. Standard library only: it is imported by those venvs'
pythons (each script puts the repository's root on ``sys.path``)."""

from __future__ import annotations

import ctypes
import signal
import ssl
import sys
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent ends


class QuietHandler(WSGIRequestHandler):
    """No access log on stderr (the launchers read stderr for start-up failures; the
    services log each request themselves)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class ThreadingServer(ThreadingMixIn, WSGIServer):
    """One thread per connection: services validate tokens while the test asks."""

    daemon_threads = True


def die_with_parent() -> None:
    """SIGKILL when the process that started this one ends, however it ends."""
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def serve(app: Any, tls: tuple[str, str] | None = None) -> None:
    """Serve ``app`` on a free port (over TLS with ``tls``: certificate and key files),
    printing the port first; until the process is ended."""
    server = make_server("127.0.0.1", 0, app, server_class=ThreadingServer,
                         handler_class=QuietHandler)
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_port, flush=True)
    server.serve_forever()
