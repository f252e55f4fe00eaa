"""The compute agent's WSGI entry point for a server worker: ``moorage compute run``
serves its agent under granian, the production server of every other service
(listen backlog, timeouts, respawn of a dead worker, graceful stop).

``create_app`` starts the agent of the configuration the launching process put in
the environment (its placement sync, and its registration once the worker
answers) and returns the application of its HTTP API. The agent lives in the
worker, one per host: its driver's guests and hypervisor connection are that
process's, so there is exactly one worker; a worker stopping normally stops the
agent, and the master's death ends it (``supervision``).
"""

from __future__ import annotations

import atexit
import os
from wsgiref.types import WSGIApplication

from moorage.compute.launcher import start_agent
from moorage.compute.service import make_app
from moorage.internal_access import InternalAccess
from moorage.supervision import start_worker
from moorage.systemd import answers

# "1" when `moorage compute run --disabled` asked to start disabled; otherwise the
# compute API's record decides at the first heartbeat.
DISABLED_ENV = "MOORAGE_AGENT_DISABLED"


def create_app() -> WSGIApplication:
    conf = start_worker()
    opts = conf.compute_agent
    host = f"[{opts.listen}]" if ":" in opts.listen else opts.listen
    running = start_agent(conf, disabled=True if os.environ.get(DISABLED_ENV) == "1" else None,
                          serve_at=f"http://{host}:{opts.port}",
                          answering=lambda: answers(opts.listen, int(opts.port)))
    atexit.register(running.stop)
    return make_app(running.agent, InternalAccess.of(conf))
