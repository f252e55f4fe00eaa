"""The compute API's WSGI entry point for server workers: ``create_app`` builds one
worker's state, with its conductor (unless ``[conductor] run_in_api`` is off), from the
configuration the launching process put in the environment
(``moorage.conf.environment``). ``moorage api serve`` runs it under granian; other WSGI
servers can use ``moorage.api.wsgi:create_app`` the same way.

A worker stopping normally (SIGTERM to the server) stops its conductor: operations
under way finish, those not started are given back at once. A worker that dies
leaves its operations to be taken over when their leases run out.
"""

from __future__ import annotations

import atexit
import logging
from wsgiref.types import WSGIApplication

from moorage import heap
from moorage.api.app import build_app
from moorage.api.service import attach_workers, make_state
from moorage.supervision import start_worker

LOG = logging.getLogger(__name__)


def create_app() -> WSGIApplication:
    conf = start_worker()
    # Migrations ran once in the launching process.
    state = make_state(conf, migrate=False)
    conductor = attach_workers(state)
    if conductor is not None:
        atexit.register(conductor.stop)
    app = build_app(state)
    heap.settle()
    return app
