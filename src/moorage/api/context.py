"""Who is calling the compute API."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moorage.policy import PolicyValue


@dataclass(frozen=True)
class RequestContext:
    """The caller's identity, as authentication established it."""

    user_id: str | None
    project_id: str | None
    roles: tuple[str, ...] = ()
    # The caller's Keystone token, for the services the API asks on its behalf (an
    # existing Glance); None in noauth2 and for the services' own calls.
    auth_token: str | None = field(default=None, repr=False, compare=False)

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles

    def policy_values(self) -> dict[str, PolicyValue]:
        return {
            "user_id": self.user_id,
            "project_id": self.project_id,
            "roles": list(self.roles),
            "is_admin": self.is_admin,
            "system_scope": None,
            "domain_id": None,
            "user_domain_id": None,
            "project_domain_id": None,
        }


ANONYMOUS = RequestContext(None, None, ())
