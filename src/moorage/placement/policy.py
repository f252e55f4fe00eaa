"""Authorization with oslo.policy, under upstream placement's rule names and defaults.

Operators override rules in the policy file they already keep
(``[oslo_policy] policy_file``, YAML); ``[oslo_policy] enforce_new_defaults``
switches between the secure-RBAC defaults and the legacy ``role:admin`` ones.
By default every API is admin-or-service only.
"""

from __future__ import annotations

from collections.abc import Mapping

from oslo_config import cfg
from oslo_policy import policy as oslo_policy

from moorage.placement.credentials import Credentials
from moorage.placement.errors import Forbidden
from moorage.policy import CachedEnforcer, PolicyValue

ADMIN_API = "admin_api"
SERVICE_API = "service_api"
ADMIN_OR_SERVICE_API = "admin_or_service_api"
PROJECT_READER_API = "project_reader_api"
ADMIN_OR_PROJECT_READER_OR_SERVICE_API = "admin_or_project_reader_or_service_api"

_DEPRECATED_REASON = (
    "Placement API policies gained default roles with scope types; the old "
    "role:admin-only defaults are deprecated."
)
_LEGACY_ADMIN = oslo_policy.DeprecatedRule(
    name=f"rule:{ADMIN_API}",
    check_str="role:admin",
    deprecated_reason=_DEPRECATED_REASON,
    deprecated_since="W",
)

BASE_RULES = (
    oslo_policy.RuleDefault(ADMIN_API, "role:admin",
                            description="Default rule for most placement APIs.",
                            scope_types=["project"]),
    oslo_policy.RuleDefault(SERVICE_API, "role:service",
                            description="Default rule for service-to-service placement APIs.",
                            scope_types=["project"], deprecated_rule=_LEGACY_ADMIN),
    oslo_policy.RuleDefault(ADMIN_OR_SERVICE_API, "role:admin or role:service",
                            description="Default rule for most placement APIs.",
                            scope_types=["project"], deprecated_rule=_LEGACY_ADMIN),
    oslo_policy.RuleDefault(PROJECT_READER_API, "role:reader and project_id:%(project_id)s",
                            description="Default rule for project level reader APIs.",
                            deprecated_rule=_LEGACY_ADMIN),
    oslo_policy.RuleDefault(ADMIN_OR_PROJECT_READER_OR_SERVICE_API,
                            "role:admin or rule:project_reader_api or role:service",
                            description="Default rule for project level reader APIs.",
                            scope_types=["project"], deprecated_rule=_LEGACY_ADMIN),
)

