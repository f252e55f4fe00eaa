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
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
