"""[vmware]: the VMware driver, on a simulated vCenter (there is no vCenter here)."""

from __future__ import annotations

from oslo_config import cfg

GROUP = "vmware"

OPTS = (
    cfg.StrOpt(
        "cluster_name",
        default="cluster1",
        help="Name of the vCenter cluster this compute service manages; the simulated "
        "vCenter has one cluster with this name.",
    ),
    cfg.StrOpt(
        "datastore_regex",
        default="",
        help="Regular expression (Python syntax) the names of the datastores to use must "
        "match; empty uses every datastore. Only these count in DISK_GB.",
    ),
    cfg.StrOpt(
        "simulation_file",
        default="",
        help="JSON file describing the simulated vCenter cluster: ESXi hosts (name, "
        "cpu_threads, memory_mb, in_maintenance), datastores (name, capacity_gb, free_gb, "
        "type), the NIC and disk controller device types it offers (vSphere names), and "
        "optionally 'unreachable' with a reason. Empty: two hosts of 32 threads and "
        "128 GiB, one 2 TiB VMFS datastore, every device type.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
