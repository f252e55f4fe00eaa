"""[scheduler]: where servers go, with upstream Nova's option names."""

from __future__ import annotations

from oslo_config import cfg

GROUP = "scheduler"

OPTS = (
    cfg.BoolOpt(
        "query_placement_for_image_type_support",
        default=False,
        # The name the image-type spec first gave it, still in its text.
        deprecated_opts=[cfg.DeprecatedOpt("filter_hosts_by_image_type_support",
                                           group=GROUP)],
        help="Ask placement only for hosts whose driver reads the image's disk_format "
        "(the host must report COMPUTE_IMAGE_TYPE_<FORMAT>). Not for volume-backed "
        "servers, whose image is never read by the host.",
    ),
    cfg.BoolOpt(
        "image_metadata_prefilter",
        default=False,
        help="Ask placement only for hosts that report the traits the image's hw_* "
        "properties need: hw_disk_bus and hw_cdrom_bus (COMPUTE_STORAGE_BUS_*), "
        "hw_video_model (COMPUTE_GRAPHICS_MODEL_*), hw_vif_model "
        "(COMPUTE_NET_VIF_MODEL_*), hw_architecture (HW_ARCH_*), "
        "hw_emulation_architecture (COMPUTE_ARCH_*), hw_viommu_model "
        "(COMPUTE_VIOMMU_MODEL_*).",
    ),
    cfg.IntOpt("max_placement_results", default=1000, min=1,
               help="The most allocation candidates asked of placement per request (its "
               "limit), as upstream's option of that name."),
    cfg.IntOpt(
        "placement_sample_size", default=50, min=0,
        help="Allocation candidates asked of placement first. Only when none of them "
        "passes the host filters, and placement had more, does the scheduler ask again "
        "for up to max_placement_results. So the cost of a decision does not grow with "
        "the cloud: the host filters and weighers see at most this many hosts, as "
        "Kubernetes' scheduler scores a share of the feasible nodes and Nomad's "
        "a few. Set [placement] randomize_allocation_candidates on the placement "
        "service for the sample to spread over the whole cloud (otherwise placement "
        "offers the first hosts in its order, which fill first). 0 asks for "
        "max_placement_results at once (upstream's behaviour).",
    ),
    cfg.IntOpt(
        "decision_hosts_listed", default=20, min=0, max=1000,
        help="Hosts named per constraint in a scheduling's recorded decisions (the "
        "hosts each constraint excluded, shown to administrators; the rest are "
        "counted). Placement names them in the same pass that counts them (the "
        "Moorage-Explain extension of GET /allocation_candidates). 0 records counts "
        "only."),
    cfg.IntOpt(
        "max_attempts",
        default=3,
        min=1,
        help="Hosts a build may try: the chosen one and max_attempts - 1 alternates. A "
        "failure on the last gives the server an ERROR with MaxRetriesExceeded.",
    ),
    cfg.BoolOpt(
        "limit_tenants_to_placement_aggregate",
        default=False,
        help="Send a project's servers only to aggregates whose metadata names it "
        "(filter_tenant_id*=<project>) when some do.",
    ),
    cfg.BoolOpt(
        "placement_aggregate_required_for_tenants",
        default=False,
        help="With limit_tenants_to_placement_aggregate: a project no aggregate names "
        "gets no host at all.",
    ),
    cfg.BoolOpt(
        "enable_isolated_aggregate_filtering",
        default=False,
        help="Keep servers off aggregates whose metadata requires a trait "
        "(trait:<NAME>=required) that the server's flavor and image do not require.",
    ),
    cfg.BoolOpt(
        "query_placement_for_availability_zone",
        default=True,
        help="Ask placement only for hosts in the aggregates of the requested "
        "availability zone (member_of), instead of leaving the zone to the "
        "AvailabilityZoneFilter host filter.",
    ),
)

def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
