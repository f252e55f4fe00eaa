"""Mirror host aggregates into placement, as nova does: a host's compute node providers
are members of the placement aggregate whose uuid is the host aggregate's uuid.

Membership is changed one aggregate at a time (read, change, write with the generation
read; again when another writer moved the generation), so aggregates other tools set on
the same providers are left alone. A host without providers in placement yet is not an
error (its agent may not have reported); it is logged and returned, for the response.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from moorage.placement.client import PlacementClient, PlacementError, ProviderQuery

LOG = logging.getLogger(__name__)
_ATTEMPTS = 5


def _change(placement: PlacementClient, provider_uuid: str, aggregate_uuid: str,
            member: bool) -> None:
    for _ in range(_ATTEMPTS):
        current, generation = placement.aggregates_with_generation(provider_uuid)
        wanted = current | {aggregate_uuid} if member else current - {aggregate_uuid}
        if wanted == current:
            return
        try:
            placement.set_aggregates(provider_uuid, generation, wanted)
            return
        except PlacementError as exc:
            if not exc.concurrent_update:
                raise
    raise PlacementError(f"provider {provider_uuid}: its aggregates kept changing; "
                         f"gave up after {_ATTEMPTS} attempts")


def set_membership(placement: PlacementClient, nodes: Sequence[str], aggregate_uuid: str,
                   member: bool) -> list[str]:
    """Add (or remove) the providers named ``nodes`` to (from) a placement aggregate.
    Returns the nodes that have no provider in placement."""
    missing = []
    for node in nodes:
        found = placement.providers(ProviderQuery(name=node))
        if not found:
            LOG.warning("no resource provider named %s in placement: aggregate %s not %s "
                        "it; it will be when the host's agent has reported", node,
                        aggregate_uuid, "set on" if member else "removed from")
            missing.append(node)
            continue
        _change(placement, found[0].uuid, aggregate_uuid, member)
    return missing
