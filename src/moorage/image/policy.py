"""Authorization of the image service with oslo.policy, under glance's rule names.

The defaults are glance's legacy ones, with the ownership glance checks in code
written into the rule: an administrator may do everything; anyone may list, show
and download the images they can see (visibility is decided by
``moorage.image.store``, not here); an image's owner changes, uploads, deletes and
shares it; a member answers for itself; only an administrator makes an image public.
Operators override them in the same ``[oslo_policy] policy_file`` as the compute API's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from oslo_config import cfg
from oslo_policy import policy as oslo_policy

from moorage.image.errors import Forbidden
from moorage.policy import CachedEnforcer, PolicyValue

ADMIN = "role:admin"
ADMIN_OR_OWNER = "role:admin or project_id:%(owner)s"
ADMIN_OR_MEMBER = "role:admin or project_id:%(member_id)s"
ANYONE = "@"

# (rule name, default, description, [(method, path), ...])
RULES: tuple[tuple[str, str, str, list[tuple[str, str]]], ...] = (
    ("get_images", ANYONE, "List images.", [("GET", "/v2/images")]),
    ("get_image", ANYONE, "Show an image.", [("GET", "/v2/images/{image_id}")]),
    ("add_image", ANYONE, "Create an image.", [("POST", "/v2/images")]),
    ("modify_image", ADMIN_OR_OWNER, "Change an image, or its tags.",
     [("PATCH", "/v2/images/{image_id}"), ("PUT", "/v2/images/{image_id}/tags/{tag}"),
      ("DELETE", "/v2/images/{image_id}/tags/{tag}")]),
    ("delete_image", ADMIN_OR_OWNER, "Delete an image.",
     [("DELETE", "/v2/images/{image_id}")]),
    ("publicize_image", ADMIN, "Create a public image or make one public.",
     [("POST", "/v2/images"), ("PATCH", "/v2/images/{image_id}")]),
    ("communitize_image", ADMIN_OR_OWNER, "Create a community image or make one so.",
     [("POST", "/v2/images"), ("PATCH", "/v2/images/{image_id}")]),
    ("deactivate", ADMIN_OR_OWNER, "Withhold an image's data from all but administrators.",
     [("POST", "/v2/images/{image_id}/actions/deactivate")]),
    ("reactivate", ADMIN_OR_OWNER, "Give a deactivated image's data back.",
     [("POST", "/v2/images/{image_id}/actions/reactivate")]),
    ("upload_image", ADMIN_OR_OWNER, "Upload an image's data.",
     [("PUT", "/v2/images/{image_id}/file")]),
    ("download_image", ANYONE, "Download an image's data.",
     [("GET", "/v2/images/{image_id}/file")]),
    ("get_members", ANYONE, "List the members of a shared image.",
     [("GET", "/v2/images/{image_id}/members")]),
    ("get_member", ANYONE, "Show a member of a shared image.",
     [("GET", "/v2/images/{image_id}/members/{member_id}")]),
    ("add_member", ADMIN_OR_OWNER, "Share an image with a project.",
     [("POST", "/v2/images/{image_id}/members")]),
    ("delete_member", ADMIN_OR_OWNER, "Stop sharing an image with a project.",
     [("DELETE", "/v2/images/{image_id}/members/{member_id}")]),
    ("modify_member", ADMIN_OR_MEMBER, "Accept or reject an image shared with a project.",
     [("PUT", "/v2/images/{image_id}/members/{member_id}")]),
)


def list_rules() -> list[oslo_policy.RuleDefault]:
    """Every default rule of the image service (a policy sample's entry point too)."""
    return [
        oslo_policy.RuleDefault("context_is_admin", ADMIN,
                                description="Decides what is an administrator."),
        *(oslo_policy.DocumentedRuleDefault(
            name=name, check_str=check, description=description,
            operations=[{"method": m, "path": "/image" + p} for m, p in operations])
          for name, check, description, operations in RULES),
    ]


class Caller(Protocol):
    """Who calls: a frozen value (the compute API's ``RequestContext`` is one), its
    decisions remembered under it (``moorage.policy.PolicyCaller``)."""

    @property
    def user_id(self) -> str | None: ...

    @property
    def project_id(self) -> str | None: ...

    @property
    def is_admin(self) -> bool: ...

    def __hash__(self) -> int: ...

    def policy_values(self) -> dict[str, PolicyValue]: ...


class ImagePolicy:
    """The image service's enforcer, its decisions remembered."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self._cached = CachedEnforcer(conf, list_rules())

    def authorize(self, rule: str, caller: Caller, owner: str | None = None,
                  member_id: str | None = None) -> None:
        """403 (Forbidden) unless ``caller`` may perform ``rule`` on an image of
        ``owner`` (and, for a member's own answer, as ``member_id``)."""
        target: Mapping[str, PolicyValue] = {
            "owner": owner, "project_id": owner, "member_id": member_id,
            "user_id": caller.user_id}
        if not self._cached.allows(rule, target, caller):
            raise Forbidden(f"You are not authorized to complete {rule} action.")
