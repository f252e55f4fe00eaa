"""[api]: authentication and request limits of the HTTP API."""

from __future__ import annotations

from oslo_config import cfg

GROUP = "api"

OPTS = (
    cfg.StrOpt(
        "auth_strategy",
        default="keystone",
        choices=[
            ("keystone", "Validate tokens with Keystone (needs keystonemiddleware "
             "and a [keystone_authtoken] section)."),
            ("noauth2", "DEVELOPMENT ONLY: trust X-Auth-Token as 'user[:project]'; "
             "the token 'admin' is an administrator. Never expose it."),
        ],
        help="How requests are authenticated.",
    ),
    cfg.IntOpt(
        "max_request_body_size",
        default=1024 * 1024,
        min=1024,
        help="Largest request body accepted, in bytes; larger bodies get 413.",
    ),
    cfg.BoolOpt(
        "refuse_unbootable_images",
        default=False,
        help="Refuse (409) to create an image, or to change one, that no enabled host "
        "can boot under the current [scheduler] prefilters: a trait it requires that no "
        "host reports (no host reports COMPUTE_IMAGE_TYPE_VMDK, for a vmdk image with "
        "query_placement_for_image_type_support on), or none that reports them all. "
        "Whatever the setting, the answer to a create or change says how many hosts can "
        "boot the image (moorage:bootable). Placement not answering, or a cloud with no "
        "compute host yet, refuses nothing.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
