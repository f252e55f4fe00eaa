"""[placement]: behaviour of the placement service, and how Moorage's services and
commands reach it, with upstream's option names (placement's own; nova's keystoneauth1
options, conf.keystoneauth)."""

from __future__ import annotations

from oslo_config import cfg

from moorage.conf.keystoneauth import options, plugin_options

GROUP = "placement"
SERVICE_TYPE = "placement"
# Where the DEVELOPMENT token goes when endpoint_override is unset and auth_type too.
DEVELOPMENT_URL = "http://127.0.0.1:8778"

INCOMPLETE_CONSUMER_ID = "00000000-0000-0000-0000-000000000000"

OPTS = (
    cfg.BoolOpt(
        "randomize_allocation_candidates",
        default=False,
        help="If True, GET /allocation_candidates returns its results in a random "
        "order and, with a limit, a random sample, which spreads load across "
        "equally good hosts. If False the order is deterministic (provider "
        "creation order), which packs hosts.",
    ),
    cfg.IntOpt(
        "max_allocation_candidates",
        default=-1,
        help="Stop generating allocation candidates once this many are found, "
        "whatever limit the client asks for; -1 means no cap. Protects the "
        "service against the combinatorial explosion of wide provider trees.",
    ),
    cfg.StrOpt(
        "allocation_candidates_generation_strategy",
        default="depth-first",
        choices=[
            ("depth-first", "Generate every candidate of one tree before the next."),
            ("breadth-first", "Take one candidate from each tree in turn."),
        ],
        help="Order in which candidates of different provider trees are generated "
        "when max_allocation_candidates or limit stops generation early.",
    ),
    cfg.StrOpt(
        "incomplete_consumer_project_id",
        default=INCOMPLETE_CONSUMER_ID,
        help="Project recorded for consumers written before microversion 1.8, "
        "which did not require a project.",
    ),
    cfg.StrOpt(
        "token",
        default="admin",
        secret=True,
        help="DEVELOPMENT ONLY: with auth_type unset, the X-Auth-Token Moorage's services "
        f"send to placement at endpoint_override (default {DEVELOPMENT_URL}). The "
        "default suits only a placement service in the DEVELOPMENT noauth2 mode (which "
        "reads the token as user[:project]; 'admin' is an administrator). With auth_type "
        "set (password, v3applicationcredential...), tokens come from Keystone and are "
        "renewed before they expire, and the endpoint from its catalog unless "
        "endpoint_override names it.",
    ),
    cfg.StrOpt(
        "incomplete_consumer_user_id",
        default=INCOMPLETE_CONSUMER_ID,
        help="User recorded for consumers written before microversion 1.8.",
    ),
    # How Moorage's services reach placement: keystoneauth1's options, as nova's.
    *options(SERVICE_TYPE, ["internal", "public"]),
)
# Listed in the reference and the sample; registered by keystoneauth1 when it loads
# the plugin auth_type names.
LISTED_OPTS = tuple(plugin_options())


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
