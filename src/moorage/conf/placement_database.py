"""[placement_database]: where the placement data lives."""

from __future__ import annotations

from oslo_config import cfg

GROUP = "placement_database"

OPTS = (
    cfg.StrOpt(
        "connection",
        secret=True,
        help="SQLAlchemy URL of the placement database. Unset means an embedded "
        "SQLite database in the user's data directory "
        "(for example ~/.local/share/moorage/placement.sqlite). "
        "PostgreSQL: postgresql://user:password@host/dbname.",
    ),
    cfg.BoolOpt(
        "sqlite_synchronous",
        default=True,
        help="SQLite only. True keeps every committed transaction across a power "
        "failure (WAL with synchronous=FULL, one fsync per commit). False uses "
        "synchronous=NORMAL: still safe against a crash of the process, but the "
        "last commits may be lost if the machine loses power.",
    ),
    cfg.BoolOpt(
        "sync_on_startup",
        default=True,
        help="Apply database migrations when the service starts.",
    ),
    cfg.IntOpt(
        "max_pool_size",
        default=10,
        min=1,
        help="PostgreSQL only: connections kept open per service process.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
