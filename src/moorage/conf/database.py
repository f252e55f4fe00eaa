"""[database]: where the compute API keeps flavors, images, services, aggregates and servers."""

from __future__ import annotations

from oslo_config import cfg

GROUP = "database"

OPTS = (
    cfg.StrOpt(
        "connection",
        secret=True,
        # A nova.conf names its API database here: the compute API's records (flavors,
        # servers...) are those nova keeps there. [database] wins when both are set.
        deprecated_opts=[cfg.DeprecatedOpt("connection", group="api_database")],
        help="SQLAlchemy URL of the compute API database. Unset means an embedded "
        "SQLite database in the user's data directory "
        "(for example ~/.local/share/moorage/api.sqlite). "
        "PostgreSQL: postgresql://user:password@host/dbname.",
    ),
    cfg.BoolOpt(
        "sqlite_synchronous",
        default=True,
        help="SQLite only. True keeps every committed transaction across a power "
        "failure (synchronous=FULL); False uses synchronous=NORMAL.",
    ),
    cfg.BoolOpt(
        "sync_on_startup",
        default=True,
        help="Apply the compute API's database migrations when the service starts.",
    ),
    cfg.IntOpt(
        "max_pool_size",
        default=10,
        min=1,
        help="PostgreSQL only: connections kept open by the compute API.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
