"""The services as a WSGI server of the operator's imports them (uwsgi, gunicorn,
mod_wsgi), each module's ``application`` built when it is imported, as upstream's
``placement.wsgi.api`` and ``nova.wsgi.osapi_compute``: ``moorage.wsgi.placement`` and
``moorage.wsgi.compute_api``. Moorage's own launchers (``moorage placement serve``,
``moorage api serve``) serve the same applications under granian, through factories
(``moorage.placement.wsgi:create_app``, ``moorage.stack:create_api_app``)."""
