"""Authorization with oslo.policy, under nova's rule names where nova has the API.

Defaults are nova's legacy ones: reads of flavors, images and availability zones for
everyone, flavor, aggregate, service and hypervisor administration for admins, servers
for their project's members (or admins), key pairs for their user (or admins).
Operators override rules in ``[oslo_policy] policy_file`` as they do for nova.
"""

from __future__ import annotations

from collections.abc import Mapping

from oslo_config import cfg
from oslo_policy import policy as oslo_policy

from moorage.api.context import RequestContext
from moorage.api.errors import Forbidden
from moorage.policy import CachedEnforcer, PolicyValue

ADMIN_API = "admin_api"
ADMIN_OR_OWNER = "admin_or_owner"
# A user's own resources (key pairs belong to a user, not to a project).
ADMIN_OR_USER = f"rule:{ADMIN_API} or user_id:%(user_id)s"
ANYONE = "@"

BASE_RULES = (
    oslo_policy.RuleDefault("context_is_admin", "role:admin",
                            description="Decides what is an administrator."),
    oslo_policy.RuleDefault(ADMIN_API, "role:admin",
                            description="Default rule for administrative APIs."),
    oslo_policy.RuleDefault(ADMIN_OR_OWNER, "role:admin or project_id:%(project_id)s",
                            description="Default rule for APIs on a project's resources."),
)