# (rule name, default, description, [(method, path), ...])
_API_RULES: tuple[tuple[str, str, str, list[tuple[str, str]]], ...] = (
    ("placement:resource_providers:list", ADMIN_OR_SERVICE_API, "List resource providers.",
     [("GET", "/resource_providers")]),
    ("placement:resource_providers:create", ADMIN_OR_SERVICE_API, "Create resource provider.",
     [("POST", "/resource_providers")]),
    ("placement:resource_providers:show", ADMIN_OR_SERVICE_API, "Show resource provider.",
     [("GET", "/resource_providers/{uuid}")]),
    ("placement:resource_providers:update", ADMIN_OR_SERVICE_API, "Update resource provider.",
     [("PUT", "/resource_providers/{uuid}")]),
    ("placement:resource_providers:delete", ADMIN_OR_SERVICE_API, "Delete resource provider.",
     [("DELETE", "/resource_providers/{uuid}")]),
    ("placement:resource_classes:list", ADMIN_OR_SERVICE_API, "List resource classes.",
     [("GET", "/resource_classes")]),
    ("placement:resource_classes:create", ADMIN_OR_SERVICE_API, "Create resource class.",
     [("POST", "/resource_classes")]),
    ("placement:resource_classes:show", ADMIN_OR_SERVICE_API, "Show resource class.",
     [("GET", "/resource_classes/{name}")]),
    ("placement:resource_classes:update", ADMIN_OR_SERVICE_API, "Update resource class.",
     [("PUT", "/resource_classes/{name}")]),
    ("placement:resource_classes:delete", ADMIN_OR_SERVICE_API, "Delete resource class.",
     [("DELETE", "/resource_classes/{name}")]),
    ("placement:resource_providers:inventories:list", ADMIN_OR_SERVICE_API,
     "List resource provider inventories.",
     [("GET", "/resource_providers/{uuid}/inventories")]),
    ("placement:resource_providers:inventories:create", ADMIN_OR_SERVICE_API,
     "Create one resource provider inventory.",
     [("POST", "/resource_providers/{uuid}/inventories")]),
    ("placement:resource_providers:inventories:show", ADMIN_OR_SERVICE_API,
     "Show resource provider inventory.",
     [("GET", "/resource_providers/{uuid}/inventories/{resource_class}")]),
    ("placement:resource_providers:inventories:update", ADMIN_OR_SERVICE_API,
     "Update resource provider inventory.",
     [("PUT", "/resource_providers/{uuid}/inventories"),
      ("PUT", "/resource_providers/{uuid}/inventories/{resource_class}")]),
    ("placement:resource_providers:inventories:delete", ADMIN_OR_SERVICE_API,
     "Delete resource provider inventory.",
     [("DELETE", "/resource_providers/{uuid}/inventories"),
      ("DELETE", "/resource_providers/{uuid}/inventories/{resource_class}")]),
    ("placement:resource_providers:aggregates:list", ADMIN_OR_SERVICE_API,
     "List resource provider aggregates.",
     [("GET", "/resource_providers/{uuid}/aggregates")]),
    ("placement:resource_providers:aggregates:update", ADMIN_OR_SERVICE_API,
     "Update resource provider aggregates.",
     [("PUT", "/resource_providers/{uuid}/aggregates")]),
    ("placement:resource_providers:usages", ADMIN_OR_SERVICE_API,
     "List resource provider usages.",
     [("GET", "/resource_providers/{uuid}/usages")]),
    ("placement:usages", ADMIN_OR_PROJECT_READER_OR_SERVICE_API,
     "List total resource usages for a given project.", [("GET", "/usages")]),
    ("placement:traits:list", ADMIN_OR_SERVICE_API, "List traits.", [("GET", "/traits")]),
    ("placement:traits:show", ADMIN_OR_SERVICE_API, "Show trait.", [("GET", "/traits/{name}")]),
    ("placement:traits:update", ADMIN_OR_SERVICE_API, "Update trait.",
     [("PUT", "/traits/{name}")]),
    ("placement:traits:delete", ADMIN_OR_SERVICE_API, "Delete trait.",
     [("DELETE", "/traits/{name}")]),
    ("placement:resource_providers:traits:list", ADMIN_OR_SERVICE_API,
     "List resource provider traits.", [("GET", "/resource_providers/{uuid}/traits")]),
    ("placement:resource_providers:traits:update", ADMIN_OR_SERVICE_API,
     "Update resource provider traits.", [("PUT", "/resource_providers/{uuid}/traits")]),
    ("placement:resource_providers:traits:delete", ADMIN_OR_SERVICE_API,
     "Delete resource provider traits.", [("DELETE", "/resource_providers/{uuid}/traits")]),
    ("placement:allocations:manage", ADMIN_OR_SERVICE_API, "Manage allocations.",
     [("POST", "/allocations")]),
    ("placement:allocations:list", ADMIN_OR_SERVICE_API, "List allocations.",
     [("GET", "/allocations/{consumer_uuid}")]),
    ("placement:allocations:update", ADMIN_OR_SERVICE_API, "Update allocations.",
     [("PUT", "/allocations/{consumer_uuid}")]),
    ("placement:allocations:delete", ADMIN_OR_SERVICE_API, "Delete allocations.",
     [("DELETE", "/allocations/{consumer_uuid}")]),
    ("placement:resource_providers:allocations:list", ADMIN_OR_SERVICE_API,
     "List resource provider allocations.",
     [("GET", "/resource_providers/{uuid}/allocations")]),
    ("placement:allocation_candidates:list", ADMIN_OR_SERVICE_API,
     "List allocation candidates.", [("GET", "/allocation_candidates")]),
    ("placement:reshaper:reshape", SERVICE_API, "Reshape Inventory and Allocations.",
     [("POST", "/reshaper")]),
    # Not upstream's: Moorage's Prometheus endpoint ([api] public_metrics opens it).
    ("placement:metrics", ADMIN_API, "Read the service's metrics (Prometheus text format).",
     [("GET", "/metrics")]),
)


def list_rules() -> list[oslo_policy.RuleDefault]:
    """Every default rule; the entry point for oslopolicy-sample-generator."""
    api_rules = [
        oslo_policy.DocumentedRuleDefault(
            name=name,
            check_str=f"rule:{default}",
            description=description,
            operations=[{"method": m, "path": p} for m, p in operations],
            scope_types=["project"],
        )
        for name, default, description, operations in _API_RULES
    ]
    return [*BASE_RULES, *api_rules]


class Policy:
    """The enforcer of one placement service, its decisions remembered
    (``moorage.policy.CachedEnforcer``)."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self._cached = CachedEnforcer(conf, list_rules())

    def authorize(
        self, rule: str, credentials: Credentials,
        target: Mapping[str, PolicyValue] | None = None
    ) -> None:
        """Raise 403 (Forbidden) unless ``credentials`` may perform ``rule`` on ``target``."""
        if target is None:
            target = {"project_id": credentials.project_id, "user_id": credentials.user_id}
        if not self._cached.allows(rule, target, credentials):
            raise Forbidden(f"Policy does not allow {rule} to be performed.")
