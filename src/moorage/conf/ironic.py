"""[ironic]: the bare-metal driver, on simulated Ironic node records (there is no Ironic here)."""

from __future__ import annotations

from oslo_config import cfg

GROUP = "ironic"

OPTS = (
    cfg.StrOpt(
        "conductor_group",
        default=None,
        help="Manage only the nodes of this Ironic conductor group (upstream's name; it "
        "was partition_key). Unset: every node.",
    ),
    cfg.StrOpt(
        "simulation_file",
        default="",
        help="JSON file with the simulated Ironic's node records: a list of objects with "
        "uuid, name, resource_class, traits, properties (cpus, memory_mb, local_gb, "
        "cpu_arch), provision_state, maintenance, maintenance_reason, conductor_group. "
        "Empty: an Ironic with no nodes enrolled.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
