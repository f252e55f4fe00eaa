"""ProviderIndex: every provider held in memory, kept coherent with the database.

Why: upstream placement answers GET /allocation_candidates with several SQL
queries whose cost grows with the number of matching providers, and builds every
candidate before applying ``limit``. Here each process holds the providers in
memory, with one numpy column per resource class and one boolean mask per trait
and aggregate, so a scheduler query is a handful of vectorized operations and
``limit`` stops the work early.

Coherence: every write transaction bumps ``placement_state.version`` and stamps
the providers it touched (storage/database.py). Before answering, ``fresh()``
reads the version (one small query) and, if it moved, reloads exactly the
providers stamped since, in one snapshot. Reads therefore see every committed
write, from any process, and claims stay authoritative in the database.

A claim this process committed (a ``UsageWrite``: only allocations changed) is
handed to ``written`` and applied as it is, without reading the providers back,
when the index holds every version before it: the catch-up after each claim was
the most frequent read of a burst of boots. A version written by another process,
or by a write of anything else, is read back as before, and the claims of this
process after it with it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import numpy as np
import numpy.typing as npt
import os_traits

from moorage.placement.storage import catalog as catalog_store
from moorage.placement.storage import records as record_store
from moorage.placement.storage.catalog import Catalog
from moorage.placement.storage.database import Database, UsageWrite
from moorage.placement.storage.records import Inventory, ProviderRecord

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

SHARING_TRAIT = os_traits.MISC_SHARES_VIA_AGGREGATE


class ResourceColumns:
    """Per-slot inventory facts of one resource class, as numpy columns.

    ``largest`` is the largest single allocation capacity and max_unit allow
    (min(capacity - used, max_unit)), -1 where there is no inventory, so the
    common check is one comparison. min_unit and step_size are compared only
    while some provider actually sets them above 1.
    """

    __slots__ = ("_min_set", "_step_set", "largest", "min_unit", "step_size")

    def __init__(self, size: int) -> None:
        self.largest: IntArray = np.full(size, -1, dtype=np.int64)
        self.min_unit: IntArray = np.ones(size, dtype=np.int64)
        self.step_size: IntArray = np.ones(size, dtype=np.int64)
        # How many slots have min_unit > 1, and step_size > 1.
        self._min_set = 0
        self._step_set = 0

    def grow(self, size: int) -> None:
        for name, fill in (("largest", -1), ("min_unit", 1), ("step_size", 1)):
            old = getattr(self, name)
            new = np.full(size, fill, dtype=np.int64)
            new[: old.shape[0]] = old
            setattr(self, name, new)

    def set(self, slot: int, inventory: Inventory | None, used: int) -> None:
        self._min_set -= int(self.min_unit[slot] > 1)
        self._step_set -= int(self.step_size[slot] > 1)
        if inventory is None:
            largest, min_unit, step_size = -1, 1, 1
        else:
            largest = min(inventory.capacity - used, inventory.max_unit)
            min_unit, step_size = inventory.min_unit, inventory.step_size
        self.largest[slot] = largest
        self.min_unit[slot] = min_unit
        self.step_size[slot] = step_size
        self._min_set += int(min_unit > 1)
        self._step_set += int(step_size > 1)

    def fits(self, amount: int) -> BoolArray:
        """Slots where one allocation of ``amount`` fits: capacity, min/max unit, step."""
        ok: BoolArray = self.largest >= amount
        if self._min_set:
            ok &= self.min_unit <= amount
        if self._step_set:
            ok &= (amount % self.step_size) == 0
        return ok

    def holds(self, total: int) -> BoolArray:
        """Slots that can take ``total`` more in all (a sum of several allocations)."""
        held: BoolArray = self.largest >= total
        return held


# Claims held back (a version before them written by another process, not read yet)
# beyond which they are dropped, to be read back instead.
_MAX_WRITTEN = 1024


class ProviderIndex:
    """Providers by id, uuid and name, plus vector columns for fast filtering."""

    def __init__(self, db: Database | None) -> None:
        self._db = db
        self._lock = threading.RLock()
        self.version = -1
        self.catalog_version = -1
        self.catalog = Catalog({}, {}, {})
        self._trait_names: dict[int, str] = {}
        self._rc_names: dict[int, str] = {}
        self.by_id: dict[int, ProviderRecord] = {}
        self.by_uuid: dict[str, ProviderRecord] = {}
        self.by_name: dict[str, ProviderRecord] = {}
        self.children: dict[int, set[int]] = {}
        self.tree_members: dict[int, set[int]] = {}
        self._non_roots: set[int] = set()
        # slot <-> provider id
        self._capacity = 0
        self.slot_of: dict[int, int] = {}
        self.slot_ids: IntArray = np.zeros(0, dtype=np.int64)
        self._free_slots: list[int] = []
        self._next_slot = 0
        self.alive: BoolArray = np.zeros(0, dtype=np.bool_)
        self.root_slot: IntArray = np.zeros(0, dtype=np.int64)
        self.has_children: BoolArray = np.zeros(0, dtype=np.bool_)
        self.is_root: BoolArray = np.zeros(0, dtype=np.bool_)
        self.trait_masks: dict[str, BoolArray] = {}
        self.agg_masks: dict[str, BoolArray] = {}
        self.resources: dict[str, ResourceColumns] = {}
        self._anchor_cache: dict[int, frozenset[int]] | None = None
        # Claims this process committed, by version, until the versions before them
        # are held.
        self._written: dict[int, UsageWrite] = {}
        self._grow(1024)

    # -- public reading API -------------------------------------------------
    @contextmanager
    def fresh(self) -> Iterator[ProviderIndex]:
        """Hold the index, caught up with every committed write, for one read."""
        with self._lock:
            self._catch_up()
            yield self

    def catch_up(self) -> None:
        with self._lock:
            self._catch_up()

    def written(self, write: UsageWrite | None) -> None:
        """A write this process committed: applied now if it changed only
        allocations (a ``UsageWrite``) and the index holds the version before it,
        later if it is waiting for one of this process's writes before it; else read
        back at the next catch-up, as another process's write is."""
        if write is None:
            return
        with self._lock:
            if write.version <= self.version:
                return
            if len(self._written) >= _MAX_WRITTEN:
                # A process that writes without reading while another writes too:
                # what it holds is read back at its next read, as it would have been.
                self._written.clear()
            self._written[write.version] = write
            self._apply_written()

    def load(self, records: Iterable[ProviderRecord], catalog: Catalog | None = None) -> None:
        """Apply provider records directly, without a database (tests, tools)."""
        with self._lock:
            if catalog is not None:
                self.catalog = catalog
            self._apply(
                record_store.Changes(self.version + 1, self.catalog_version, [], list(records))
            )

    @property
    def size(self) -> int:
        """Slots in use (live providers plus free slots below the high-water mark)."""
        return self._next_slot

    @property
    def has_trees(self) -> bool:
        """Whether any provider has a parent (upstream switches code paths on this)."""
        return bool(self._non_roots)

    def empty_mask(self) -> BoolArray:
        return np.zeros(self._next_slot, dtype=np.bool_)

    def trait_mask(self, name: str) -> BoolArray:
        mask = self.trait_masks.get(name)
        return mask[: self._next_slot] if mask is not None else self.empty_mask()

    def agg_mask(self, agg_uuid: str) -> BoolArray:
        mask = self.agg_masks.get(agg_uuid)
        return mask[: self._next_slot] if mask is not None else self.empty_mask()

    def fits(self, resource_class: str, amount: int) -> BoolArray:
        columns = self.resources.get(resource_class)
        if columns is None:
            return self.empty_mask()
        return columns.fits(amount)[: self._next_slot]

    def roots_of(self, providers: BoolArray) -> BoolArray:
        """A new mask of the roots of the trees holding one of ``providers`` (a mask
        over the slots in use; dead slots count for nothing). In a cloud without
        trees every provider is its own root: no gather and scatter over the cloud."""
        size = self._next_slot
        live: BoolArray = providers & self.alive[:size]
        if not self._non_roots:
            return live
        roots = self.empty_mask()
        roots[self.root_slot[:size][live]] = True
        return roots

    def record_at(self, slot: int) -> ProviderRecord:
        return self.by_id[int(self.slot_ids[slot])]

    def records_at(self, slots: Iterable[int]) -> list[ProviderRecord]:
        by_id, ids = self.by_id, self.slot_ids
        return [by_id[int(ids[s])] for s in slots]

    def ordered_traits(self, record: ProviderRecord) -> list[str]:
        """A provider's traits in catalogue (creation) order, the order upstream lists them."""
        ids = self.catalog.trait_ids
        return sorted(record.traits, key=lambda name: ids.get(name, 0))

    def sharing_anchors(self) -> dict[int, frozenset[int]]:
        """Sharing provider id -> ids of the roots it shares with (via aggregates).

        A provider with MISC_SHARES_VIA_AGGREGATE lends its inventory to every tree
        that has a provider in one of its aggregates; those trees' roots are its
        anchors, its own root included.
        """
        if self._anchor_cache is None:
            anchors: dict[int, frozenset[int]] = {}
            sharing = np.flatnonzero(self.trait_mask(SHARING_TRAIT))
            for slot in sharing:
                record = self.record_at(int(slot))
                roots = {record.root_id}
                for agg_uuid in record.aggregates:
                    members = np.flatnonzero(self.agg_mask(agg_uuid))
                    roots.update(int(self.slot_ids[s]) for s in np.unique(self.root_slot[members]))
                anchors[record.id] = frozenset(roots)
            self._anchor_cache = anchors
        return self._anchor_cache

    def descendants(self, provider_id: int) -> list[int]:
        """Ids of every provider below ``provider_id`` in its tree."""
        found: list[int] = []
        stack = list(self.children.get(provider_id, ()))
        while stack:
            child = stack.pop()
            found.append(child)
            stack.extend(self.children.get(child, ()))
        return found

    def ancestors(self, provider_id: int) -> list[int]:
        """Ids from ``provider_id``'s parent up to its root."""
        chain: list[int] = []
        record = self.by_id[provider_id]
        while record.parent_id is not None:
            chain.append(record.parent_id)
            record = self.by_id[record.parent_id]
        return chain

    # -- catching up ----------------------------------------------------------
    def _apply_written(self) -> None:
        """Apply the written claims that follow the index's version, in order."""
        written = self._written
        while written:
            write = written.pop(self.version + 1, None)
            if write is None:
                # Waiting for a version before them, or read back already.
                for version in [v for v in written if v <= self.version]:
                    del written[version]
                return
            if not self._apply_usage(write):
                written.clear()  # read back, with every version after it
                return
            self.version = write.version

    def _apply_usage(self, write: UsageWrite) -> bool:
        """Replace the records of the providers a claim changed, from the records the
        index holds; False (nothing changed) if they do not add up, which leaves the
        write to the catch-up."""
        usages: dict[int, dict[str, int]] = {}
        for (provider_id, rc_id), amount in write.usage.items():
            record = self.by_id.get(provider_id)
            name = self._rc_names.get(rc_id)
            if record is None or name is None:
                return False
            used = usages.get(provider_id)
            if used is None:
                used = usages[provider_id] = dict(record.usages)
            total = used.get(name, 0) + amount
            if total < 0:
                return False
            if total:
                used[name] = total
            else:
                used.pop(name, None)  # as the catch-up reads it: no allocation, no usage
        if any(provider_id not in self.by_id for provider_id in write.generations):
            return False
        for provider_id in usages.keys() | write.generations.keys():
            old = self.by_id[provider_id]
            gained = write.generations.get(provider_id, 0)
            uuid_fragment = old.fragments.get("uuid")
            self._set_usage(old, dataclasses.replace(
                old, generation=old.generation + gained,
                updated_at=write.updated_at if gained else old.updated_at,
                usages=usages.get(provider_id, old.usages),
                # The other fragments render the old generation or usage.
                fragments={} if uuid_fragment is None else {"uuid": uuid_fragment}))
        return True

    def _set_usage(self, old: ProviderRecord, record: ProviderRecord) -> None:
        """``_upsert`` of a record that differs from ``old`` only in its usage,
        generation and time."""
        self.by_id[record.id] = record
        self.by_uuid[record.uuid] = record
        if self.by_name.get(record.name) is old:
            self.by_name[record.name] = record
        slot = self.slot_of[record.id]
        for rc, inventory in record.inventories.items():
            if record.usages.get(rc) != old.usages.get(rc):
                self.resources[rc].set(slot, inventory, record.used(rc))

    def _catch_up(self) -> None:
        if self._db is None:
            return
        version, catalog_version = self._db.state_versions()
        if version == self.version:
            return
        if self.version >= 0 and catalog_version == self.catalog_version:
            # After writes, the usual case: one statement, one round trip.
            with self._db.statement_reader() as conn:
                changes = record_store.changes_since(
                    conn, self.version, self.catalog_version, self._trait_names,
                    self._rc_names)
            if changes is not None:
                self._apply(changes)
                return
        # The first load, or the catalogue changed too: both in one snapshot.
        with self._db.reader() as conn:
            catalog_version = record_store.versions(conn)[1]
            self.catalog = catalog_store.load(conn)
            self._trait_names = self.catalog.trait_names
            self._rc_names = self.catalog.rc_names
            self.catalog_version = catalog_version
            if self.version < 0:
                changes = record_store.load_all(conn, self._trait_names, self._rc_names)
            else:
                changes = record_store.changes_since(conn, self.version, catalog_version,
                                                     self._trait_names, self._rc_names)
        assert changes is not None, "the catalogue moved within one snapshot"
        self._apply(changes)

    def _apply(self, changes: record_store.Changes) -> None:
        for provider_id in changes.deleted:
            self._remove(provider_id)
        # Parents before children, so tree maps are built top-down.
        for record in sorted(changes.changed, key=lambda r: (r.parent_id is not None, r.id)):
            self._upsert(record)
        # Roots of changed providers' descendants may have changed with them: they were
        # stamped by the same write, so they are in ``changed`` too.
        if changes.deleted or changes.changed:
            self._anchor_cache = None
        self.version = changes.version
        if self._written:
            self._apply_written()

    def _grow(self, capacity: int) -> None:
        def grown(old: npt.NDArray[np.generic], fill: object = 0) -> npt.NDArray[np.generic]:
            new = np.full(capacity, fill, dtype=old.dtype)
            new[: old.shape[0]] = old
            return new

        self.slot_ids = grown(self.slot_ids, -1)  # type: ignore[assignment]
        self.alive = grown(self.alive, False)  # type: ignore[assignment]
        self.root_slot = grown(self.root_slot, 0)  # type: ignore[assignment]
        self.has_children = grown(self.has_children, False)  # type: ignore[assignment]
        self.is_root = grown(self.is_root, False)  # type: ignore[assignment]
        for name, mask in list(self.trait_masks.items()):
            self.trait_masks[name] = grown(mask, False)  # type: ignore[assignment]
        for name, mask in list(self.agg_masks.items()):
            self.agg_masks[name] = grown(mask, False)  # type: ignore[assignment]
        for columns in self.resources.values():
            columns.grow(capacity)
        self._capacity = capacity

    def _allocate_slot(self) -> int:
        if self._free_slots:
            return self._free_slots.pop()
        if self._next_slot >= self._capacity:
            self._grow(self._capacity * 2)
        slot = self._next_slot
        self._next_slot += 1
        return slot

    def _remove(self, provider_id: int) -> None:
        record = self.by_id.pop(provider_id, None)
        if record is None:
            return
        slot = self.slot_of.pop(provider_id)
        self.by_uuid.pop(record.uuid, None)
        if self.by_name.get(record.name) is record:
            del self.by_name[record.name]
        self._unlink(record)
        self.children.pop(provider_id, None)
        self._non_roots.discard(provider_id)
        for trait in record.traits:
            self.trait_masks[trait][slot] = False
        for agg_uuid in record.aggregates:
            self.agg_masks[agg_uuid][slot] = False
        for rc in record.inventories:
            self.resources[rc].set(slot, None, 0)
        self.alive[slot] = False
        self.is_root[slot] = False
        self.has_children[slot] = False
        self.slot_ids[slot] = -1
        self._free_slots.append(slot)

    def _unlink(self, record: ProviderRecord) -> None:
        """Forget ``record``'s place in the tree maps."""
        if record.parent_id is not None:
            siblings = self.children.get(record.parent_id)
            if siblings is not None:
                siblings.discard(record.id)
                parent_slot = self.slot_of.get(record.parent_id)
                if parent_slot is not None:
                    self.has_children[parent_slot] = bool(siblings)
        members = self.tree_members.get(record.root_id)
        if members is not None:
            members.discard(record.id)
            if not members:
                del self.tree_members[record.root_id]

    def _upsert(self, record: ProviderRecord) -> None:
        old = self.by_id.get(record.id)
        if old is None:
            slot = self._allocate_slot()
            self.slot_of[record.id] = slot
            self.slot_ids[slot] = record.id
            self.alive[slot] = True
        else:
            slot = self.slot_of[record.id]
            self.by_uuid.pop(old.uuid, None)
            if self.by_name.get(old.name) is old:
                del self.by_name[old.name]
            self._unlink(old)
            for trait in old.traits - record.traits:
                self.trait_masks[trait][slot] = False
            for agg_uuid in old.aggregates - record.aggregates:
                self.agg_masks[agg_uuid][slot] = False
            for rc in old.inventories.keys() - record.inventories.keys():
                self.resources[rc].set(slot, None, 0)
        self._non_roots.discard(record.id)
        self.by_id[record.id] = record
        self.by_uuid[record.uuid] = record
        self.by_name[record.name] = record
        if record.parent_id is not None:
            self._non_roots.add(record.id)
            self.children.setdefault(record.parent_id, set()).add(record.id)
            parent_slot = self.slot_of.get(record.parent_id)
            if parent_slot is not None:
                self.has_children[parent_slot] = True
        self.tree_members.setdefault(record.root_id, set()).add(record.id)
        self.is_root[slot] = record.parent_id is None
        self.has_children[slot] = bool(self.children.get(record.id))
        root_slot = self.slot_of.get(record.root_id)
        # A root is applied before its children, so its slot is known here.
        self.root_slot[slot] = root_slot if root_slot is not None else slot
        for trait in record.traits:
            mask = self.trait_masks.get(trait)
            if mask is None:
                mask = self.trait_masks[trait] = np.zeros(self._capacity, dtype=np.bool_)
            mask[slot] = True
        for agg_uuid in record.aggregates:
            mask = self.agg_masks.get(agg_uuid)
            if mask is None:
                mask = self.agg_masks[agg_uuid] = np.zeros(self._capacity, dtype=np.bool_)
            mask[slot] = True
        for rc, inventory in record.inventories.items():
            columns = self.resources.get(rc)
            if columns is None:
                columns = self.resources[rc] = ResourceColumns(self._capacity)
            columns.set(slot, inventory, record.used(rc))
