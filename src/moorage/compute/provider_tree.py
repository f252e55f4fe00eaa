"""Keeping a node's provider tree in placement as its driver describes it.

For each provider of the tree (the node first, then its children): create it if
it is missing, make sure the CUSTOM_* classes and traits it needs exist, then
write its inventories and traits when they differ from what placement has.
Every write names the generation it was computed from; when another writer got
there first (409 placement.concurrent_update), the provider is read again, the
change recomputed on top of what is there now, and written again, so nobody's
change is lost. Children the driver no longer reports are deleted.
"""

from __future__ import annotations

import logging
import uuid as uuidlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from moorage.compute.traits import desired_traits
from moorage.model.inventory import Inventory
from moorage.placement.client import PlacementClient, PlacementError, Provider, ProviderQuery
from moorage.virt.driver import NodeProvider
from moorage.virt.report import TraitReport
from moorage.virt.traits import is_custom

LOG = logging.getLogger(__name__)

# Provider uuids are derived from provider names, so a restarted agent finds its own.
PROVIDER_NAMESPACE = uuidlib.UUID("8d6a0f2e-5b8e-4d55-9a52-6f0c2b7e1d41")
# How many times a write is recomputed after another writer's change.
MAX_ATTEMPTS = 8

_T = TypeVar("_T")


def provider_uuid(name: str) -> str:
    return str(uuidlib.uuid5(PROVIDER_NAMESPACE, name))


@dataclass
class ProviderChange:
    """What one sync changed on one provider."""

    name: str
    uuid: str
    created: bool = False
    inventories_written: bool = False
    added_traits: frozenset[str] = frozenset()
    removed_traits: frozenset[str] = frozenset()
    retries: int = 0
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = []
        if self.created:
            parts.append("created")
        if self.inventories_written:
            parts.append("inventories written")
        if self.added_traits:
            parts.append("+" + ",".join(sorted(self.added_traits)))
        if self.removed_traits:
            parts.append("-" + ",".join(sorted(self.removed_traits)))
        if self.retries:
            parts.append(f"{self.retries} retries after concurrent updates")
        parts.extend(self.problems)
        return f"{self.name}: " + ("; ".join(parts) if parts else "unchanged")


def _retrying(change: ProviderChange, attempt: Callable[[], _T]) -> _T:
    """Run ``attempt`` until it is not beaten by a concurrent update."""
    for number in range(MAX_ATTEMPTS):
        try:
            return attempt()
        except PlacementError as exc:
            if not exc.concurrent_update or number == MAX_ATTEMPTS - 1:
                raise
            change.retries += 1
    raise AssertionError("unreachable")


class ProviderTreeSync:
    """Writes a node's providers to placement."""

    def __init__(self, placement: PlacementClient) -> None:
        self.placement = placement

    def sync(
        self,
        tree: Sequence[NodeProvider],
        node_reports: Sequence[TraitReport],
        *,
        disabled: bool,
    ) -> list[ProviderChange]:
        """Make placement hold ``tree``; the node (``tree[0]``) gets ``node_reports``."""
        changes: list[ProviderChange] = []
        uuids: dict[str, str] = {}
        for index, spec in enumerate(tree):
            is_node = index == 0
            parent_uuid = uuids.get(spec.parent) if spec.parent else None
            provider, created = self._ensure_provider(spec.name, parent_uuid)
            uuids[spec.name] = provider.uuid
            change = ProviderChange(spec.name, provider.uuid, created=created)
            reports = list(node_reports) if is_node else list(spec.reports)
            self._ensure_custom_names(spec.inventories, reports)
            self._write_inventories(change, spec.inventories)
            self._write_traits(change, reports, compute_node=is_node,
                               disabled=disabled if is_node else None)
            changes.append(change)
        if tree:
            self._remove_stale_children(uuids[tree[0].name], set(uuids.values()), changes)
        return changes

    # -- providers ------------------------------------------------------------
    def _ensure_provider(self, name: str, parent_uuid: str | None) -> tuple[Provider, bool]:
        found = self.placement.providers(ProviderQuery(name=name))
        if found:
            provider = found[0]
            if provider.parent_uuid != parent_uuid:
                LOG.warning("provider %s has parent %s in placement, the driver says %s; "
                            "left as it is", name, provider.parent_uuid, parent_uuid)
            return provider, False
        try:
            return self.placement.create_provider(name, provider_uuid(name), parent_uuid), True
        except PlacementError as exc:
            if exc.status != 409:
                raise
            # Created meanwhile by someone else (a second agent starting): use it.
            return self.placement.providers(ProviderQuery(name=name))[0], False

    def _ensure_custom_names(self, inventories: Mapping[str, Inventory],
                             reports: Sequence[TraitReport]) -> None:
        for rc in inventories:
            if is_custom(rc):
                self.placement.ensure_resource_class(rc)
        for report in reports:
            if report.supported and is_custom(report.trait):
                self.placement.ensure_trait(report.trait)

    def _remove_stale_children(self, root_uuid: str, wanted: set[str],
                               changes: list[ProviderChange]) -> None:
        in_tree = self.placement.providers(ProviderQuery(in_tree=root_uuid))
        # Deepest first, so a parent is never deleted before its children.
        depth = {p.uuid: 0 for p in in_tree}
        parents = {p.uuid: p.parent_uuid for p in in_tree}
        for p in in_tree:
            node, level = p.uuid, 0
            while parents.get(node):
                node, level = parents[node] or "", level + 1
            depth[p.uuid] = level
        for stale in sorted((p for p in in_tree if p.uuid not in wanted),
                            key=lambda p: -depth[p.uuid]):
            try:
                self.placement.request("DELETE", f"/resource_providers/{stale.uuid}")
                changes.append(ProviderChange(stale.name, stale.uuid, problems=["deleted"]))
            except PlacementError as exc:
                LOG.warning("could not delete provider %s the driver no longer reports: %s",
                            stale.name, exc)

    # -- inventories and traits ----------------------------------------------------
    def _write_inventories(self, change: ProviderChange,
                           inventories: Mapping[str, Inventory]) -> None:
        def attempt() -> bool:
            current = self.placement.inventories_with_generation(change.uuid)
            if current[0] == dict(inventories):
                return False
            self.placement.set_inventories(change.uuid, current[1], inventories)
            return True

        try:
            change.inventories_written = _retrying(change, attempt)
        except PlacementError as exc:
            if exc.status != 409:
                raise
            # Typically a class still in use that the driver stopped offering.
            change.problems.append(f"inventories not written: {exc}")
            LOG.warning("provider %s: %s", change.name, exc)

    def _write_traits(self, change: ProviderChange, reports: Sequence[TraitReport], *,
                      compute_node: bool, disabled: bool | None) -> None:
        def attempt() -> tuple[frozenset[str], frozenset[str]]:
            current, generation = self.placement.provider_traits(change.uuid)
            wanted = desired_traits(current, reports, compute_node=compute_node,
                                    disabled=disabled)
            if wanted == current:
                return frozenset(), frozenset()
            self.placement.set_traits(change.uuid, generation, wanted)
            return frozenset(wanted - current), frozenset(current - wanted)

        change.added_traits, change.removed_traits = _retrying(change, attempt)
