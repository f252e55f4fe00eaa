"""[image]: where the image service (``/image`` on the compute API's listener) keeps
image data, and how much it takes. The names are glance's (``filesystem_store_datadir``
of its file store, ``image_size_cap`` as ``max_size``)."""

from __future__ import annotations

from oslo_config import cfg

GROUP = "image"

# Glance's image_size_cap: 1 TiB.
DEFAULT_MAX_SIZE = 1 << 40

OPTS = (
    cfg.StrOpt(
        "filesystem_store_datadir",
        default="/var/lib/moorage/images",
        help="Directory the image service stores uploaded image data in, one file per "
        "image named by its id. An upload is written to a temporary file here first "
        "and renamed once it is complete and its format checked, so this directory "
        "never holds a partial image under an image's name.",
    ),
    cfg.IntOpt(
        "max_size",
        default=DEFAULT_MAX_SIZE, min=0,
        help="Largest image data accepted, in bytes (glance's image_size_cap); a larger "
        "upload is refused with 413 and nothing is stored.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
