"""WSGI entry points.

``create_app`` is the factory Moorage's own server workers call (``moorage placement
serve``, granian). Configuration comes from the environment so that it crosses into
worker processes (``moorage.conf.environment``).

``deployed_app`` builds the application a WSGI server of the operator's imports
(``moorage.wsgi.placement:application``): its configuration found as upstream's is,
checked before anything else.
"""

from __future__ import annotations

import logging
from wsgiref.types import WSGIApplication

from moorage.conf import check_all_options, unknown
from moorage.placement.app import make_app
from moorage.placement.service import PlacementService
from moorage.placement.storage import migration
from moorage.supervision import refused_unless_started, start_deployed, start_worker

__all__ = ["create_app", "deployed_app"]

LOG = logging.getLogger(__name__)


def create_app() -> WSGIApplication:
    conf = start_worker()
    service = PlacementService(conf)
    # Migrations ran once in the launching process; workers only load the index.
    service.prepare(migrate=False)
    return make_app(service)


def deployed_app() -> WSGIApplication:
    """The placement application for a WSGI server of the operator's. StartRefused
    (one line, logged too) when its configuration or its database cannot serve."""
    with refused_unless_started("placement"):
        conf = start_deployed(placement=True)
        service = PlacementService(conf)
        if not conf.placement_database.sync_on_startup:
            migration.MIGRATIONS.require_current(service.db, "placement database",
                                                 "moorage placement db sync")
        service.prepare()
        app = make_app(service)
        check_all_options(conf)  # and the options the middleware registered
        unknown.warn(conf, LOG)
    return app
