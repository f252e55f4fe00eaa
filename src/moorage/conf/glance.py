"""[glance]: where a compute host downloads images' data from, with upstream Nova's names.

The image service speaks Glance's v2 API (``GET /v2/images/{id}`` and
``GET /v2/images/{id}/file``); Moorage's own is mounted at ``/image`` on the compute
API's listener, so by default an agent finds it beside the compute API it
registers with (``[compute_agent] api_url`` + ``/image``).
"""

from __future__ import annotations

from oslo_config import cfg

from moorage.conf.keystoneauth import options, plugin_options

GROUP = "glance"
SERVICE_TYPE = "image"

OPTS = (
    cfg.ListOpt(
        "api_servers",
        default=[],
        help="URLs of the image service (Glance v2 API), tried in order, the next one "
        "when one cannot be reached, for example http://10.0.0.5:8774/image. Empty: "
        "with auth_type set, the image endpoint of Keystone's catalog (or "
        "endpoint_override); else [compute_agent] api_url followed by /image (Moorage's "
        "image service beside the compute API). With none, a host cannot boot images "
        "that have data.",
    ),
    cfg.StrOpt(
        "auth_header",
        default="X-Service-Token",
        choices=[
            ("X-Service-Token", "the services' own header (moorage.internal_access)"),
            ("X-Auth-Token", "a user's header: for an image service that takes "
             "[DEFAULT] service_token as a token"),
        ],
        help="The header the compute host sends [DEFAULT] service_token in when it "
        "reads an image's record and data, with auth_type unset. With auth_type set "
        "(password, v3applicationcredential...), it sends a Keystone token of its own, "
        "renewed before it expires, as nova-compute does.",
    ),
    cfg.IntOpt(
        "num_retries",
        default=3,
        min=0,
        help="How many more times an image's record or data is asked for when the "
        "image service cannot be reached or answers 5xx (upstream's option); each "
        "try goes to the next of api_servers.",
    ),
    # How a compute host reaches the image service as nova-compute does: keystoneauth1's
    # options (its session's "timeout" is the seconds to wait for a connection, then for
    # each read: DEFAULT_TIMEOUT when unset).
    *options(SERVICE_TYPE, ["internal", "public"]),
)
LISTED_OPTS = tuple(plugin_options())
DEFAULT_TIMEOUT = 60.0


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
