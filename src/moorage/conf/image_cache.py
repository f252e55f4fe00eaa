"""[image_cache]: the compute host's cache of downloaded images, with upstream Nova's names.

Each image a host boots from is downloaded once into this directory (upstream's
``_base``), checked, and shared by every guest of the host booted from it: their
root disks are qcow2 overlays backed by it (``moorage.virt.image_cache``).
"""

from __future__ import annotations

from oslo_config import cfg

GROUP = "image_cache"

OPTS = (
    cfg.StrOpt(
        "subdirectory_name",
        default="_base",
        help="Where downloaded images are kept: a directory under [DEFAULT] "
        "instances_path (an absolute path is used as is). Guests' disks are backed by "
        "the files in it: do not remove one that a guest on this host still uses.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
