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

import os
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: tests.*
from tests.wsgi_child import die_with_parent, serve


def main() -> None:
    die_with_parent()
    config_dir, tls = sys.argv[1], sys.argv[2:4]
    os.environ["OS_GLANCE_CONFIG_DIR"] = config_dir
    warnings.simplefilter("ignore")  # eventlet's deprecation, on stderr, is not news
    try:
        from glance.wsgi import api

        app = api.application
    except Exception as exc:
        sys.stderr.write(f"glance did not start: {type(exc).__name__}: {exc}\n")
        sys.exit(2)
    serve(app, (tls[0], tls[1]) if tls else None)


if __name__ == "__main__":
    main()
