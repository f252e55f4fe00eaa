"""Placement for a WSGI server of the operator's (uwsgi, gunicorn, mod_wsgi), as
upstream's ``placement.wsgi.api:application``::

    gunicorn --workers 4 --bind 10.0.0.5:8778 moorage.wsgi.placement:application

Importing the module builds the application, once per server process: the
configuration from ``OS_PLACEMENT_CONFIG_DIR`` (its ``placement.conf``) or
``OS_MOORAGE_CONFIG_DIR`` and ``OS_MOORAGE_CONFIG_FILES`` (``moorage.conf.environment``),
every option's value checked first (a bad one is one line, and the server's worker
does not start), the database at the newest schema (``moorage placement db sync``, or
``[placement_database] sync_on_startup``). ``moorage placement serve`` serves the same
application under granian.
"""

from __future__ import annotations

from wsgiref.types import WSGIApplication

from moorage.placement.wsgi import deployed_app

application: WSGIApplication = deployed_app()
