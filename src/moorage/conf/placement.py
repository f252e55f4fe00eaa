"""[placement]: behaviour of the placement service, with upstream's option names."""

from __future__ import annotations

from oslo_config import cfg

GROUP = "placement"

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
        "endpoint_override",
        default="http://127.0.0.1:8778",
        help="Where Moorage's services (compute agents, scheduler) reach the placement "
        "API.",
    ),
    cfg.StrOpt(
        "token",
        default="admin",
        secret=True,
        help="X-Auth-Token Moorage's services send to placement. The default suits only a "
        "placement service in the DEVELOPMENT noauth2 mode (which reads the token as "
        "user[:project]; 'admin' is an administrator).",
    ),
    cfg.StrOpt(
        "incomplete_consumer_user_id",
        default=INCOMPLETE_CONSUMER_ID,
        help="User recorded for consumers written before microversion 1.8.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
