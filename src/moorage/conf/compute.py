"""[compute]: the compute agent."""

from __future__ import annotations

from oslo_config import cfg

GROUP = "compute"

OPTS = (
    cfg.ListOpt(
        "image_type_exclude_list",
        default=[],
        help="Image formats (disk_format values, for example qcow2 or vmdk) this host "
        "must not be sent, whatever its driver supports: their COMPUTE_IMAGE_TYPE_* "
        "traits are removed from the host. Only matters to schedulers that query "
        "placement for image type support.",
    ),
    cfg.IntOpt(
        "resource_provider_association_refresh",
        default=300,
        min=0,
        help="Seconds between full re-reads of this host's providers, inventories and "
        "traits from placement (upstream's option). In between, a sync writes only "
        "what changed since the last write it made, so an unchanged host costs "
        "placement nothing; another writer's change is seen at the next write (a "
        "generation conflict makes the agent re-read) or at this refresh. 0 re-reads "
        "at every sync.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
