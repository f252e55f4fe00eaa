"""[quota]: nova's per-project limits and their defaults (nova's names and values).

A project's (or a user's) own limits, set with ``PUT /os-quota-sets/{project}``,
override these; ``-1`` is unlimited. The counting happens in the transaction that
records a server (``moorage.api.quotas``).
"""

from __future__ import annotations

from oslo_config import cfg

GROUP = "quota"

# The drivers, as nova names them: the database's limits, or none at all.
DB_DRIVER = "nova.quota.DbQuotaDriver"
NOOP_DRIVER = "nova.quota.NoopQuotaDriver"


def _limit(name: str, default: int, what: str) -> cfg.IntOpt:
    return cfg.IntOpt(name, default=default, min=-1,
                      help=f"The default number of {what} a project may have "
                      "(-1: unlimited); a project's own limit overrides it.")


OPTS = (
    _limit("instances", 10, "servers"),
    _limit("cores", 20, "vCPUs of its servers' flavors"),
    _limit("ram", 50 * 1024, "MiB of RAM of its servers' flavors"),
    _limit("metadata_items", 128, "metadata items on each server"),
    _limit("injected_files", 5, "injected files per server (shown before microversion "
           "2.57; Moorage injects none)"),
    _limit("injected_file_content_bytes", 10 * 1024, "bytes of an injected file (shown "
           "before 2.57)"),
    _limit("injected_file_path_length", 255, "characters of an injected file's path "
           "(shown as injected_file_path_bytes before 2.57)"),
    _limit("key_pairs", 100, "key pairs of each of its users"),
    _limit("server_groups", 10, "server groups"),
    _limit("server_group_members", 10, "servers in each server group of each user"),
    cfg.StrOpt(
        "driver", default=DB_DRIVER,
        choices=[
            (DB_DRIVER, "Limits from these options and the projects' own, usage "
             "counted from the servers and key pairs recorded."),
            (NOOP_DRIVER, "No limits: everything is unlimited and nothing is counted "
             "(a benchmark's or a simulation's cloud)."),
        ],
        help="How quotas are enforced, nova's driver names.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(OPTS, group=GROUP)
