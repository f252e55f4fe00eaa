"""Authorization with oslo.policy, under nova's rule names where nova has the API.

Defaults are nova's current ones, by persona (``nova/policies/base.py``): a project's
``reader`` reads its servers (``project_reader_or_admin``), its ``member`` creates,
changes and deletes them (``project_member_or_admin``), and the ``admin`` administers
(``context_is_admin``): flavors, aggregates, services, hypervisors, forced hosts,
moves and every project's servers. Anyone reads flavors, images and availability
zones; a key pair is its user's. Keystone adds implied roles to its tokens (admin
implies member, member implies reader), so a member reads too. Two of nova's
defaults wait for the finer rules nova pairs them with: listing migrations and cold
migrating are ``project_manager_or_admin`` in nova, which also has
``os-migrations:index:all_projects`` and ``os-migrate-server:migrate:host`` for the
administrator's part; Moorage has neither, so both stay the administrator's.
Operators override rules in ``[oslo_policy] policy_file`` as they do for nova.
"""

from __future__ import annotations

from collections.abc import Mapping

from oslo_config import cfg
from oslo_policy import policy as oslo_policy

from moorage.api.context import RequestContext
from moorage.api.errors import Forbidden
from moorage.policy import CachedEnforcer, PolicyValue

# nova's legacy rules, kept (as nova keeps them) for policy files that name them.
ADMIN_API = "admin_api"
ADMIN_OR_OWNER = "admin_or_owner"
# The personas, as nova/policies/base.py names them.
ADMIN = "rule:context_is_admin"
PROJECT_MANAGER_OR_ADMIN = "rule:project_manager_or_admin"
PROJECT_MEMBER_OR_ADMIN = "rule:project_member_or_admin"
PROJECT_READER_OR_ADMIN = "rule:project_reader_or_admin"
# A user's own resources (key pairs belong to a user, not to a project).
ADMIN_OR_USER = f"({ADMIN}) or user_id:%(user_id)s"
ANYONE = "@"

BASE_RULES = (
    oslo_policy.RuleDefault("context_is_admin", "role:admin",
                            description="Decides what is an administrator."),
    oslo_policy.RuleDefault(ADMIN_OR_OWNER, "is_admin:True or project_id:%(project_id)s",
                            description="nova's legacy rule for a project's resources "
                            "(no default names it)."),
    oslo_policy.RuleDefault(ADMIN_API, "is_admin:True",
                            description="nova's legacy rule for administrative APIs (no "
                            "default names it)."),
    oslo_policy.RuleDefault("project_manager_api",
                            "role:manager and project_id:%(project_id)s",
                            description="A manager of the resource's project."),
    oslo_policy.RuleDefault("project_member_api", "role:member and project_id:%(project_id)s",
                            description="A member of the resource's project."),
    oslo_policy.RuleDefault("project_reader_api", "role:reader and project_id:%(project_id)s",
                            description="A reader of the resource's project."),
    oslo_policy.RuleDefault("service_api", "role:service",
                            description="Another service of the cloud."),
    oslo_policy.RuleDefault("project_manager_or_admin",
                            "rule:project_manager_api or rule:context_is_admin",
                            description="A project's manager, or an administrator."),
    oslo_policy.RuleDefault("project_member_or_admin",
                            "rule:project_member_api or rule:context_is_admin",
                            description="A project's member, or an administrator: a "
                            "project's resources, written."),
    oslo_policy.RuleDefault("project_reader_or_admin",
                            "rule:project_reader_api or rule:context_is_admin",
                            description="A project's reader, or an administrator: a "
                            "project's resources, read."),
    oslo_policy.RuleDefault("service_or_admin", "rule:service_api or rule:context_is_admin",
                            description="Another service of the cloud, or an "
                            "administrator."),
)

