"""[fake_driver]: the host the in-memory fake driver pretends to be (tests, demonstrations)."""

from __future__ import annotations

from oslo_config import cfg, types

from moorage.model.image import ARCHITECTURES, DISK_FORMATS

GROUP = "fake_driver"

OPTS = (
    cfg.ListOpt(
        "nodes",
        default=[],
        help="Names of the nodes the fake host manages, each its own compute node "
        "provider. Empty: one node named after [DEFAULT] host.",
    ),
    cfg.StrOpt(
        "architecture",
        default="x86_64",
        choices=ARCHITECTURES,
        help="CPU architecture of the fake host: it reports HW_ARCH_<ARCHITECTURE> "
        "(when os-traits names one) and (architecture, fake, hvm) as its supported "
        "instances, and refuses at spawn a guest whose image hw_architecture is another.",
    ),
    # Upstream's fake driver pretends to be large, so that tests can boot big flavors.
    cfg.IntOpt("vcpus", default=1000, min=1, help="VCPU total of each node."),
    cfg.IntOpt("memory_mb", default=800000, min=1, help="MEMORY_MB total of each node."),
    cfg.IntOpt("disk_gb", default=600000, min=1, help="DISK_GB total of each node."),
    cfg.ListOpt(
        "supported_image_types",
        item_type=types.String(choices=DISK_FORMATS),
        default=None,
        help="Image formats (disk_format values: " + ", ".join(DISK_FORMATS) + ") the "
        "fake host takes; every other format is then reported unsupported. Unset: "
        "upstream's fake driver table (raw supported, vhd not, the others not "
        "mentioned).",
    ),
    cfg.ListOpt(
        "traits",
        default=[],
        help="Traits the fake host reports supported, for example "
        "COMPUTE_NET_VIF_MODEL_VIRTIO: standard names from os-traits or CUSTOM_*.",
    ),
    cfg.ListOpt(
        "unsupported_traits",
        default=[],
        help="Traits the fake host reports unsupported: removed from its provider, and a "
        "guest that requires one is refused at spawn.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
