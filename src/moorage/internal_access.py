"""Who may call the routes the services call each other on: the compute API's
``/internal/`` routes (an agent's registration and heartbeat, which set the agent URL
the conductor will call) and every agent's and fleet's HTTP API (the conductor's
spawns, deletes and service updates).

Why a rule of its own: these are not users' routes, so neither noauth2 nor a keystone
token says anything about them; a write there places a guest on a host or points the
conductor at a URL of the caller's choosing. So, whatever ``[api] auth_strategy`` is:

* ``[DEFAULT] service_token`` set: every request carries it in ``X-Service-Token``
  (401 otherwise), reads included.
* unset: writes are refused (401, naming the option), unless
  ``[DEFAULT] allow_anonymous_internal_writes`` (DEVELOPMENT ONLY) opens them; reads
  (GET, HEAD) are answered, as they change nothing and a monitor can probe an agent.

Services still start without a token (one WARNING line says what they will refuse):
the compute API serves its users without agents, and an agent keeps its providers
in placement without a registration; each refusal names the option to set.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from oslo_config import cfg

TOKEN_HEADER = "X-Service-Token"
# The methods that change nothing: answered without a token when none is configured.
READS = frozenset({"GET", "HEAD"})
FLAG = "[DEFAULT] allow_anonymous_internal_writes"

WRONG_TOKEN = f"a valid {TOKEN_HEADER} header is required ([DEFAULT] service_token)"
ANONYMOUS_WRITE = (
    "anonymous {method} refused: the services' internal routes need [DEFAULT] "
    f"service_token (the same secret on the compute API, its conductors and every agent, "
    f"sent in {TOKEN_HEADER}); DEVELOPMENT ONLY: {FLAG} = true")


@dataclass(frozen=True)
class InternalAccess:
    """The service token a service expects and sends, and whether anonymous writes are
    let through when there is none (development only)."""

    token: str | None
    anonymous_writes: bool = False

    @classmethod
    def of(cls, conf: cfg.ConfigOpts) -> InternalAccess:
        """The access ``conf``'s [DEFAULT] options describe."""
        token = conf.service_token
        return cls(str(token) if token else None, bool(conf.allow_anonymous_internal_writes))

    def refusal(self, method: str, given: str | None) -> str | None:
        """Why a request with ``method`` and ``given`` token must be refused (the 401's
        message), or None when it may go on."""
        if self.token is not None:
            return None if self.holds(given) else WRONG_TOKEN
        if method.upper() in READS or self.anonymous_writes:
            return None
        return ANONYMOUS_WRITE.format(method=method.upper())

    def holds(self, given: str | None) -> bool:
        """Whether ``given`` is the configured service token (never without one: what
        only the services may read is read with it, whatever the development flag)."""
        return self.token is not None and given is not None and hmac.compare_digest(
            self.token.encode(), given.encode())

    def start_warning(self, service: str, writes: str) -> str | None:
        """The one line ``service`` logs at start when no token guards its internal
        ``writes`` (what they are, for the operator), or None when one does."""
        if self.token is not None:
            return None
        if self.anonymous_writes:
            return (f"{service}: [DEFAULT] service_token is unset and {FLAG} is on: anyone "
                    f"who can reach it may make {writes}. DEVELOPMENT ONLY; set "
                    "service_token in production")
        return (f"{service}: [DEFAULT] service_token is unset: {writes} are refused (401) "
                "until it is set, the same on every service (DEVELOPMENT ONLY: "
                f"{FLAG} = true opens them)")
