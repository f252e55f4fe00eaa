"""[filter_scheduler]: host filters and weighers, with upstream Nova's option names."""

from __future__ import annotations

from oslo_config import cfg

from moorage.model.image import ARCHITECTURES

GROUP = "filter_scheduler"

OPTS = (
    cfg.ListOpt(
        "enabled_filters",
        default=["ComputeFilter", "ImagePropertiesFilter", "ServerGroupAntiAffinityFilter",
                 "ServerGroupAffinityFilter"],
        help="Host filters run after placement, in order: ComputeFilter (service "
        "enabled and up), ImagePropertiesFilter (the legacy check of hw_architecture, "
        "img_hv_type and hw_vm_mode against what the host runs), "
        "AvailabilityZoneFilter, AggregateInstanceExtraSpecsFilter (flavor extra specs "
        "against host aggregate metadata), ServerGroupAntiAffinityFilter and "
        "ServerGroupAffinityFilter (the server's group's policy, given where its other "
        "members are; run only for a server in such a group).",
    ),
    cfg.FloatOpt("ram_weight_multiplier", default=1.0,
                 help="Prefer hosts with more free memory (negative: fill hosts first)."),
    cfg.FloatOpt("cpu_weight_multiplier", default=1.0,
                 help="Prefer hosts with more free VCPU (negative: fill hosts first)."),
    cfg.FloatOpt("disk_weight_multiplier", default=1.0,
                 help="Prefer hosts with more free disk (negative: fill hosts first)."),
    cfg.FloatOpt("soft_affinity_weight_multiplier", default=1.0, min=0.0,
                 help="Prefer, for a server of a soft-affinity group, the hosts running "
                 "more of its group's servers."),
    cfg.FloatOpt("soft_anti_affinity_weight_multiplier", default=1.0, min=0.0,
                 help="Prefer, for a server of a soft-anti-affinity group, the hosts "
                 "running fewer of its group's servers."),
    cfg.IntOpt("host_subset_size", default=1, min=1,
               help="Choose at random among this many of the best-weighed hosts."),
    cfg.BoolOpt("shuffle_best_same_weighed_hosts", default=False,
                help="Shuffle hosts that tie for the best weight before choosing."),
    cfg.StrOpt("image_properties_default_architecture", choices=list(ARCHITECTURES),
               help="Architecture ImagePropertiesFilter assumes for images without "
               "hw_architecture."),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
