"""The in-memory index stays equal to the database, write after write.

Random sequences of every kind of write (providers created, re-parented and deleted,
inventories, traits, custom traits created and deleted, aggregates, allocations made
and removed) run on real databases; after each, an index that caught up step by step
(the one-statement ``changes_since``, or the catalogue path when a trait was created
or deleted) must hold exactly what an index loaded from scratch holds. So must an
index handed the claims its process committed (``ProviderIndex.written``) while it
reads back the writes of others.
"""

from __future__ import annotations

import random
import uuid as uuidlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.dialects import sqlite

from moorage.model.inventory import Inventory
from moorage.placement.engine.index import ProviderIndex
from moorage.placement.storage import (
    aggregates,
    allocations,
    inventories,
    migration,
    providers,
    records,
)
from moorage.placement.storage import traits as trait_store
from moorage.placement.storage.database import Database, Writer
from moorage.placement.storage.errors import Conflict, InvalidData, NotFound

CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
STANDARD_TRAITS = ("HW_CPU_X86_AVX2", "COMPUTE_NET_VIF_MODEL_E1000", "STORAGE_DISK_SSD")
AGGREGATES = [str(uuidlib.UUID(int=n)) for n in range(1, 4)]


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    url = (f"sqlite:///{tmp_path / 'placement.sqlite'}" if request.param == "sqlite"
           else request.getfixturevalue("postgresql_url"))
    database = Database(url, group_commit=True)
    migration.upgrade(database)
    yield database
    database.dispose()


def _snapshot(index: ProviderIndex) -> dict[str, tuple[object, ...]]:
    """What an index holds, provider by provider, in comparable form."""
    with index.fresh():
        uuid_of = {r.id: r.uuid for r in index.by_id.values()}
        return {
            r.uuid: (r.name, r.generation, uuid_of.get(r.parent_id) if r.parent_id else None,
                     uuid_of[r.root_id], r.traits, r.aggregates, dict(r.inventories),
                     dict(r.usages), r.created_at, r.updated_at)
            for r in index.by_id.values()
        }


class Cloud:
    """Random writes on ``db``, remembering what exists to pick sensible targets."""

    def __init__(self, db: Database, rng: random.Random,
                 written: Callable[[Writer], None] | None = None) -> None:
        self.db = db
        self.rng = rng
        self.written = written  # told of each committed write
        self.providers: list[str] = []
        self.stocked: dict[str, list[str]] = {}  # provider -> classes it has
        self.consumers: list[str] = []
        self.custom: list[str] = []

    def step(self) -> str:
        moves: list[Callable[[Writer], str]] = [
            self.create, self.create, self.inventory, self.inventory, self.traits,
            self.aggregates, self.claim, self.claim, self.claim, self.release,
            self.custom_trait, self.drop_custom_trait, self.reparent, self.delete]
        move = self.rng.choice(moves)
        try:
            with self.db.writer() as w:
                done = move(w)
            if self.written is not None:
                self.written(w)
            return done
        except (Conflict, InvalidData, NotFound, allocations.InvalidAllocation) as exc:
            return f"{move.__name__} refused: {exc}"

    def _provider(self, w: Writer) -> providers.ProviderRow | None:
        if not self.providers:
            return None
        return providers.find(w.conn, self.rng.choice(self.providers), lock=True)

    def create(self, w: Writer) -> str:
        rp = str(uuidlib.uuid4())
        parent = self.rng.choice([None, *self.providers])
        providers.create(w, rp, f"rp-{rp[:8]}", parent)
        self.providers.append(rp)
        return f"create {rp} under {parent}"

    def inventory(self, w: Writer) -> str:
        provider = self._provider(w)
        if provider is None:
            return "no provider"
        chosen = {rc: Inventory(self.rng.randint(8, 64), 0, 1, 64, 1,
                                self.rng.choice([1.0, 1.5]))
                  for rc in self.rng.sample(CLASSES, self.rng.randint(0, 3))}
        inventories.replace(w, provider, chosen)
        self.stocked[provider.uuid] = sorted(chosen)
        return f"inventory {provider.uuid} {sorted(chosen)}"

    def traits(self, w: Writer) -> str:
        provider = self._provider(w)
        if provider is None:
            return "no provider"
        names = self.rng.sample([*STANDARD_TRAITS, *self.custom],
                                self.rng.randint(0, 2 + len(self.custom)))
        trait_store.set_for_provider(w, provider, names)
        return f"traits {provider.uuid} {sorted(names)}"

    def aggregates(self, w: Writer) -> str:
        provider = self._provider(w)
        if provider is None:
            return "no provider"
        chosen = self.rng.sample(AGGREGATES, self.rng.randint(0, 2))
        aggregates.set_for_provider(w, provider.id, chosen)
        providers.bump_generation(w, provider)
        return f"aggregates {provider.uuid} {chosen}"

    def claim(self, w: Writer) -> str:
        stocked = [rp for rp, classes in self.stocked.items() if classes]
        if not stocked:
            return "no provider with inventory"
        rp = self.rng.choice(stocked)
        consumer = self.rng.choice([str(uuidlib.uuid4()), *self.consumers])
        amounts = {rc: self.rng.randint(1, 4) for rc in self.rng.sample(self.stocked[rp], 1)}
        allocations.replace(w, [allocations.Claim(consumer, "project", "user",
                                                  {rp: amounts})])
        if consumer not in self.consumers:
            self.consumers.append(consumer)
        return f"claim {consumer} on {rp}: {amounts}"

    def release(self, w: Writer) -> str:
        if not self.consumers:
            return "no consumer"
        consumer = self.consumers.pop(self.rng.randrange(len(self.consumers)))
        allocations.delete_consumer(w, consumer)
        return f"release {consumer}"

    def custom_trait(self, w: Writer) -> str:
        name = f"CUSTOM_T{self.rng.randint(0, 999)}"
        trait_store.ensure(w, name)
        if name not in self.custom:
            self.custom.append(name)
        return f"new trait {name}"

    def drop_custom_trait(self, w: Writer) -> str:
        if not self.custom:
            return "no custom trait"
        name = self.rng.choice(self.custom)
        trait_store.delete(w, name)
        self.custom.remove(name)
        return f"drop trait {name}"

    def reparent(self, w: Writer) -> str:
        provider = self._provider(w)
        if provider is None:
            return "no provider"
        parent = self.rng.choice([None, *self.providers])
        providers.update(w, provider, parent_uuid=parent, allow_reparenting=True)
        return f"reparent {provider.uuid} under {parent}"

    def delete(self, w: Writer) -> str:
        if not self.providers:
            return "no provider"
        rp = self.rng.choice(self.providers)
        providers.delete(w, rp)
        self.providers.remove(rp)
        self.stocked.pop(rp, None)
        return f"delete {rp}"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_index_caught_up_write_by_write_equals_a_fresh_one(db: Database, seed: int
                                                             ) -> None:
    cloud = Cloud(db, random.Random(seed))
    following = ProviderIndex(db)
    following.catch_up()
    done = []
    for _ in range(120):
        done.append(cloud.step())
        fresh = ProviderIndex(db)
        assert _snapshot(following) == _snapshot(fresh), "\n".join(done[-10:])
        assert following.version == fresh.version
        assert following.catalog.trait_ids == fresh.catalog.trait_ids


