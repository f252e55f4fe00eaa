"""[compute_agent]: the compute agent's own HTTP API, and where it registers.

The agent serves spawn, destroy and set-disabled to the compute API's conductor
and heart-beats to the compute API (``PUT /internal/services/{host}``); its
token is ``[DEFAULT] service_token`` and its pace ``[DEFAULT] report_interval``.
"""

from __future__ import annotations

from oslo_config import cfg

GROUP = "compute_agent"

OPTS = (
    cfg.HostAddressOpt(
        "listen",
        default="127.0.0.1",
        help="Address the agent's HTTP API listens on. Only this machine by default; "
        "set an address the compute API can reach when it runs elsewhere.",
    ),
    cfg.PortOpt(
        "port",
        default=8781,
        help="TCP port of the agent's HTTP API (0: any free port).",
    ),
    cfg.StrOpt(
        "advertise_url",
        help="The URL the compute API is told to reach this agent at. Default: "
        "http://<listen>:<port> as bound.",
    ),
    cfg.StrOpt(
        "api_url",
        help="The compute API's URL (for example http://127.0.0.1:8774) the agent "
        "registers with and heart-beats to. Unset: the agent does not register (a "
        "standalone agent; the compute API will not schedule to it).",
    ),
    cfg.FloatOpt(
        "request_timeout",
        default=300.0,
        min=1.0,
        help="Seconds a caller of an agent (the compute API's conductor) waits for its "
        "answer; a spawn on a real hypervisor can take a while.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
