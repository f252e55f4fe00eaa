"""[cors]: cross-origin requests, with oslo.middleware's option names."""

from __future__ import annotations

from oslo_config import cfg
from oslo_middleware import cors

GROUP = "cors"

OPTS = tuple(cors.CORS_OPTS)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