@pytest.mark.parametrize("seed", [4, 5])
def test_an_index_handed_its_own_claims_equals_a_fresh_one(db: Database, seed: int) -> None:
    """Each write is this process's (handed to ``written``) or, one time in three,
    another's (not handed: read back). Reads come after some writes only, so claims
    queue behind a version the index has not read yet."""
    rng = random.Random(seed)
    following = ProviderIndex(db)
    handed: list[str] = []

    def written(w: Writer) -> None:
        if rng.random() < 2 / 3:
            handed.append("usage" if w.written() is not None else "read back")
            following.written(w.written())

    cloud = Cloud(db, rng, written)
    following.catch_up()
    done = []
    for _ in range(150):
        done.append(cloud.step())
        if rng.random() < 0.5:
            fresh = ProviderIndex(db)
            assert _snapshot(following) == _snapshot(fresh), "\n".join(done[-10:])
            assert following.version == fresh.version
    assert handed.count("usage") > 20  # the claims, releases and moves handed


def test_own_claims_are_not_read_back(db: Database, monkeypatch: pytest.MonkeyPatch
                                      ) -> None:
    """Claims, moves and releases committed here, handed over in any order, leave
    nothing for the catch-up to read; the index equals a fresh one."""
    rps = [str(uuidlib.uuid4()) for _ in range(3)]
    with db.writer() as w:
        for rp in rps:
            providers.create(w, rp, f"rp-{rp[:8]}", None)
            inventories.replace(w, providers.get(w.conn, rp, lock=True),
                                {"VCPU": Inventory(8, 0, 1, 8, 1, 1.0),
                                 "MEMORY_MB": Inventory(4096, 0, 1, 4096, 1, 1.0)})
    following = ProviderIndex(db)
    following.catch_up()
    reads: list[int] = []
    real = records.changes_since

    def counted(*args: object, **kwargs: object) -> records.Changes | None:
        reads.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(records, "changes_since", counted)

    def claim(consumer: str, amounts: dict[str, dict[str, int]]) -> Writer:
        with db.writer() as w:
            allocations.replace(w, [allocations.Claim(consumer, "p", "u", amounts)])
        return w

    first = claim("c1", {rps[0]: {"VCPU": 2, "MEMORY_MB": 512}})
    second = claim("c2", {rps[0]: {"VCPU": 1}, rps[1]: {"MEMORY_MB": 1024}})
    moved = claim("c1", {rps[2]: {"VCPU": 4}})  # c1 moves from rps[0] to rps[2]
    with db.writer() as released:
        assert allocations.delete_consumer(released, "c2")
    for w in (moved, released, second, first):  # handed over out of order
        following.written(w.written())
    assert _snapshot(following) == _snapshot(ProviderIndex(db))
    assert reads == []  # (a fresh index loads everything otherwise)
    assert following.by_uuid[rps[0]].usages == {}
    assert following.by_uuid[rps[2]].usages == {"VCPU": 4}
    # A write of anything else is read back, with the claims after it.
    with db.writer() as w:
        trait_store.set_for_provider(w, providers.get(w.conn, rps[1], lock=True),
                                     ["HW_CPU_X86_AVX2"])
    assert w.written() is None
    following.written(claim("c3", {rps[1]: {"VCPU": 8}}).written())
    assert _snapshot(following) == _snapshot(ProviderIndex(db))
    assert reads == [1]  # the catch-up


