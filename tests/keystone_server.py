"""Serve upstream Keystone (the keystone venv's, ``tools/keystone.sh``) over HTTP.

Run by the keystone venv's own python, never imported by the tests' interpreter
(``tests.keystone_fixtures`` runs it), in two ways; each asks Linux to end it when its
parent (the test run) ends:

``python keystone_server.py manage CONFIG_FILE COMMANDS_JSON``
    runs keystone-manage's commands (``[["db_sync"], ["bootstrap", ...], ...]``) one
    after the other in this one interpreter: keystone is imported once, not once a
    command (a third of the CPU time of four ``keystone-manage`` processes).
``python keystone_server.py serve CONFIG_FILE``
    builds keystone's WSGI application from ``CONFIG_FILE`` (its database synced and
    bootstrapped, its key repositories made), listens on a free port of 127.0.0.1 and
    prints that port on its first line of stdout. Until then, a failure is one line
    on stderr and exit status 2 (the fixture shows it).
"""

from __future__ import annotations

import json
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: tests.*
from tests.wsgi_child import die_with_parent, serve


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


def one_writer_at_a_time(app: Any) -> Any:
    """``app`` with its changing requests in turn. Keystone's SQLite refuses a second
    writer at once ("database is locked", a 500) where MySQL would queue it: Tempest's
    parallel workers delete their users and projects together."""
    lock = threading.Lock()

    def serialised(environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            return app(environ, start_response)
        with lock:
            # The whole body is produced under the lock: a WSGI app may write late.
            return list(app(environ, start_response))

    return serialised


def manage(config_file: str, commands: list[list[str]]) -> None:
    """keystone-manage's ``commands``, in turn, on ``config_file``."""
    warnings.simplefilter("ignore", DeprecationWarning)
    import keystone.conf
    from keystone.cmd import cli

    for command in commands:
        # keystone-manage's main parses the configuration each time: forget the last.
        keystone.conf.CONF.reset()
        keystone.conf.CONF.clear()
        cli.main(argv=["keystone-manage", "--config-file", config_file, *command])


USAGE = "usage: keystone_server.py manage CONFIG_FILE COMMANDS_JSON | serve CONFIG_FILE"


def main(argv: list[str]) -> int:
    die_with_parent()
    if len(argv) == 4 and argv[1] == "manage":
        manage(argv[2], json.loads(argv[3]))
        return 0
    if len(argv) != 3 or argv[1] != "serve":
        print(USAGE, file=sys.stderr)
        return 2
    try:
        app = application(argv[2])
    except Exception as exc:  # any start-up failure: one line for the fixture
        print(f"keystone did not configure: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    serve(one_writer_at_a_time(app))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
