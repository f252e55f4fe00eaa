"""Serve upstream Glance (the glance venv's, ``tools/glance.sh``) over HTTP or HTTPS.

Run by the glance venv's own python, never imported by the tests' interpreter
(``tests.glance_fixtures`` runs it):

``python glance_server.py CONFIG_DIR [CERT_FILE KEY_FILE]``
    builds Glance's WSGI application (``glance.wsgi.api``, which reads
    ``CONFIG_DIR/glance-api.conf``: its database synced by glance-manage), listens on
    a free port of 127.0.0.1, over TLS with CERT_FILE and KEY_FILE when given, and
    prints that port on its first line of stdout. Until then, a failure is one line on
    stderr and exit status 2. Linux ends it when its parent (the test run) ends.
"""

from __future__ import annotations

import ctypes
import os
import signal
import ssl
import sys
import warnings
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent ends


class QuietHandler(WSGIRequestHandler):
    """No access log on stderr (glance logs each request itself)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def main() -> None:
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    config_dir, tls = sys.argv[1], sys.argv[2:4]
    os.environ["OS_GLANCE_CONFIG_DIR"] = config_dir
    warnings.simplefilter("ignore")  # eventlet's deprecation, on stderr, is not news
    try:
        from glance.wsgi import api

        server = make_server("127.0.0.1", 0, api.application,
                             server_class=ThreadingServer, handler_class=QuietHandler)
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls[0], tls[1])
            server.socket = context.wrap_socket(server.socket, server_side=True)
    except Exception as exc:
        sys.stderr.write(f"glance did not start: {type(exc).__name__}: {exc}\n")
        sys.exit(2)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
