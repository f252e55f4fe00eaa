"""The fleet's WSGI entry point for a server worker (``moorage compute fleet`` runs it
under granian, the production server the other services use): ``create_app`` builds
the fleet of ``MOORAGE_FLEET_FILE`` with the configuration the launching process put
in the environment, registers its hosts, and returns the application of their
agent APIs. The fleet lives in the worker; a worker stopping normally stops it.

It sits in ``run``, with the fleet file it reads, above ``moorage.compute.fleet``
which it serves: the compute package knows nothing of description files."""

from __future__ import annotations

import atexit
import logging
import os
import sys
from pathlib import Path
from wsgiref.types import WSGIApplication

from moorage import heap
from moorage.compute.fleet import Fleet
from moorage.conf.environment import exported
from moorage.internal_access import InternalAccess
from moorage.placement.client import PlacementClient
from moorage.run.description import load_fleet
from moorage.run.fleet_hosts import fleet_hosts
from moorage.supervision import start_worker

LOG = logging.getLogger(__name__)

FLEET_FILE_ENV = "MOORAGE_FLEET_FILE"
SYNC_THREADS_ENV = "MOORAGE_FLEET_SYNC_THREADS"


def create_app() -> WSGIApplication:
    conf = start_worker()
    files, overrides = exported()  # the hosts' own configurations start from them
    description = load_fleet(Path(os.environ[FLEET_FILE_ENV]))
    hosts = fleet_hosts(description.name, description.host_groups, config_files=files,
                        overrides=overrides)
    opts = conf.compute_agent
    url = opts.advertise_url or f"http://{opts.listen}:{opts.port}"
    placement = PlacementClient.from_conf(conf)
    fleet = Fleet(hosts, placement, api_url=opts.api_url or None,
                  access=InternalAccess.of(conf), advertise_url=url,
                  report_interval=float(conf.report_interval),
                  sync_interval=float(conf.update_resources_interval),
                  sync_threads=int(os.environ.get(SYNC_THREADS_ENV, "8")))
    step = max(1, len(hosts) // 20)

    def progress(done: int, total: int) -> None:
        if done % step == 0 or done == total:
            sys.stderr.write(f"\rregistering with placement: {done:,}/{total:,} hosts")
            sys.stderr.flush()

    fleet.start(progress, serve=False)
    atexit.register(fleet.stop)
    # Its simulated hosts live until the end: out of the collector's full walks.
    heap.settle()
    registration = fleet.registration
    print(f"\nfleet {description.name}: {len(hosts):,} hosts registered with placement at "
          f"{placement.url} in {registration.seconds:.1f}s ({registration.rate:,.0f}/s"
          f"{f', {len(registration.failed)} failed' if registration.failed else ''}); "
          f"serving {url}, reporting to {opts.api_url or 'no compute API'} every "
          f"{conf.report_interval}s", flush=True)
    return fleet.app