# (rule name, default check, description, [(method, path), ...])
API_RULES: tuple[tuple[str, str, str, list[tuple[str, str]]], ...] = (
    ("os_compute_api:os-flavor-manage:create", ADMIN, "Create a flavor.",
     [("POST", "/flavors")]),
    ("os_compute_api:os-flavor-manage:update", ADMIN,
     "Change a flavor's description (from microversion 2.55).",
     [("PUT", "/flavors/{flavor_id}")]),
    ("os_compute_api:os-flavor-manage:delete", ADMIN, "Delete a flavor.",
     [("DELETE", "/flavors/{flavor_id}")]),
    ("os_compute_api:os-flavor-access", ADMIN,
     "List the projects a private flavor is shared with.",
     [("GET", "/flavors/{flavor_id}/os-flavor-access")]),
    ("os_compute_api:os-flavor-access:add_tenant_access", ADMIN,
     "Share a private flavor with a project.", [("POST", "/flavors/{flavor_id}/action")]),
    ("os_compute_api:os-flavor-access:remove_tenant_access", ADMIN,
     "Stop sharing a private flavor with a project.",
     [("POST", "/flavors/{flavor_id}/action")]),
    ("os_compute_api:os-flavor-extra-specs:index", PROJECT_READER_OR_ADMIN,
     "List a flavor's extra specs.",
     [("GET", "/flavors/{flavor_id}/os-extra_specs")]),
    ("os_compute_api:os-flavor-extra-specs:show", PROJECT_READER_OR_ADMIN,
     "Show one extra spec.",
     [("GET", "/flavors/{flavor_id}/os-extra_specs/{key}")]),
    ("os_compute_api:os-flavor-extra-specs:create", ADMIN,
     "Create extra specs.", [("POST", "/flavors/{flavor_id}/os-extra_specs")]),
    ("os_compute_api:os-flavor-extra-specs:update", ADMIN,
     "Update one extra spec.", [("PUT", "/flavors/{flavor_id}/os-extra_specs/{key}")]),
    ("os_compute_api:os-flavor-extra-specs:delete", ADMIN,
     "Delete one extra spec.", [("DELETE", "/flavors/{flavor_id}/os-extra_specs/{key}")]),
    # Images: glance's rule names.
    ("get_images", ANYONE, "List images.", [("GET", "/images")]),
    ("get_image", ANYONE, "Show an image, or its metadata.",
     [("GET", "/images/{image_id}"), ("GET", "/images/{image_id}/metadata"),
      ("GET", "/images/{image_id}/metadata/{key}")]),
    ("add_image", ANYONE, "Create an image.", [("POST", "/images")]),
    ("publicize_image", f"rule:{ADMIN_API}", "Create or make an image public.",
     [("POST", "/images"), ("PATCH", "/images/{image_id}")]),
    ("modify_image", f"rule:{ADMIN_OR_OWNER}", "Update an image, or its metadata.",
     [("PATCH", "/images/{image_id}"), ("POST", "/images/{image_id}/metadata"),
      ("PUT", "/images/{image_id}/metadata"), ("PUT", "/images/{image_id}/metadata/{key}"),
      ("DELETE", "/images/{image_id}/metadata/{key}")]),
    ("delete_image", f"rule:{ADMIN_OR_OWNER}", "Delete an image.",
     [("DELETE", "/images/{image_id}")]),
    ("os_compute_api:os-services:list", ADMIN, "List compute services.",
     [("GET", "/os-services")]),
    ("os_compute_api:os-services:update", ADMIN,
     "Enable, disable or force down a compute service.",
     [("PUT", "/os-services/{service_id}"), ("PUT", "/os-services/enable"),
      ("PUT", "/os-services/disable"), ("PUT", "/os-services/disable-log-reason"),
      ("PUT", "/os-services/force-down")]),
    ("os_compute_api:os-services:delete", ADMIN, "Delete a compute service.",
     [("DELETE", "/os-services/{service_id}")]),
    ("os_compute_api:os-hypervisors:list", ADMIN, "List hypervisors.",
     [("GET", "/os-hypervisors")]),
    ("os_compute_api:os-hypervisors:list-detail", ADMIN,
     "List hypervisors with details.", [("GET", "/os-hypervisors/detail")]),
    ("os_compute_api:os-hypervisors:show", ADMIN, "Show a hypervisor.",
     [("GET", "/os-hypervisors/{hypervisor_id}")]),
    ("os_compute_api:os-hypervisors:statistics", ADMIN,
     "Show the hypervisors' summed statistics (before microversion 2.88).",
     [("GET", "/os-hypervisors/statistics")]),
    ("os_compute_api:os-hypervisors:uptime", ADMIN,
     "Show a hypervisor's uptime (before microversion 2.88).",
     [("GET", "/os-hypervisors/{hypervisor_id}/uptime")]),
    ("os_compute_api:os-hypervisors:search", ADMIN,
     "Search hypervisors by a host name pattern (before microversion 2.53).",
     [("GET", "/os-hypervisors/{hypervisor_hostname_pattern}/search")]),
    ("os_compute_api:os-hypervisors:servers", ADMIN,
     "List the servers on hypervisors matching a host name pattern (before "
     "microversion 2.53).",
     [("GET", "/os-hypervisors/{hypervisor_hostname_pattern}/servers")]),
    ("os_compute_api:os-aggregates:index", ADMIN, "List aggregates.",
     [("GET", "/os-aggregates")]),
    ("os_compute_api:os-aggregates:create", ADMIN, "Create an aggregate.",
     [("POST", "/os-aggregates")]),
    ("os_compute_api:os-aggregates:show", ADMIN, "Show an aggregate.",
     [("GET", "/os-aggregates/{aggregate_id}")]),
    ("os_compute_api:os-aggregates:update", ADMIN, "Update an aggregate.",
     [("PUT", "/os-aggregates/{aggregate_id}")]),
    ("os_compute_api:os-aggregates:delete", ADMIN, "Delete an aggregate.",
     [("DELETE", "/os-aggregates/{aggregate_id}")]),
    ("os_compute_api:os-aggregates:add_host", ADMIN,
     "Add a host to an aggregate.", [("POST", "/os-aggregates/{aggregate_id}/action")]),
    ("os_compute_api:os-aggregates:remove_host", ADMIN,
     "Remove a host from an aggregate.", [("POST", "/os-aggregates/{aggregate_id}/action")]),
    ("os_compute_api:os-aggregates:set_metadata", ADMIN,
     "Set an aggregate's metadata.", [("POST", "/os-aggregates/{aggregate_id}/action")]),
    ("os_compute_api:os-keypairs:index", ADMIN_OR_USER, "List a user's key pairs.",
     [("GET", "/os-keypairs")]),
    ("os_compute_api:os-keypairs:show", ADMIN_OR_USER, "Show a user's key pair.",
     [("GET", "/os-keypairs/{keypair_name}")]),
    ("os_compute_api:os-keypairs:create", ADMIN_OR_USER,
     "Create or import a key pair for a user.", [("POST", "/os-keypairs")]),
    ("os_compute_api:os-keypairs:delete", ADMIN_OR_USER, "Delete a user's key pair.",
     [("DELETE", "/os-keypairs/{keypair_name}")]),
    ("os_compute_api:os-server-groups:create", PROJECT_MEMBER_OR_ADMIN,
     "Create a server group.", [("POST", "/os-server-groups")]),
    ("os_compute_api:os-server-groups:delete", PROJECT_MEMBER_OR_ADMIN,
     "Delete a server group.", [("DELETE", "/os-server-groups/{server_group_id}")]),
    ("os_compute_api:os-server-groups:index", PROJECT_READER_OR_ADMIN,
     "List a project's server groups.", [("GET", "/os-server-groups")]),
    ("os_compute_api:os-server-groups:index:all_projects", ADMIN,
     "List the server groups of every project.", [("GET", "/os-server-groups")]),
    ("os_compute_api:os-server-groups:show", PROJECT_READER_OR_ADMIN,
     "Show a server group.", [("GET", "/os-server-groups/{server_group_id}")]),
    ("os_compute_api:os-availability-zone:list", ANYONE,
     "List the availability zones, without their hosts.",
     [("GET", "/os-availability-zone")]),
    ("os_compute_api:os-availability-zone:detail", ADMIN,
     "List the availability zones with their hosts and services.",
     [("GET", "/os-availability-zone/detail")]),
    ("moorage:capabilities:index", ANYONE,
     "List the capabilities the cloud offers, as standard traits with host counts at or "
     "above [api] capability_host_floor; never a host's name.",
     [("GET", "/capabilities")]),
    ("os_compute_api:os-migrations:index", ADMIN, "List migrations.",
     [("GET", "/os-migrations")]),
    ("os_compute_api:servers:index", PROJECT_READER_OR_ADMIN, "List servers.",
     [("GET", "/servers")]),
    ("os_compute_api:servers:index:get_all_tenants", ADMIN,
     "List servers of every project.", [("GET", "/servers")]),
    ("os_compute_api:servers:detail", PROJECT_READER_OR_ADMIN, "List servers in detail.",
     [("GET", "/servers/detail")]),
    ("os_compute_api:servers:detail:get_all_tenants", ADMIN,
     "List servers of every project in detail.", [("GET", "/servers/detail")]),
    ("os_compute_api:servers:allow_all_filters", ADMIN,
     "Filter server lists on every field, not only a user's (host, node, "
     "project_id with all_tenants, deleted...).",
     [("GET", "/servers"), ("GET", "/servers/detail")]),
    ("os_compute_api:servers:show", PROJECT_READER_OR_ADMIN, "Show a server.",
     [("GET", "/servers/{server_id}")]),
    ("os_compute_api:servers:show:host_status", ADMIN,
     "Show a server's host and its status.", [("GET", "/servers/{server_id}")]),
    ("os_compute_api:servers:update", PROJECT_MEMBER_OR_ADMIN, "Update a server.",
     [("PUT", "/servers/{server_id}")]),
    ("os_compute_api:servers:show:flavor-extra-specs", PROJECT_READER_OR_ADMIN,
     "See the extra specs of a server's flavor (2.47 and later).",
     [("GET", "/servers/{server_id}"), ("GET", "/servers/detail")]),
    ("os_compute_api:os-extended-server-attributes", ADMIN,
     "See a server's OS-EXT-SRV-ATTR fields (host, instance name, user data...).",
     [("GET", "/servers/{server_id}"), ("GET", "/servers/detail")]),
    ("os_compute_api:ips:index", PROJECT_READER_OR_ADMIN,
     "List a server's addresses (none: Moorage has no network service).",
     [("GET", "/servers/{server_id}/ips")]),
    ("os_compute_api:ips:show", PROJECT_READER_OR_ADMIN,
     "Show a server's addresses on one network.",
     [("GET", "/servers/{server_id}/ips/{network}")]),
    ("os_compute_api:os-attach-interfaces:list", PROJECT_READER_OR_ADMIN,
     "List a server's network interfaces (none: Moorage has no network service).",
     [("GET", "/servers/{server_id}/os-interface")]),
    ("os_compute_api:os-attach-interfaces:create", PROJECT_MEMBER_OR_ADMIN,
     "Attach a network interface to a server (refused: no network service).",
     [("POST", "/servers/{server_id}/os-interface")]),
    ("os_compute_api:os-volumes-attachments:index", PROJECT_READER_OR_ADMIN,
     "List a server's volume attachments (none: Moorage has no volume service).",
     [("GET", "/servers/{server_id}/os-volume_attachments")]),
    ("os_compute_api:os-volumes-attachments:create", PROJECT_MEMBER_OR_ADMIN,
     "Attach a volume to a server (refused: no volume service).",
     [("POST", "/servers/{server_id}/os-volume_attachments")]),
    ("os_compute_api:servers:migrations:index", PROJECT_MANAGER_OR_ADMIN,
     "List a server's live migrations in progress (2.23; none: Moorage makes none).",
     [("GET", "/servers/{server_id}/migrations")]),
    ("os_compute_api:servers:migrations:show", ADMIN,
     "Show a server's live migration in progress (2.23).",
     [("GET", "/servers/{server_id}/migrations/{migration_id}")]),
    ("os_compute_api:server-metadata:index", PROJECT_READER_OR_ADMIN,
     "List a server's metadata.", [("GET", "/servers/{server_id}/metadata")]),
    ("os_compute_api:server-metadata:show", PROJECT_READER_OR_ADMIN,
     "Show one metadata item of a server.", [("GET", "/servers/{server_id}/metadata/{key}")]),
    ("os_compute_api:server-metadata:create", PROJECT_MEMBER_OR_ADMIN,
     "Add or change metadata items of a server.",
     [("POST", "/servers/{server_id}/metadata")]),
    ("os_compute_api:server-metadata:update_all", PROJECT_MEMBER_OR_ADMIN,
     "Replace a server's metadata.", [("PUT", "/servers/{server_id}/metadata")]),
    ("os_compute_api:server-metadata:update", PROJECT_MEMBER_OR_ADMIN,
     "Create or replace one metadata item of a server.",
     [("PUT", "/servers/{server_id}/metadata/{key}")]),
    ("os_compute_api:server-metadata:delete", PROJECT_MEMBER_OR_ADMIN,
     "Delete one metadata item of a server.",
     [("DELETE", "/servers/{server_id}/metadata/{key}")]),
    ("os_compute_api:os-server-tags:index", PROJECT_READER_OR_ADMIN,
     "List a server's tags.", [("GET", "/servers/{server_id}/tags")]),
    ("os_compute_api:os-server-tags:show", PROJECT_READER_OR_ADMIN,
     "Check that a server has a tag.", [("GET", "/servers/{server_id}/tags/{tag}")]),
    ("os_compute_api:os-server-tags:update", PROJECT_MEMBER_OR_ADMIN,
     "Add a tag to a server.", [("PUT", "/servers/{server_id}/tags/{tag}")]),
    ("os_compute_api:os-server-tags:update_all", PROJECT_MEMBER_OR_ADMIN,
     "Replace a server's tags.", [("PUT", "/servers/{server_id}/tags")]),
    ("os_compute_api:os-server-tags:delete", PROJECT_MEMBER_OR_ADMIN,
     "Delete a tag of a server.", [("DELETE", "/servers/{server_id}/tags/{tag}")]),
    ("os_compute_api:os-server-tags:delete_all", PROJECT_MEMBER_OR_ADMIN,
     "Delete all of a server's tags.", [("DELETE", "/servers/{server_id}/tags")]),
    ("os_compute_api:os-instance-actions:list", PROJECT_READER_OR_ADMIN,
     "List the actions of a server.", [("GET", "/servers/{server_id}/os-instance-actions")]),
    ("os_compute_api:os-instance-actions:show", PROJECT_READER_OR_ADMIN,
     "Show an action of a server.",
     [("GET", "/servers/{server_id}/os-instance-actions/{request_id}")]),
    ("os_compute_api:os-instance-actions:events", ADMIN,
     "See an action's events before microversion 2.51, their traceback, and from 2.62 "
     "the host each ran on.",
     [("GET", "/servers/{server_id}/os-instance-actions/{request_id}")]),
    ("os_compute_api:os-instance-actions:events:details", ADMIN,
     "See what failed in an action's events (details, from microversion 2.84).",
     [("GET", "/servers/{server_id}/os-instance-actions/{request_id}")]),
    ("os_compute_api:servers:create", PROJECT_MEMBER_OR_ADMIN, "Create a server.",
     [("POST", "/servers")]),
    ("os_compute_api:servers:create:forced_host", ADMIN,
     "Create a server on a chosen host.", [("POST", "/servers")]),
    ("os_compute_api:servers:delete", PROJECT_MEMBER_OR_ADMIN, "Delete a server.",
     [("DELETE", "/servers/{server_id}")]),
    ("os_compute_api:servers:rebuild", PROJECT_MEMBER_OR_ADMIN, "Rebuild a server.",
     [("POST", "/servers/{server_id}/action")]),
    ("os_compute_api:servers:resize", PROJECT_MEMBER_OR_ADMIN, "Resize a server.",
     [("POST", "/servers/{server_id}/action")]),
    ("os_compute_api:servers:confirm_resize", PROJECT_MEMBER_OR_ADMIN,
     "Confirm a resize.", [("POST", "/servers/{server_id}/action")]),
    ("os_compute_api:servers:revert_resize", PROJECT_MEMBER_OR_ADMIN,
     "Revert a resize.", [("POST", "/servers/{server_id}/action")]),
    ("os_compute_api:os-migrate-server:migrate", ADMIN,
     "Cold migrate a server.", [("POST", "/servers/{server_id}/action")]),
    ("os_compute_api:os-evacuate", ADMIN,
     "Evacuate a server from a down host.", [("POST", "/servers/{server_id}/action")]),
    ("os_compute_api:servers:start", PROJECT_MEMBER_OR_ADMIN, "Start a server.",
     [("POST", "/servers/{server_id}/action (os-start)")]),
    ("os_compute_api:servers:stop", PROJECT_MEMBER_OR_ADMIN, "Stop a server.",
     [("POST", "/servers/{server_id}/action (os-stop)")]),
    ("os_compute_api:servers:reboot", PROJECT_MEMBER_OR_ADMIN, "Reboot a server.",
     [("POST", "/servers/{server_id}/action (reboot)")]),
    ("os_compute_api:os-security-groups:add", PROJECT_MEMBER_OR_ADMIN,
     "Add a security group to a server.",
     [("POST", "/servers/{server_id}/action (addSecurityGroup)")]),
    ("os_compute_api:os-security-groups:remove", PROJECT_MEMBER_OR_ADMIN,
     "Remove a security group from a server.",
     [("POST", "/servers/{server_id}/action (removeSecurityGroup)")]),
    ("os_compute_api:os-deferred-delete:restore", PROJECT_MEMBER_OR_ADMIN,
     "Restore a soft-deleted server.", [("POST", "/servers/{server_id}/action (restore)")]),
    ("os_compute_api:os-deferred-delete:force", PROJECT_MEMBER_OR_ADMIN,
     "Force-delete a soft-deleted server.",
     [("POST", "/servers/{server_id}/action (forceDelete)")]),
    ("os_compute_api:os-lock-server:lock", PROJECT_MEMBER_OR_ADMIN, "Lock a server.",
     [("POST", "/servers/{server_id}/action (lock)")]),
    ("os_compute_api:os-lock-server:unlock", PROJECT_MEMBER_OR_ADMIN,
     "Unlock a server.", [("POST", "/servers/{server_id}/action (unlock)")]),
    ("os_compute_api:os-lock-server:unlock:unlock_override", ADMIN,
     "Unlock a server locked by someone else (an admin's lock, for its owner).",
     [("POST", "/servers/{server_id}/action (unlock)")]),
    ("os_compute_api:os-admin-actions:reset_state", ADMIN,
     "Reset a server's state to active or error.",
     [("POST", "/servers/{server_id}/action (os-resetState)")]),
    ("os_compute_api:os-console-output", PROJECT_MEMBER_OR_ADMIN,
     "Show a server's console output.",
     [("POST", "/servers/{server_id}/action (os-getConsoleOutput)")]),
    ("os_compute_api:os-quota-sets:show", PROJECT_READER_OR_ADMIN,
     "Show a project's (or a user's) quota limits.",
     [("GET", "/os-quota-sets/{project_id}")]),
    ("os_compute_api:os-quota-sets:detail", PROJECT_READER_OR_ADMIN,
     "Show a project's quota limits with what is in use.",
     [("GET", "/os-quota-sets/{project_id}/detail")]),
    ("os_compute_api:os-quota-sets:defaults", ANYONE, "Show the default quota limits.",
     [("GET", "/os-quota-sets/{project_id}/defaults")]),
    ("os_compute_api:os-quota-sets:update", ADMIN,
     "Set a project's (or a user's) quota limits.",
     [("PUT", "/os-quota-sets/{project_id}")]),
    ("os_compute_api:os-quota-sets:delete", ADMIN,
     "Forget a project's (or a user's) own quota limits.",
     [("DELETE", "/os-quota-sets/{project_id}")]),
    ("os_compute_api:os-quota-class-sets:show", ADMIN,
     "Show a quota class's limits (the class default: the defaults).",
     [("GET", "/os-quota-class-sets/{class_name}")]),
    ("os_compute_api:os-quota-class-sets:update", ADMIN,
     "Set the default quota limits.", [("PUT", "/os-quota-class-sets/{class_name}")]),
    ("os_compute_api:limits", ANYONE, "Show the caller's project's limits and usage.",
     [("GET", "/limits")]),
    ("os_compute_api:limits:other_project", ADMIN,
     "Show another project's limits and usage (?tenant_id=).", [("GET", "/limits")]),
    ("os_compute_api:os-simple-tenant-usage:show", PROJECT_READER_OR_ADMIN,
     "Show a project's usage over a period.",
     [("GET", "/os-simple-tenant-usage/{tenant_id}")]),
    ("os_compute_api:os-simple-tenant-usage:list", ADMIN,
     "Show every project's usage over a period.", [("GET", "/os-simple-tenant-usage")]),
    # Moorage's own: the dry run. The operation planned is authorized as well (create,
    # resize, migrate), and hosts are shown only under servers:show:host_status.
    ("moorage:scheduler:plan", PROJECT_MEMBER_OR_ADMIN,
     "Plan a boot, resize or cold migration without making it (the dry run).",
     [("POST", "/scheduler/plan")]),
    ("moorage:scheduler:hosts", ADMIN,
     "List the compute hosts with what each node's driver reports unsupported.",
     [("GET", "/scheduler/hosts")]),
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
        return self._cached.allows(rule, target, context)

    def authorize(self, rule: str, context: RequestContext,
                  target: Mapping[str, PolicyValue] | None = None) -> None:
        """403 (Forbidden) unless ``context`` may perform ``rule`` on ``target``."""
        if not self.allows(rule, context, target):
            raise Forbidden(f"Policy doesn't allow {rule} to be performed.")
