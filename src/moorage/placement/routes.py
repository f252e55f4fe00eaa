"""The route table: URL -> {method: handler}. The whole API at a glance.

A method not listed for a URL gets 405 with an Allow header; a handler marked
``@since(...)`` answers 404 (or 405) below its microversion.
"""

from __future__ import annotations

from moorage.placement.api import (
    aggregate,
    allocation,
    allocation_candidate,
    inventory,
    metrics,
    reshaper,
    resource_class,
    resource_provider,
    root,
    trait,
    usage,
)
from moorage.placement.http import Handler

ROUTES: dict[str, dict[str, Handler]] = {
    "/": {"GET": root.home},
    "": {"GET": root.home},
    "/resource_classes": {
        "GET": resource_class.list_classes,
        "POST": resource_class.create_class,
    },
    "/resource_classes/{name}": {
        "GET": resource_class.show_class,
        "PUT": resource_class.update_class,
        "DELETE": resource_class.delete_class,
    },
    "/resource_providers": {
        "GET": resource_provider.list_providers,
        "POST": resource_provider.create_provider,
    },
    "/resource_providers/{uuid}": {
        "GET": resource_provider.show_provider,
        "DELETE": resource_provider.delete_provider,
        "PUT": resource_provider.update_provider,
    },
    "/resource_providers/{uuid}/inventories": {
        "GET": inventory.list_inventories,
        "POST": inventory.create_inventory,
        "PUT": inventory.set_inventories,
        "DELETE": inventory.delete_inventories,
    },
    "/resource_providers/{uuid}/inventories/{resource_class}": {
        "GET": inventory.show_inventory,
        "PUT": inventory.update_inventory,
        "DELETE": inventory.delete_inventory,
    },
    "/resource_providers/{uuid}/usages": {"GET": usage.list_provider_usages},
    "/resource_providers/{uuid}/aggregates": {
        "GET": aggregate.list_aggregates,
        "PUT": aggregate.set_aggregates,
    },
    "/resource_providers/{uuid}/allocations": {"GET": allocation.list_provider_allocations},
    "/allocations": {"POST": allocation.set_allocations},
    "/allocations/{consumer_uuid}": {
        "GET": allocation.list_consumer_allocations,
        "PUT": allocation.set_consumer_allocations,
        "DELETE": allocation.delete_consumer_allocations,
    },
    "/allocation_candidates": {"GET": allocation_candidate.list_candidates},
    "/traits": {"GET": trait.list_traits},
    "/traits/{name}": {
        "GET": trait.show_trait,
        "PUT": trait.put_trait,
        "DELETE": trait.delete_trait,
    },
    "/resource_providers/{uuid}/traits": {
        "GET": trait.list_provider_traits,
        "PUT": trait.set_provider_traits,
        "DELETE": trait.delete_provider_traits,
    },
    "/usages": {"GET": usage.total_usages},
    "/reshaper": {"POST": reshaper.reshape},
    "/metrics": {"GET": metrics.show_metrics},
}
