"""[conductor]: the workers that build, move and delete servers, upstream's group name."""

from __future__ import annotations

from oslo_config import cfg

GROUP = "conductor"

OPTS = (
    cfg.IntOpt(
        "workers", default=16, min=1,
        help="Threads that run server operations (build, delete, rebuild, migrate, "
        "resize, evacuate) in each conductor. Operations on one server run one at a "
        "time; different servers proceed in parallel up to this many.",
    ),
    cfg.BoolOpt(
        "run_in_api", default=True,
        help="Run a conductor inside each compute API process, which starts the work "
        "that process accepts at once. Off, the API only records the work and "
        "separate `moorage conductor serve` processes carry it out.",
    ),
    cfg.FloatOpt(
        "lease_seconds", default=30.0, min=1.0,
        help="How long a conductor's claim on an operation holds without renewal. A "
        "conductor renews its claims every third of this; when it dies, another "
        "conductor takes its operations over once their leases ran out, so a server "
        "caught mid-operation ends ACTIVE or ERROR within about this long.",
    ),
    cfg.IntOpt(
        "max_takeovers", default=3, min=0,
        help="How many times an operation may be taken over from a conductor that "
        "stopped before it is given up: an operation whose conductors keep dying "
        "(a crash it causes, say) would otherwise be taken over forever. Past this, "
        "the conductor that claims it ends its server in ERROR, with a fault saying "
        "so, instead of carrying it out again.",
    ),
    cfg.FloatOpt(
        "poll_interval", default=0.5, min=0.01,
        help="Seconds between a conductor's looks for operations nobody holds: "
        "accepted by an API process without a conductor, waiting for a server's "
        "previous operation, or abandoned by a conductor that died.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
