"""[oslo_middleware]: a service behind a TLS-terminating proxy, with oslo.middleware's
option (``enable_proxy_headers_parsing``): the proxy's ``X-Forwarded-Proto``,
``X-Forwarded-Host`` and ``X-Forwarded-Prefix`` (or ``Forwarded``) then make the
links and Location headers the services answer (``moorage.web.behind_proxy``)."""

from __future__ import annotations

from oslo_config import cfg
from oslo_middleware import http_proxy_to_wsgi

GROUP = "oslo_middleware"

OPTS = tuple(http_proxy_to_wsgi.OPTS)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
