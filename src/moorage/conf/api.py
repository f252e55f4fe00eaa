"""[api]: authentication and request limits of the HTTP API, and what its capability
catalogue (GET /v2.1/capabilities) may show users."""

from __future__ import annotations

from oslo_config import cfg

from moorage.model.discretion import Floor

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
    cfg.StrOpt(
        "image_service",
        default="builtin",
        choices=[
            ("builtin", "Moorage's own image service (/image on this listener)."),
            ("glance", "An existing Glance: the one [glance] api_servers names, else "
             "the image endpoint of Keystone's catalog ([glance] auth_type). A boot "
             "reads its image there with the user's token, as nova does."),
        ],
        help="Where a boot's image (its record and properties) is read from.",
    ),
    cfg.IntOpt(
        "max_request_body_size",
        default=1024 * 1024,
        min=1024,
        help="Largest request body accepted, in bytes; larger bodies get 413.",
    ),
    cfg.BoolOpt(
        "public_metrics",
        default=False,
        help="Serve GET /metrics (Prometheus text format) to anyone, with no token and "
        "no policy check: for a Prometheus that cannot hold a Keystone token, where only "
        "trusted scrapers reach the listening address (a service bound to a management "
        "network or to localhost behind an exporter). Off, the caller needs the metrics "
        "policy rule (placement:metrics, moorage:metrics; admin by default).",
    ),
    cfg.IntOpt(
        "capability_host_floor",
        default=2,
        min=1,
        help="No count of hosts below this is told to a user who may not see hosts "
        "(os_compute_api:servers:show:host_status): GET /v2.1/capabilities lists a "
        "trait only when at least this many enabled, up hosts with room offer it, and "
        "an image's moorage:bootable, a plan, a NoValidHost fault and a server's "
        "scheduling record say \"fewer than N\" (null in JSON), zero included. With the "
        "default, a capability of one special host is not revealed. 1 tells every "
        "count.",
    ),
    cfg.FloatOpt(
        "capability_cache_seconds",
        default=10.0,
        min=0.0,
        help="How long GET /v2.1/capabilities reuses its census of the hosts (one "
        "placement query for the whole cloud); 0 reads placement on every request.",
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


def user_floor(conf: cfg.ConfigOpts) -> Floor:
    """The counts of hosts told to those who may not see hosts (``Floor``)."""
    return Floor(int(conf.api.capability_host_floor))
