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
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from moorage.compute.traits import STATUS_DISABLED, desired_traits
from moorage.model.inventory import Inventory
from moorage.model.vocabulary import is_custom
from moorage.placement.client import PlacementClient, PlacementError, Provider, ProviderQuery
from moorage.placement.provider_names import provider_uuid
from moorage.virt.driver import NodeProvider
from moorage.virt.report import TraitReport

LOG = logging.getLogger(__name__)

# How many times a write is recomputed after another writer's change.
MAX_ATTEMPTS = 8

_T = TypeVar("_T")


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

    @property
    def changed(self) -> bool:
        """Did the sync write anything, or meet a problem?"""
        return bool(self.created or self.inventories_written or self.added_traits
                    or self.removed_traits or self.retries or self.problems)

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


@dataclass
class _Known:
    """What this agent last wrote to (or read from) one provider: enough to write the
    next change with the right generation, and to know when there is none."""

    uuid: str
    generation: int
    inventories: dict[str, Inventory] | None = None  # None: not known, read first
    traits: frozenset[str] | None = None


class ProviderTreeSync:
    """Writes a node's providers to placement.

    It remembers what it wrote: a sync that finds the driver's report unchanged sends
    no request at all, which is what lets one process keep thousands of simulated
    hosts in placement (``fleet.py``). Another writer's change is noticed when a write
    names an old generation (409: read, recompute, write again) and at the full
    re-read every ``refresh_seconds`` (``[compute]
    resource_provider_association_refresh``, as upstream's resource tracker)."""

    def __init__(self, placement: PlacementClient, *, refresh_seconds: float = 0.0,
                 known_custom: set[str] | None = None) -> None:
        self.placement = placement
        self.refresh_seconds = refresh_seconds
        self._known: dict[str, _Known] = {}
        self._shapes: dict[str, frozenset[str]] = {}  # node -> the providers of its tree
        self._refreshed = time.monotonic()
        # CUSTOM_* traits and classes known to exist (shared by a fleet's hosts).
        self._custom = known_custom if known_custom is not None else set()

    def shows_disabled(self, node: str) -> bool | None:
        """Does ``node``'s provider hold COMPUTE_STATUS_DISABLED, as this agent last
        wrote or read its traits? None when it does not know."""
        known = self._known.get(node)
        if known is None or known.traits is None:
            return None
        return STATUS_DISABLED in known.traits

    def forget(self) -> None:
        """Read everything from placement again at the next sync."""
        self._known.clear()
        self._shapes.clear()
        self._refreshed = time.monotonic()

    def sync(
        self,
        tree: Sequence[NodeProvider],
        node_reports: Sequence[TraitReport],
        *,
        disabled: bool | None,
    ) -> list[ProviderChange]:
        """Make placement hold ``tree``; the node (``tree[0]``) gets ``node_reports``
        and COMPUTE_STATUS_DISABLED as ``disabled`` says (None: left as it is)."""
        if time.monotonic() - self._refreshed >= self.refresh_seconds:
            self.forget()
        changes: list[ProviderChange] = []
        uuids: dict[str, str] = {}
        for index, spec in enumerate(tree):
            is_node = index == 0
            parent_uuid = uuids.get(spec.parent) if spec.parent else None
            try:
                change = self._sync_provider(spec, parent_uuid, node_reports if is_node
                                             else spec.reports, is_node, disabled)
            except PlacementError:
                self._known.pop(spec.name, None)  # read it again next time
                raise
            uuids[spec.name] = change.uuid
            changes.append(change)
        if tree:
            node = tree[0].name
            shape = frozenset(uuids.values())
            created = changes[0].created
            if self._shapes.get(node) != shape and not (created and len(tree) == 1):
                self._remove_stale_children(uuids[node], set(uuids.values()), changes)
            self._shapes[node] = shape
        return changes

    def _sync_provider(self, spec: NodeProvider, parent_uuid: str | None,
                       reports: Sequence[TraitReport], is_node: bool,
                       disabled: bool | None) -> ProviderChange:
        known, created = self._provider(spec.name, parent_uuid)
        change = ProviderChange(spec.name, known.uuid, created=created)
        reports = list(reports)
        self._ensure_custom_names(spec.inventories, reports)
        self._write_inventories(change, known, spec.inventories)
        self._write_traits(change, known, reports, compute_node=is_node,
                           disabled=disabled if is_node else None)
        return change

    # -- providers ------------------------------------------------------------
    def _provider(self, name: str, parent_uuid: str | None) -> tuple[_Known, bool]:
        known = self._known.get(name)
        if known is not None:
            return known, False
        provider, created = self._ensure_provider(name, parent_uuid)
        known = _Known(provider.uuid, provider.generation)
        if created:  # a new provider has no inventories and no traits
            known.inventories, known.traits = {}, frozenset()
        self._known[name] = known
        return known, created

    def _ensure_provider(self, name: str, parent_uuid: str | None) -> tuple[Provider, bool]:
        """The provider named ``name``, created if missing: created first (a new host's
        one request), looked up by name when it exists."""
        try:
            return self.placement.create_provider(name, provider_uuid(name), parent_uuid), True
        except PlacementError as exc:
            if exc.status != 409:
                raise
        found = self.placement.providers(ProviderQuery(name=name))
        if not found:
            # The derived uuid is taken by a provider of another name: keep its name.
            raise PlacementError(f"cannot create provider {name}: its uuid "
                                 f"{provider_uuid(name)} belongs to another provider",
                                 status=409)
        provider = found[0]
        if provider.parent_uuid != parent_uuid:
            LOG.warning("provider %s has parent %s in placement, the driver says %s; "
                        "left as it is", name, provider.parent_uuid, parent_uuid)
        return provider, False

    def _ensure_custom_names(self, inventories: Mapping[str, Inventory],
                             reports: Sequence[TraitReport]) -> None:
        for rc in inventories:
            if is_custom(rc) and rc not in self._custom:
                self.placement.ensure_resource_class(rc)
                self._custom.add(rc)
        for report in reports:
            if report.supported and is_custom(report.trait) and report.trait not in self._custom:
                self.placement.ensure_trait(report.trait)
                self._custom.add(report.trait)

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
    def _write_inventories(self, change: ProviderChange, known: _Known,
                           inventories: Mapping[str, Inventory]) -> None:
        wanted = dict(inventories)
        stale = [known.inventories is None]

        def attempt() -> bool:
            if stale[0]:
                known.inventories, known.generation = (
                    self.placement.inventories_with_generation(known.uuid))
            stale[0] = True  # a retry means another writer moved it: read again
            if known.inventories == wanted:
                return False
            known.generation = self.placement.set_inventories(known.uuid, known.generation,
                                                              wanted)
            known.inventories = wanted
            return True

        try:
            change.inventories_written = _retrying(change, attempt)
        except PlacementError as exc:
            known.inventories = None
            if exc.status != 409:
                raise
            # Typically a class still in use that the driver stopped offering.
            change.problems.append(f"inventories not written: {exc}")
            LOG.warning("provider %s: %s", change.name, exc)

    def _write_traits(self, change: ProviderChange, known: _Known,
                      reports: Sequence[TraitReport], *, compute_node: bool,
                      disabled: bool | None) -> None:
        stale = [known.traits is None]

        def attempt() -> tuple[frozenset[str], frozenset[str]]:
            if stale[0]:
                current, known.generation = self.placement.provider_traits(known.uuid)
                known.traits = frozenset(current)
            stale[0] = True
            current_traits = set(known.traits or ())
            wanted = desired_traits(current_traits, reports, compute_node=compute_node,
                                    disabled=disabled)
            if wanted == current_traits:
                return frozenset(), frozenset()
            known.generation = self.placement.set_traits(known.uuid, known.generation, wanted)
            known.traits = frozenset(wanted)
            return frozenset(wanted - current_traits), frozenset(current_traits - wanted)

        try:
            change.added_traits, change.removed_traits = _retrying(change, attempt)
        except PlacementError:
            known.traits = None
            raise
