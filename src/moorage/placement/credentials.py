"""Who is asking placement: what its policy rules are checked against.

Below both the HTTP layer (a request carries them) and the policy (which reads them),
so that neither imports the other for them."""

from __future__ import annotations

from dataclasses import dataclass

from moorage.policy import PolicyValue


@dataclass(frozen=True)
class Credentials:
    """Who is asking: what the policy rules are checked against."""

    user_id: str | None
    project_id: str | None
    roles: tuple[str, ...]
    system_scope: str | None = None

    def policy_values(self) -> dict[str, PolicyValue]:
        return {
            "user_id": self.user_id,
            "project_id": self.project_id,
            "roles": list(self.roles),
            "system_scope": self.system_scope,
            "domain_id": None,
            "user_domain_id": None,
            "project_domain_id": None,
        }
