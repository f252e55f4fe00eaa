"""[conductor]: the workers that build, move and delete servers, upstream's group name."""

from __future__ import annotations

from oslo_config import cfg

GROUP = "conductor"

OPTS = (
    cfg.IntOpt(
        "workers", default=8, min=1,
        help="Threads that run server operations (build, delete, rebuild, migrate, "
        "resize, evacuate). Operations on one server run one at a time; different "
        "servers proceed in parallel up to this many.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)

