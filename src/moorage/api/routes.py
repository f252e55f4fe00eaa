"""The route table: URL -> {method: handler}. The whole compute API at a glance.

User routes live under /v2.1; /internal/ is for the compute agents (service token);
/ and /openapi.json are public; /metrics is the operator's Prometheus's (admin, or public
under ``[api] public_metrics``). A method not listed gets 405 with an Allow header.
"""

from __future__ import annotations

from moorage.api import openapi
from moorage.api.handlers import (
    aggregates,
    availability_zones,
    capabilities,
    flavor_access,
    flavors,
    heartbeats,
    hypervisors,
    image_metadata,
    images,
    instance_actions,
    keypairs,
    limits,
    metrics,
    migrations,
    plans,
    quota_sets,
    server_attachments,
    server_groups,
    server_metadata,
    server_migrations,
    server_tags,
    servers,
    services,
    tenant_usage,
    versions,
)
from moorage.api.http import Handler

ROUTES: dict[str, dict[str, Handler]] = {
    "/": {"GET": versions.versions},
    "/openapi.json": {"GET": openapi.serving(lambda: ROUTES)},
    "/v2.1": {"GET": versions.version_v21},
    "/v2.1/flavors": {"GET": flavors.list_flavors, "POST": flavors.create_flavor},
    "/v2.1/flavors/detail": {"GET": flavors.list_flavors_detail},
    "/v2.1/flavors/{flavor_id}": {
        "GET": flavors.show_flavor,
        "PUT": flavors.update_flavor,
        "DELETE": flavors.delete_flavor,
    },
    "/v2.1/flavors/{flavor_id}/action": {"POST": flavor_access.flavor_action},
    "/v2.1/flavors/{flavor_id}/os-flavor-access": {"GET": flavor_access.list_flavor_access},
    "/v2.1/flavors/{flavor_id}/os-extra_specs": {
        "GET": flavors.list_extra_specs,
        "POST": flavors.create_extra_specs,
    },
    "/v2.1/flavors/{flavor_id}/os-extra_specs/{key}": {
        "GET": flavors.show_extra_spec,
        "PUT": flavors.update_extra_spec,
        "DELETE": flavors.delete_extra_spec,
    },
    # Nova's image proxy (reads, before 2.36), and Moorage's legacy writes.
    "/v2.1/images": {"GET": images.list_images, "POST": images.create_image},
    "/v2.1/images/detail": {"GET": images.list_images_detail},
    "/v2.1/images/{image_id}": {
        "GET": images.show_image,
        "PATCH": images.update_image,
        "DELETE": images.delete_image,
    },
    # Nova's image metadata proxy (before 2.39): the image's properties.
    "/v2.1/images/{image_id}/metadata": {
        "GET": image_metadata.list_image_metadata,
        "POST": image_metadata.create_image_metadata,
        "PUT": image_metadata.replace_image_metadata,
    },
    "/v2.1/images/{image_id}/metadata/{key}": {
        "GET": image_metadata.show_image_metadata_item,
        "PUT": image_metadata.update_image_metadata_item,
        "DELETE": image_metadata.delete_image_metadata_item,
    },
    "/v2.1/servers": {"GET": servers.list_servers, "POST": servers.create_server},
    "/v2.1/servers/detail": {"GET": servers.list_servers_detail},
    "/v2.1/servers/{server_id}": {
        "GET": servers.show_server,
        "PUT": servers.update_server,
        "DELETE": servers.delete_server,
    },
    "/v2.1/servers/{server_id}/action": {"POST": servers.server_action},
    "/v2.1/servers/{server_id}/os-instance-actions": {
        "GET": instance_actions.list_instance_actions},
    "/v2.1/servers/{server_id}/os-instance-actions/{request_id}": {
        "GET": instance_actions.show_instance_action},
    "/v2.1/servers/{server_id}/metadata": {
        "GET": server_metadata.list_server_metadata,
        "POST": server_metadata.create_server_metadata,
        "PUT": server_metadata.replace_server_metadata,
    },
    "/v2.1/servers/{server_id}/metadata/{key}": {
        "GET": server_metadata.show_server_metadata_item,
        "PUT": server_metadata.update_server_metadata_item,
        "DELETE": server_metadata.delete_server_metadata_item,
    },
    "/v2.1/servers/{server_id}/tags": {
        "GET": server_tags.list_server_tags,
        "PUT": server_tags.replace_server_tags,
        "DELETE": server_tags.delete_server_tags,
    },
    "/v2.1/servers/{server_id}/tags/{tag}": {
        "GET": server_tags.check_server_tag,
        "PUT": server_tags.add_server_tag,
        "DELETE": server_tags.delete_server_tag,
    },
    # Without a network or a volume service a server has neither (server_attachments).
    "/v2.1/servers/{server_id}/ips": {"GET": server_attachments.list_addresses},
    "/v2.1/servers/{server_id}/ips/{network}": {
        "GET": server_attachments.show_network_addresses},
    "/v2.1/servers/{server_id}/os-interface": {
        "GET": server_attachments.list_interfaces,
        "POST": server_attachments.attach_interface,
    },
    "/v2.1/servers/{server_id}/os-volume_attachments": {
        "GET": server_attachments.list_volume_attachments,
        "POST": server_attachments.attach_volume,
    },
    "/v2.1/servers/{server_id}/migrations": {
        "GET": server_migrations.list_server_migrations},
    "/v2.1/servers/{server_id}/migrations/{migration_id}": {
        "GET": server_migrations.show_server_migration},
    "/v2.1/capabilities": {"GET": capabilities.list_capabilities},
    "/v2.1/os-migrations": {"GET": migrations.list_migrations},
    # Moorage: the dry run of a boot, resize or migration (claims nothing).
    "/v2.1/scheduler/plan": {"POST": plans.plan},
    "/v2.1/scheduler/hosts": {"GET": plans.hosts},
    "/v2.1/os-services": {"GET": services.list_services},
    # {service_id}: an action (enable, disable, ...) before 2.53, a uuid from 2.53.
    "/v2.1/os-services/{service_id}": {
        "PUT": services.update_service,
        "DELETE": services.delete_service,
    },
    "/v2.1/os-hypervisors": {"GET": hypervisors.list_hypervisors},
    "/v2.1/os-hypervisors/detail": {"GET": hypervisors.list_hypervisors_detail},
    "/v2.1/os-hypervisors/statistics": {"GET": hypervisors.hypervisor_statistics},
    "/v2.1/os-hypervisors/{hypervisor_id}": {"GET": hypervisors.show_hypervisor},
    "/v2.1/os-hypervisors/{hypervisor_id}/uptime": {"GET": hypervisors.hypervisor_uptime},
    "/v2.1/os-hypervisors/{hypervisor_hostname_pattern}/search": {
        "GET": hypervisors.search_hypervisors},
    "/v2.1/os-hypervisors/{hypervisor_hostname_pattern}/servers": {
        "GET": hypervisors.hypervisor_servers},
    "/v2.1/os-aggregates": {
        "GET": aggregates.list_aggregates,
        "POST": aggregates.create_aggregate,
    },
    "/v2.1/os-aggregates/{aggregate_id}": {
        "GET": aggregates.show_aggregate,
        "PUT": aggregates.update_aggregate,
        "DELETE": aggregates.delete_aggregate,
    },
    "/v2.1/os-aggregates/{aggregate_id}/action": {"POST": aggregates.aggregate_action},
    "/v2.1/os-keypairs": {"GET": keypairs.list_keypairs, "POST": keypairs.create_keypair},
    "/v2.1/os-keypairs/{keypair_name}": {
        "GET": keypairs.show_keypair,
        "DELETE": keypairs.delete_keypair,
    },
    "/v2.1/os-server-groups": {
        "GET": server_groups.list_server_groups,
        "POST": server_groups.create_server_group,
    },
    "/v2.1/os-server-groups/{server_group_id}": {
        "GET": server_groups.show_server_group,
        "DELETE": server_groups.delete_server_group,
    },
    "/v2.1/os-quota-sets/{project_id}": {
        "GET": quota_sets.show_quota_set,
        "PUT": quota_sets.update_quota_set,
        "DELETE": quota_sets.delete_quota_set,
    },
    "/v2.1/os-quota-sets/{project_id}/defaults": {"GET": quota_sets.show_quota_set_defaults},
    "/v2.1/os-quota-sets/{project_id}/detail": {"GET": quota_sets.show_quota_set_detail},
    "/v2.1/os-quota-class-sets/{class_name}": {
        "GET": quota_sets.show_quota_class_set,
        "PUT": quota_sets.update_quota_class_set,
    },
    "/v2.1/limits": {"GET": limits.show_limits},
    "/v2.1/os-simple-tenant-usage": {"GET": tenant_usage.list_tenant_usages},
    "/v2.1/os-simple-tenant-usage/{tenant_id}": {"GET": tenant_usage.show_tenant_usage},
    "/v2.1/os-availability-zone": {"GET": availability_zones.list_availability_zones},
    "/v2.1/os-availability-zone/detail": {
        "GET": availability_zones.list_availability_zones_detail},
    "/internal/services": {"PUT": heartbeats.heartbeats},
    "/internal/services/{host}": {"PUT": heartbeats.heartbeat},
    "/metrics": {"GET": metrics.show_metrics},
}