# (rule name, default check, description, [(method, path), ...])
API_RULES: tuple[tuple[str, str, str, list[tuple[str, str]]], ...] = (
    ("os_compute_api:os-flavor-manage:create", f"rule:{ADMIN_API}", "Create a flavor.",
     [("POST", "/flavors")]),
    ("os_compute_api:os-flavor-manage:update", f"rule:{ADMIN_API}",
     "Change a flavor's description (from microversion 2.55).",
     [("PUT", "/flavors/{flavor_id}")]),
    ("os_compute_api:os-flavor-manage:delete", f"rule:{ADMIN_API}", "Delete a flavor.",
     [("DELETE", "/flavors/{flavor_id}")]),
    ("os_compute_api:os-flavor-access", f"rule:{ADMIN_API}",
     "List the projects a private flavor is shared with.",
     [("GET", "/flavors/{flavor_id}/os-flavor-access")]),
    ("os_compute_api:os-flavor-access:add_tenant_access", f"rule:{ADMIN_API}",
     "Share a private flavor with a project.", [("POST", "/flavors/{flavor_id}/action")]),
    ("os_compute_api:os-flavor-access:remove_tenant_access", f"rule:{ADMIN_API}",
     "Stop sharing a private flavor with a project.",
     [("POST", "/flavors/{flavor_id}/action")]),
    ("os_compute_api:os-flavor-extra-specs:index", ANYONE, "List a flavor's extra specs.",
     [("GET", "/flavors/{flavor_id}/os-extra_specs")]),
    ("os_compute_api:os-flavor-extra-specs:show", ANYONE, "Show one extra spec.",
     [("GET", "/flavors/{flavor_id}/os-extra_specs/{key}")]),
    ("os_compute_api:os-flavor-extra-specs:create", f"rule:{ADMIN_API}",
     "Create extra specs.", [("POST", "/flavors/{flavor_id}/os-extra_specs")]),
    ("os_compute_api:os-flavor-extra-specs:update", f"rule:{ADMIN_API}",
     "Update one extra spec.", [("PUT", "/flavors/{flavor_id}/os-extra_specs/{key}")]),
    ("os_compute_api:os-flavor-extra-specs:delete", f"rule:{ADMIN_API}",
     "Delete one extra spec.", [("DELETE", "/flavors/{flavor_id}/os-extra_specs/{key}")]),
    # Images: glance's rule names.
    ("get_images", ANYONE, "List images.", [("GET", "/images")]),
    ("get_image", ANYONE, "Show an image.", [("GET", "/images/{image_id}")]),
    ("add_image", ANYONE, "Create an image.", [("POST", "/images")]),
    ("publicize_image", f"rule:{ADMIN_API}", "Create or make an image public.",
     [("POST", "/images"), ("PATCH", "/images/{image_id}")]),
    ("modify_image", f"rule:{ADMIN_OR_OWNER}", "Update an image.",
     [("PATCH", "/images/{image_id}")]),
    ("delete_image", f"rule:{ADMIN_OR_OWNER}", "Delete an image.",
     [("DELETE", "/images/{image_id}")]),
    ("os_compute_api:os-services:list", f"rule:{ADMIN_API}", "List compute services.",
     [("GET", "/os-services")]),
    ("os_compute_api:os-services:update", f"rule:{ADMIN_API}",
     "Enable, disable or force down a compute service.",
     [("PUT", "/os-services/{service_id}"), ("PUT", "/os-services/enable"),
      ("PUT", "/os-services/disable"), ("PUT", "/os-services/disable-log-reason"),
      ("PUT", "/os-services/force-down")]),
    ("os_compute_api:os-services:delete", f"rule:{ADMIN_API}", "Delete a compute service.",
     [("DELETE", "/os-services/{service_id}")]),
    ("os_compute_api:os-hypervisors:list", f"rule:{ADMIN_API}", "List hypervisors.",
     [("GET", "/os-hypervisors")]),
    ("os_compute_api:os-hypervisors:list-detail", f"rule:{ADMIN_API}",
     "List hypervisors with details.", [("GET", "/os-hypervisors/detail")]),
    ("os_compute_api:os-hypervisors:show", f"rule:{ADMIN_API}", "Show a hypervisor.",
     [("GET", "/os-hypervisors/{hypervisor_id}")]),
    ("os_compute_api:os-hypervisors:statistics", f"rule:{ADMIN_API}",
     "Show the hypervisors' summed statistics (before microversion 2.88).",
     [("GET", "/os-hypervisors/statistics")]),
    ("os_compute_api:os-hypervisors:uptime", f"rule:{ADMIN_API}",
     "Show a hypervisor's uptime (before microversion 2.88).",
     [("GET", "/os-hypervisors/{hypervisor_id}/uptime")]),
    ("os_compute_api:os-hypervisors:search", f"rule:{ADMIN_API}",
     "Search hypervisors by a host name pattern (before microversion 2.53).",
     [("GET", "/os-hypervisors/{hypervisor_hostname_pattern}/search")]),
    ("os_compute_api:os-hypervisors:servers", f"rule:{ADMIN_API}",
     "List the servers on hypervisors matching a host name pattern (before "
     "microversion 2.53).",
     [("GET", "/os-hypervisors/{hypervisor_hostname_pattern}/servers")]),
    ("os_compute_api:os-aggregates:index", f"rule:{ADMIN_API}", "List aggregates.",
     [("GET", "/os-aggregates")]),
    ("os_compute_api:os-aggregates:create", f"rule:{ADMIN_API}", "Create an aggregate.",
     [("POST", "/os-aggregates")]),
    ("os_compute_api:os-aggregates:show", f"rule:{ADMIN_API}", "Show an aggregate.",
     [("GET", "/os-aggregates/{aggregate_id}")]),
    ("os_compute_api:os-aggregates:update", f"rule:{ADMIN_API}", "Update an aggregate.",
     [("PUT", "/os-aggregates/{aggregate_id}")]),
    ("os_compute_api:os-aggregates:delete", f"rule:{ADMIN_API}", "Delete an aggregate.",
     [("DELETE", "/os-aggregates/{aggregate_id}")]),
    ("os_compute_api:os-aggregates:add_host", f"rule:{ADMIN_API}",
     "Add a host to an aggregate.", [("POST", "/os-aggregates/{aggregate_id}/action")]),
    ("os_compute_api:os-aggregates:remove_host", f"rule:{ADMIN_API}",
     "Remove a host from an aggregate.", [("POST", "/os-aggregates/{aggregate_id}/action")]),
    ("os_compute_api:os-aggregates:set_metadata", f"rule:{ADMIN_API}",
     "Set an aggregate's metadata.", [("POST", "/os-aggregates/{aggregate_id}/action")]),
    ("os_compute_api:os-keypairs:index", ADMIN_OR_USER, "List a user's key pairs.",
     [("GET", "/os-keypairs")]),
    ("os_compute_api:os-keypairs:show", ADMIN_OR_USER, "Show a user's key pair.",
     [("GET", "/os-keypairs/{keypair_name}")]),
    ("os_compute_api:os-keypairs:create", ADMIN_OR_USER,
     "Create or import a key pair for a user.", [("POST", "/os-keypairs")]),
    ("os_compute_api:os-keypairs:delete", ADMIN_OR_USER, "Delete a user's key pair.",
     [("DELETE", "/os-keypairs/{keypair_name}")]),
    ("os_compute_api:os-availability-zone:list", ANYONE,
     "List the availability zones, without their hosts.",
     [("GET", "/os-availability-zone")]),
    ("os_compute_api:os-availability-zone:detail", f"rule:{ADMIN_API}",
     "List the availability zones with their hosts and services.",
     [("GET", "/os-availability-zone/detail")]),
    ("moorage:capabilities:index", ANYONE,
     "List the capabilities the cloud offers, as standard traits with host counts at or "
     "above [api] capability_host_floor; never a host's name.",
     [("GET", "/capabilities")]),
    ("os_compute_api:os-migrations:index", f"rule:{ADMIN_API}", "List migrations.",
     [("GET", "/os-migrations")]),
    ("os_compute_api:servers:index", f"rule:{ADMIN_OR_OWNER}", "List servers.",
     [("GET", "/servers")]),
    ("os_compute_api:servers:index:get_all_tenants", f"rule:{ADMIN_API}",
     "List servers of every project.", [("GET", "/servers")]),
    ("os_compute_api:servers:detail", f"rule:{ADMIN_OR_OWNER}", "List servers in detail.",
     [("GET", "/servers/detail")]),
    ("os_compute_api:servers:detail:get_all_tenants", f"rule:{ADMIN_API}",
     "List servers of every project in detail.", [("GET", "/servers/detail")]),
    ("os_compute_api:servers:allow_all_filters", f"rule:{ADMIN_API}",
     "Filter server lists on every field, not only a user's (host, node, "
     "project_id with all_tenants, deleted...).",
     [("GET", "/servers"), ("GET", "/servers/detail")]),
    ("os_compute_api:servers:show", f"rule:{ADMIN_OR_OWNER}", "Show a server.",
     [("GET", "/servers/{server_id}")]),
    ("os_compute_api:servers:show:host_status", f"rule:{ADMIN_API}",
     "Show a server's host and its status.", [("GET", "/servers/{server_id}")]),
    ("os_compute_api:servers:update", f"rule:{ADMIN_OR_OWNER}", "Update a server.",
     [("PUT", "/servers/{server_id}")]),
    ("os_compute_api:servers:show:flavor-extra-specs", f"rule:{ADMIN_OR_OWNER}",
     "See the extra specs of a server's flavor (2.47 and later).",
     [("GET", "/servers/{server_id}"), ("GET", "/servers/detail")]),
    ("os_compute_api:os-extended-server-attributes", f"rule:{ADMIN_API}",
     "See a server's OS-EXT-SRV-ATTR fields (host, instance name, user data...).",
     [("GET", "/servers/{server_id}"), ("GET", "/servers/detail")]),
    ("os_compute_api:server-metadata:index", f"rule:{ADMIN_OR_OWNER}",
     "List a server's metadata.", [("GET", "/servers/{server_id}/metadata")]),
    ("os_compute_api:server-metadata:show", f"rule:{ADMIN_OR_OWNER}",
     "Show one metadata item of a server.", [("GET", "/servers/{server_id}/metadata/{key}")]),
    ("os_compute_api:server-metadata:create", f"rule:{ADMIN_OR_OWNER}",
     "Add or change metadata items of a server.",
     [("POST", "/servers/{server_id}/metadata")]),
    ("os_compute_api:server-metadata:update_all", f"rule:{ADMIN_OR_OWNER}",
     "Replace a server's metadata.", [("PUT", "/servers/{server_id}/metadata")]),
    ("os_compute_api:server-metadata:update", f"rule:{ADMIN_OR_OWNER}",
     "Create or replace one metadata item of a server.",
     [("PUT", "/servers/{server_id}/metadata/{key}")]),
    ("os_compute_api:server-metadata:delete", f"rule:{ADMIN_OR_OWNER}",
     "Delete one metadata item of a server.",
     [("DELETE", "/servers/{server_id}/metadata/{key}")]),
    ("os_compute_api:os-server-tags:index", f"rule:{ADMIN_OR_OWNER}",
     "List a server's tags.", [("GET", "/servers/{server_id}/tags")]),
    ("os_compute_api:os-server-tags:show", f"rule:{ADMIN_OR_OWNER}",
     "Check that a server has a tag.", [("GET", "/servers/{server_id}/tags/{tag}")]),
    ("os_compute_api:os-server-tags:update", f"rule:{ADMIN_OR_OWNER}",
     "Add a tag to a server.", [("PUT", "/servers/{server_id}/tags/{tag}")]),
    ("os_compute_api:os-server-tags:update_all", f"rule:{ADMIN_OR_OWNER}",
     "Replace a server's tags.", [("PUT", "/servers/{server_id}/tags")]),
    ("os_compute_api:os-server-tags:delete", f"rule:{ADMIN_OR_OWNER}",
     "Delete a tag of a server.", [("DELETE", "/servers/{server_id}/tags/{tag}")]),
    ("os_compute_api:os-server-tags:delete_all", f"rule:{ADMIN_OR_OWNER}",
     "Delete all of a server's tags.", [("DELETE", "/servers/{server_id}/tags")]),
    ("os_compute_api:servers:create", f"rule:{ADMIN_OR_OWNER}", "Create a server.",
     [("POST", "/servers")]),
    ("os_compute_api:servers:create:forced_host", f"rule:{ADMIN_API}",
     "Create a server on a chosen host.", [("POST", "/servers")]),
    ("os_compute_api:servers:delete", f"rule:{ADMIN_OR_OWNER}", "Delete a server.",
     [("DELETE", "/servers/{server_id}")]),
    ("os_compute_api:servers:rebuild", f"rule:{ADMIN_OR_OWNER}", "Rebuild a server.",
     [("POST", "/servers/{server_id}/action")]),
    ("os_compute_api:servers:resize", f"rule:{ADMIN_OR_OWNER}", "Resize a server.",
     [("POST", "/servers/{server_id}/action")]),
    ("os_compute_api:servers:confirm_resize", f"rule:{ADMIN_OR_OWNER}",
     "Confirm a resize.", [("POST", "/servers/{server_id}/action")]),
    ("os_compute_api:servers:revert_resize", f"rule:{ADMIN_OR_OWNER}",
     "Revert a resize.", [("POST", "/servers/{server_id}/action")]),
    ("os_compute_api:os-migrate-server:migrate", f"rule:{ADMIN_API}",
     "Cold migrate a server.", [("POST", "/servers/{server_id}/action")]),
    ("os_compute_api:os-evacuate", f"rule:{ADMIN_API}",
     "Evacuate a server from a down host.", [("POST", "/servers/{server_id}/action")]),
    ("os_compute_api:os-quota-sets:show", f"rule:{ADMIN_OR_OWNER}",
     "Show a project's (or a user's) quota limits.",
     [("GET", "/os-quota-sets/{project_id}")]),
    ("os_compute_api:os-quota-sets:detail", f"rule:{ADMIN_OR_OWNER}",
     "Show a project's quota limits with what is in use.",
     [("GET", "/os-quota-sets/{project_id}/detail")]),
    ("os_compute_api:os-quota-sets:defaults", ANYONE, "Show the default quota limits.",
     [("GET", "/os-quota-sets/{project_id}/defaults")]),
    ("os_compute_api:os-quota-sets:update", f"rule:{ADMIN_API}",
     "Set a project's (or a user's) quota limits.",
     [("PUT", "/os-quota-sets/{project_id}")]),
    ("os_compute_api:os-quota-sets:delete", f"rule:{ADMIN_API}",
     "Forget a project's (or a user's) own quota limits.",
     [("DELETE", "/os-quota-sets/{project_id}")]),
    ("os_compute_api:os-quota-class-sets:show", f"rule:{ADMIN_API}",
     "Show a quota class's limits (the class default: the defaults).",
     [("GET", "/os-quota-class-sets/{class_name}")]),
    ("os_compute_api:os-quota-class-sets:update", f"rule:{ADMIN_API}",
     "Set the default quota limits.", [("PUT", "/os-quota-class-sets/{class_name}")]),
    ("os_compute_api:limits", ANYONE, "Show the caller's project's limits and usage.",
     [("GET", "/limits")]),
    ("os_compute_api:limits:other_project", f"rule:{ADMIN_API}",
     "Show another project's limits and usage (?tenant_id=).", [("GET", "/limits")]),
    ("os_compute_api:os-simple-tenant-usage:show", f"rule:{ADMIN_OR_OWNER}",
     "Show a project's usage over a period.",
     [("GET", "/os-simple-tenant-usage/{tenant_id}")]),
    ("os_compute_api:os-simple-tenant-usage:list", f"rule:{ADMIN_API}",
     "Show every project's usage over a period.", [("GET", "/os-simple-tenant-usage")]),
    # Moorage's own: the dry run. The operation planned is authorized as well (create,
    # resize, migrate), and hosts are shown only under servers:show:host_status.
    ("moorage:scheduler:plan", f"rule:{ADMIN_OR_OWNER}",
     "Plan a boot, resize or cold migration without making it (the dry run).",
     [("POST", "/scheduler/plan")]),
)