def test_several_writes_between_reads_are_caught_up_at_once(db: Database) -> None:
    cloud = Cloud(db, random.Random(7))
    following = ProviderIndex(db)
    following.catch_up()
    for _ in range(15):
        for _ in range(10):
            cloud.step()
        assert _snapshot(following) == _snapshot(ProviderIndex(db))


def test_a_trait_created_between_the_poll_and_the_read_is_learnt(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """The poll saw a plain write; by the time the changes are read, another writer
    has created a trait and given it to a provider. The index must read the new
    catalogue rather than meet a trait id it cannot name."""
    rp = str(uuidlib.uuid4())
    with db.writer() as w:
        providers.create(w, rp, "racer", None)
    following = ProviderIndex(db)
    following.catch_up()
    with db.writer() as w:
        inventories.replace(w, providers.get(w.conn, rp, lock=True),
                            {"VCPU": Inventory(8, 0, 1, 8, 1, 1.0)})
    polled = db.state_versions()  # what the poll saw: the inventory, no new trait
    with db.writer() as w:
        trait_store.ensure(w, "CUSTOM_RACE")
        trait_store.set_for_provider(w, providers.get(w.conn, rp, lock=True),
                                     ["CUSTOM_RACE"])
    monkeypatch.setattr(db, "state_versions", lambda: polled)
    following.catch_up()
    monkeypatch.undo()
    assert following.by_uuid[rp].traits == {"CUSTOM_RACE"}
    assert _snapshot(following) == _snapshot(ProviderIndex(db))


def test_a_catch_up_reads_only_the_changed_providers_rows(tmp_path: Path) -> None:
    """SQLite's plan of the changes statement: every table is searched by provider
    (or by change version), none scanned whole, so that a catch-up after one claim
    costs the same with 100 servers in the cloud as with 100,000. (A join let the
    planner scan every allocation in its index's order, to group them.)"""
    database = Database(f"sqlite:///{tmp_path / 'placement.sqlite'}")
    migration.upgrade(database)
    try:
        compiled = records._CHANGES.compile(dialect=sqlite.dialect())
        params = tuple(1 if name.startswith("id") else 0 for name in compiled.positiontup)
        with database.statement_reader() as conn:
            driver = conn.connection.driver_connection
            plan = [row[3] for row in driver.execute(
                f"EXPLAIN QUERY PLAN {compiled}", params)]
    finally:
        database.dispose()
    for table in ("allocations", "inventories", "resource_provider_traits",
                  "resource_provider_aggregates", "resource_providers"):
        assert any(step.startswith(f"SEARCH {table} ") for step in plan), (table, plan)
    assert not [step for step in plan if step.startswith("SCAN")], plan


def test_claims_held_behind_another_writer_are_bounded(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claims handed over behind a version another process wrote wait for the next
    read; past a bound they are dropped and read back with it."""
    from moorage.placement.engine import index as index_module
    monkeypatch.setattr(index_module, "_MAX_WRITTEN", 3)
    rp = str(uuidlib.uuid4())
    with db.writer() as w:
        providers.create(w, rp, "bounded", None)
        inventories.replace(w, providers.get(w.conn, rp, lock=True),
                            {"VCPU": Inventory(64, 0, 1, 64, 1, 1.0)})
    following = ProviderIndex(db)
    following.catch_up()
    with db.writer() as w:  # another process's claim: never handed over
        allocations.replace(w, [allocations.Claim("other", "p", "u", {rp: {"VCPU": 1}})])
    for n in range(7):
        with db.writer() as w:
            allocations.replace(w, [allocations.Claim(f"c{n}", "p", "u", {rp: {"VCPU": 2}})])
        following.written(w.written())
        assert len(following._written) <= 3
    assert _snapshot(following) == _snapshot(ProviderIndex(db))
    assert following.by_uuid[rp].usages == {"VCPU": 15}
    assert following._written == {}
