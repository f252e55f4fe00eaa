"""[placement_server]: how `moorage placement serve` listens."""

from __future__ import annotations

from oslo_config import cfg

GROUP = "placement_server"

OPTS = (
    cfg.HostAddressOpt(
        "host",
        default="127.0.0.1",
        help="Address to listen on. The default accepts local clients only; "
        "use 0.0.0.0 to serve other machines.",
    ),
    cfg.PortOpt("port", default=8778, help="TCP port to listen on."),
    cfg.IntOpt(
        "workers",
        default=1,
        min=1,
        help="Server processes. Each keeps its own in-memory index, kept "
        "coherent with the database; use several with PostgreSQL.",
    ),
    cfg.IntOpt(
        "threads",
        default=4,
        min=1,
        help="Request threads per worker process.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
