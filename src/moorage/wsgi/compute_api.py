"""The compute API for a WSGI server of the operator's (uwsgi, gunicorn, mod_wsgi), as
upstream's ``nova.wsgi.osapi_compute:application``::

    gunicorn --workers 4 --bind 10.0.0.5:8774 moorage.wsgi.compute_api:application

Importing the module builds the application, once per server process, with its
conductor when ``[conductor] run_in_api`` (each process its own, as under ``moorage api
serve``): the configuration from ``OS_MOORAGE_CONFIG_DIR`` and ``OS_MOORAGE_CONFIG_FILES``
(``moorage.conf.environment``), every option's value checked first (a bad one is one
line, and the server's worker does not start), the database at the newest schema
(``moorage api db sync``, or ``[database] sync_on_startup``).
"""

from __future__ import annotations

from wsgiref.types import WSGIApplication

from moorage.stack import deployed_api_app

application: WSGIApplication = deployed_api_app()
