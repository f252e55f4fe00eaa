"""WSGI entry points.

``create_app`` is the factory the server workers call. Configuration comes from
the environment so that it crosses into worker processes
(``moorage.conf.environment``). Other WSGI servers (uwsgi, gunicorn) can use
``moorage.placement.wsgi:create_app`` the same way.
"""

from __future__ import annotations

from wsgiref.types import WSGIApplication

from moorage.conf.environment import export_config
from moorage.placement.app import make_app
from moorage.placement.service import PlacementService
from moorage.supervision import start_worker

__all__ = ["create_app", "export_config"]


def create_app() -> WSGIApplication:
    conf = start_worker()
    service = PlacementService(conf)
    # Migrations ran once in the launching process; workers only load the index.
    service.prepare(migrate=False)
    return make_app(service)