# Moorage's own routes outside /v2.1.
SERVICE_RULES: tuple[tuple[str, str, str, list[tuple[str, str]]], ...] = (
    ("moorage:metrics", f"rule:{ADMIN_API}",
     "Read the service's metrics (Prometheus text format); [api] public_metrics opens "
     "them to anyone.", [("GET", "/metrics")]),
)


def list_rules() -> list[oslo_policy.RuleDefault]:
    """Every default rule; also the entry point for a policy sample."""
    return [
        *BASE_RULES,
        *(oslo_policy.DocumentedRuleDefault(
            name=name, check_str=check, description=description,
            operations=[{"method": m, "path": "/v2.1" + p} for m, p in operations])
          for name, check, description, operations in API_RULES),
        *(oslo_policy.DocumentedRuleDefault(
            name=name, check_str=check, description=description,
            operations=[{"method": m, "path": p} for m, p in operations])
          for name, check, description, operations in SERVICE_RULES),
    ]


class Policy:
    """The enforcer of one compute API process, its decisions remembered
    (``moorage.policy.CachedEnforcer``)."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self._cached = CachedEnforcer(conf, list_rules())

    def allows(self, rule: str, context: RequestContext,
               target: Mapping[str, PolicyValue] | None = None) -> bool:
        if target is None:
            target = {"project_id": context.project_id, "user_id": context.user_id}
        return self._cached.allows(rule, target, context.policy_values())

    def authorize(self, rule: str, context: RequestContext,
                  target: Mapping[str, PolicyValue] | None = None) -> None:
        """403 (Forbidden) unless ``context`` may perform ``rule`` on ``target``."""
        if not self.allows(rule, context, target):
            raise Forbidden(f"Policy doesn't allow {rule} to be performed.")
