"""Allocations: the claim, and the reads and deletes around it.

The claim (``replace``) is Moorage's hot path and stays authoritative: inside one
write transaction it reads the consumers' current allocations and the providers'
inventories and usage, checks every amount, and writes, in a handful of statements
whatever the number of providers. SQLite serializes writers (``BEGIN IMMEDIATE``);
on PostgreSQL the consumers and providers involved are locked ``FOR UPDATE`` in a
fixed order before usage is read, so two claims on the same provider queue instead
of both fitting in the same free capacity, and writers cannot deadlock.

Upstream's rules, kept here because clients observe them:
- a consumer's allocations are replaced as a whole; a consumer left with none is
  deleted;
- each amount must respect min_unit, max_unit and step_size, and the total on a
  (provider, class) must fit (total - reserved) * allocation_ratio, except that a
  write which leaves an over-committed class no worse than before is allowed;
- the generation of every provider named in the new allocations (and of those an
  emptied consumer held) increments; providers only given up do not change
  generation, and deleting a consumer's allocations changes none;
- the consumer's generation increments with every write.
"""

from __future__ import annotations

import datetime
import functools
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.db.statements import Outcome, driver_datetime, driver_sql, driver_sql_many, marks
from moorage.placement.storage import consumers as consumer_store
from moorage.placement.storage import schema
from moorage.placement.storage.consumers import ConsumerRow
from moorage.placement.storage.database import Writer
from moorage.placement.storage.errors import ConcurrentUpdate, Conflict, InvalidData
from moorage.placement.storage.inventories import UnknownResourceClass
from moorage.placement.storage.records import Inventory

_alloc = schema.allocations
_rp = schema.resource_providers
_rc = schema.resource_classes
_consumers = schema.consumers

__all__ = [
    "Claim", "ConcurrentClaim", "ConsumerAllocations", "ConsumerGenerationConflict",
    "InvalidAllocation", "MissingProvider", "Plan", "ProviderAllocations",
    "UnknownResourceClass", "apply", "delete_consumer", "for_consumer", "for_provider",
    "lock_providers", "prepare", "replace",
]


# -- errors (upstream's wording; handlers add the prefix their route uses) ----------------
class MissingProvider(InvalidData):
    """An allocation names a provider that does not exist."""

    def __init__(self, provider_uuid: str) -> None:
        super().__init__(f"Allocation for resource provider '{provider_uuid}' that does not exist.")


class InvalidAllocation(Conflict):
    """An amount does not fit the provider's inventory (none, constraints, capacity)."""


class ConsumerGenerationConflict(ConcurrentUpdate):
    """The client's idea of the consumer's generation is out of date."""


class ConcurrentClaim(ConcurrentUpdate):
    """Another writer changed a consumer while this claim was being made."""

    def __init__(self) -> None:
        super().__init__("Another thread concurrently updated the data. Please retry your update")


def _no_inventory(resource_class: str, provider: str) -> InvalidAllocation:
    return InvalidAllocation(
        f"Inventory for '{resource_class}' on resource provider '{provider}' invalid."
    )


def _refused(resource_class: str, provider: str, why: str) -> InvalidAllocation:
    return InvalidAllocation(
        f"Unable to create allocation for '{resource_class}' on resource provider "
        f"'{provider}'. The requested amount would {why}."
    )


# -- what a claim asks for -------------------------------------------------------------------
@dataclass(frozen=True)
class Claim:
    """What one consumer is to hold after the write (an empty ``resources`` removes all).

    ``resources`` maps provider uuid -> resource class -> amount. From microversion
    1.28 the client states the consumer generation it last saw (None: a new
    consumer) and ``check_generation`` is set; from 1.38 it names a consumer type.
    """

    consumer_uuid: str
    project_id: str
    user_id: str
    resources: Mapping[str, Mapping[str, int]]
    check_generation: bool = False
    expected_generation: int | None = None
    consumer_type: str | None = None


@dataclass(frozen=True, slots=True)
class _Held:
    """One stored allocation of a consumer being rewritten."""

    consumer_uuid: str
    provider_id: int
    rc_id: int
    used: int


@dataclass
class Plan:
    """A claim checked against consumers and providers, ready for ``apply``.

    Built by ``prepare``; holds the locks (PostgreSQL) of every provider involved.
    """

    claims: Sequence[Claim]
    consumers: dict[str, ConsumerRow]
    project_ids: dict[str, int]
    user_ids: dict[str, int]
    type_ids: dict[str, int]
    provider_ids: dict[str, int]
    held: list[_Held]


# -- the claim's SQL ----------------------------------------------------------------------
# The claim runs its statements as driver SQL (``database.driver_sql``): on SQLite,
# compiling a SQLAlchemy statement (expanding its IN lists) costs several times what
# executing it does, and on PostgreSQL SQLAlchemy's execution path does. The SQL is
# written with SQLite's ``?`` placeholders.

# A value the claim's SQL binds: ids, uuids, amounts, and timestamps (in the form the
# backend's driver takes them, ``driver_datetime``).
Param = int | str | float | datetime.datetime | None


def _run(conn: Connection, sql: str, params: Iterable[Param] = ()) -> Outcome:
    """Execute driver SQL written with ``?`` placeholders, on either backend."""
    return driver_sql(conn, sql, tuple(params))


def _run_many(conn: Connection, sql: str, rows: Sequence[tuple[Param, ...]]) -> None:
    """Execute driver SQL once for each row of parameters (SQLite: PostgreSQL inserts
    its rows in one statement, ``_insert``)."""
    driver_sql_many(conn, sql, rows)




def lock_providers(
    conn: Connection, uuids: Collection[str] = (), ids: Collection[int] = ()
) -> dict[str, int]:
    """Provider uuid -> id of the providers named by uuid or id that exist.

    On PostgreSQL their rows are locked, in id order, until commit (SQLite's write
    transaction already excludes every other writer). Every writer must lock the
    providers it touches before the commit-time version stamp writes them, or two
    writers could wait on each other.
    """
    found = [f"uuid IN ({marks(uuids)})"] if uuids else []
    if ids:
        found.append(f"id IN ({marks(ids)})")
    if not found:
        return {}
    lock = " FOR UPDATE" if conn.dialect.name == "postgresql" else ""
    rows = _run(conn, f"SELECT uuid, id FROM resource_providers WHERE {' OR '.join(found)} "
                      f"ORDER BY id{lock}", [*uuids, *ids])
    return {uuid: id_ for uuid, id_ in rows}


def _consumers_and_holdings(
    conn: Connection, uuids: Collection[str]
) -> tuple[dict[str, ConsumerRow], list[_Held]]:
    """The stored consumers among ``uuids`` and what they hold. On PostgreSQL their
    rows are locked, in uuid order (so that two claims cannot deadlock on them)."""
    if not uuids:
        return {}, []
    lock = " FOR UPDATE OF c" if conn.dialect.name == "postgresql" else ""
    rows = _run(conn, (
        "SELECT c.uuid, c.id, c.generation, c.project_id, c.user_id, c.consumer_type_id, "
        "a.resource_provider_id, a.resource_class_id, a.used "
        "FROM consumers c LEFT JOIN allocations a ON a.consumer_id = c.uuid "
        f"WHERE c.uuid IN ({marks(uuids)}) ORDER BY c.uuid{lock}"
    ), uuids)
    stored: dict[str, ConsumerRow] = {}
    held: list[_Held] = []
    for row in rows:
        if row[0] not in stored:
            stored[row[0]] = ConsumerRow(row[1], row[0], row[2], row[3], row[4], row[5])
        if row[6] is not None:
            held.append(_Held(row[0], row[6], row[7], row[8]))
    return stored, held


def _check_generations(claims: Sequence[Claim], stored: Mapping[str, ConsumerRow]) -> None:
    """ConsumerGenerationConflict for the first claim that saw an outdated generation."""
    for claim in claims:
        if not claim.check_generation:
            continue
        consumer = stored.get(claim.consumer_uuid)
        if consumer is None and claim.expected_generation is not None:
            raise ConsumerGenerationConflict(
                "consumer generation conflict - expected null but got "
                f"{claim.expected_generation}"
            )
        if consumer is not None and consumer.generation != claim.expected_generation:
            raise ConsumerGenerationConflict(
                f"consumer generation conflict - expected {consumer.generation} but got "
                f"{claim.expected_generation}"
            )


def prepare(w: Writer, claims: Sequence[Claim], *, also_lock: Iterable[int] = ()) -> Plan:
    """Record owners and consumer types, check consumer generations and that the
    providers exist, read what the consumers hold, and lock every provider involved
    (and ``also_lock``). Errors in upstream's order: generation conflict (409), then
    unknown provider (400)."""
    conn = w.conn
    project_ids = consumer_store.ensure_projects(w, {c.project_id for c in claims})
    user_ids = consumer_store.ensure_users(w, {c.user_id for c in claims})
    stored, held = _consumers_and_holdings(conn, [c.consumer_uuid for c in claims])
    _check_generations(claims, stored)
    type_ids = consumer_store.ensure_types(
        w, {c.consumer_type for c in claims if c.consumer_type is not None}
    )
    wanted = list(dict.fromkeys(rp for c in claims for rp in c.resources))
    found = lock_providers(conn, wanted, {*(h.provider_id for h in held), *also_lock})
    for rp_uuid in wanted:
        if rp_uuid not in found:
            raise MissingProvider(rp_uuid)
    provider_ids = {rp_uuid: found[rp_uuid] for rp_uuid in wanted}
    return Plan(claims, stored, project_ids, user_ids, type_ids, provider_ids, held)


@dataclass(frozen=True, slots=True)
class _Stock:
    """One inventory of a provider, with what all its allocations use now."""

    rc_id: int
    inventory: Inventory
    used: int | None  # None: no allocation at all


def _stock(conn: Connection, provider_ids: Collection[int]) -> dict[tuple[int, str], _Stock]:
    """(provider id, resource class) -> inventory and usage, for these providers."""
    if not provider_ids:
        return {}
    rows = _run(conn, (
        "SELECT inv.resource_provider_id, rc.name, inv.resource_class_id, inv.total, "
        "inv.reserved, inv.min_unit, inv.max_unit, inv.step_size, inv.allocation_ratio, "
        "(SELECT SUM(a.used) FROM allocations a "
        " WHERE a.resource_provider_id = inv.resource_provider_id "
        " AND a.resource_class_id = inv.resource_class_id) "
        "FROM inventories inv JOIN resource_classes rc ON rc.id = inv.resource_class_id "
        f"WHERE inv.resource_provider_id IN ({marks(provider_ids)})"
    ), provider_ids)
    return {
        (row[0], row[1]): _Stock(
            row[2], Inventory(row[3], row[4], row[5], row[6], row[7], float(row[8])),
            None if row[9] is None else int(row[9]),
        )
        for row in rows
    }


def _check_classes_exist(conn: Connection, claims: Sequence[Claim],
                         stocked: Collection[str]) -> None:
    """UnknownResourceClass for the first class (in request order) that does not exist."""
    named = list(dict.fromkeys(
        rc for c in claims for amounts in c.resources.values() for rc in amounts
    ))
    unsure = [rc for rc in named if rc not in stocked]
    if not unsure:
        return
    known = {row[0] for row in _run(
        conn, f"SELECT name FROM resource_classes WHERE name IN ({marks(unsure)})", unsure)}
    for rc in unsure:
        if rc not in known:
            raise UnknownResourceClass(f"No such resource class {rc}.")


def _check(plan: Plan, stock: Mapping[tuple[int, str], _Stock]) -> None:
    """InvalidAllocation unless every amount fits, checked in request order."""
    ids = plan.provider_ids
    classes = {rc for c in plan.claims for amounts in c.resources.values() for rc in amounts}
    stocked_providers = {rp_id for rp_id, rc in stock if rc in classes}
    without = [rp for rp in dict.fromkeys(
        rp for c in plan.claims for rp in c.resources) if ids[rp] not in stocked_providers]
    if without:
        raise _no_inventory(", ".join(sorted(classes)), ", ".join(without))
    freed: dict[tuple[int, int], int] = defaultdict(int)
    for held in plan.held:
        freed[(held.provider_id, held.rc_id)] += held.used
    asked: dict[tuple[int, str], int] = defaultdict(int)
    for claim in plan.claims:
        for rp_uuid, amounts in claim.resources.items():
            rp_id = ids[rp_uuid]
            for rc, amount in amounts.items():
                item = stock.get((rp_id, rc))
                if item is None:
                    raise _no_inventory(rc, rp_uuid)
                if not item.inventory.admits(amount):
                    raise _refused(rc, rp_uuid, "violate inventory constraints")
                asked[(rp_id, rc)] += amount
                inv = item.inventory
                capacity = (inv.total - inv.reserved) * inv.allocation_ratio
                others = (item.used or 0) - freed[(rp_id, item.rc_id)]
                wanted = others + asked[(rp_id, rc)]
                # Over capacity is allowed only if the class was already over-committed
                # and this write makes it no worse.
                if capacity < wanted and (item.used is None or wanted > item.used):
                    raise _refused(rc, rp_uuid, "exceed the capacity")


def apply(w: Writer, plan: Plan) -> None:
    """Check capacity and write the planned allocations and consumers."""
    conn = w.conn
    stock = _stock(conn, set(plan.provider_ids.values()))
    _check_classes_exist(conn, plan.claims, {rc for _, rc in stock})
    _check(plan, stock)

    now = driver_datetime(conn.dialect, w.now)
    if plan.held:
        holders = list({h.consumer_uuid for h in plan.held})
        _run(conn, f"DELETE FROM allocations WHERE consumer_id IN ({marks(holders)})", holders)
    rows = [
        (rp_id, claim.consumer_uuid, stock[(rp_id, rc)].rc_id, amount, now, now)
        for claim in plan.claims
        for rp_uuid, amounts in claim.resources.items()
        for rp_id in (plan.provider_ids[rp_uuid],)
        for rc, amount in amounts.items()
    ]
    emptied = {c.consumer_uuid for c in plan.claims if not c.resources}
    # As upstream: the providers named in the new allocations, and those an emptied
    # consumer gave up, get a new generation.
    bumped = set(plan.provider_ids.values())
    bumped.update(h.provider_id for h in plan.held if h.consumer_uuid in emptied)
    created = _write_consumers(w, plan, emptied, now)
    _insert(conn, rows, created)
    usage: dict[tuple[int, int], int] = defaultdict(int)
    for held in plan.held:
        usage[(held.provider_id, held.rc_id)] -= held.used
    for rp_id, _consumer, rc_id, amount, _created, _updated in rows:
        usage[(rp_id, rc_id)] += amount
    w.allocations_changed(usage, bumped)


_INSERT_ALLOCATIONS = ("INSERT INTO allocations (resource_provider_id, consumer_id, "
                       "resource_class_id, used, created_at, updated_at) VALUES ")
_INSERT_CONSUMERS = ("INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id, "
                     "created_at, updated_at, generation) VALUES ")


@functools.lru_cache(maxsize=256)
def _rows_of(rows: int, width: int, extra: str = "") -> str:
    """``(?, ?), (?, ?)``: the placeholders of ``rows`` rows of ``width`` values (and
    ``extra``, a constant closing each row)."""
    one = "(" + ", ".join("?" * width) + extra + ")"
    return ", ".join([one] * rows)


def _insert(conn: Connection, allocations: Sequence[tuple[Param, ...]],
            consumers: Sequence[tuple[Param, ...]]) -> None:
    """Insert the new allocations and the new consumers. On PostgreSQL in one
    statement (the consumers in a data-modifying CTE): one round trip, not two
    pipelines. ConcurrentClaim when another writer created one of the consumers
    since ``prepare`` looked."""
    try:
        if conn.dialect.name == "postgresql" and allocations:
            sql, params = _INSERT_ALLOCATIONS + _rows_of(len(allocations), 6), [
                value for row in allocations for value in row]
            if consumers:
                sql = (f"WITH added AS ({_INSERT_CONSUMERS}"
                       f"{_rows_of(len(consumers), 6, ', 1')}) {sql}")
                params = [value for row in consumers for value in row] + params
            _run(conn, sql, params)
            return
        if allocations:
            _run_many(conn, _INSERT_ALLOCATIONS + "(?, ?, ?, ?, ?, ?)", allocations)
        if consumers:
            _run_many(conn, _INSERT_CONSUMERS + "(?, ?, ?, ?, ?, ?, 1)", consumers)
    except sa.exc.IntegrityError:
        if not consumers:
            raise
        raise ConcurrentClaim() from None


def _write_consumers(w: Writer, plan: Plan, emptied: set[str], now: Param
                     ) -> list[tuple[Param, ...]]:
    """Bump the generation (and owner, type) of the stored consumers, delete those
    left without allocations; the rows of the new consumers, for ``_insert``."""
    conn = w.conn
    created: list[tuple[Param, ...]] = []
    gone: list[int] = []
    for claim in sorted(plan.claims, key=lambda c: c.consumer_uuid):
        stored = plan.consumers.get(claim.consumer_uuid)
        project_id = plan.project_ids[claim.project_id]
        user_id = plan.user_ids[claim.user_id]
        type_id = plan.type_ids[claim.consumer_type] if claim.consumer_type else None
        if stored is None:
            if claim.consumer_uuid not in emptied:
                created.append((claim.consumer_uuid, project_id, user_id, type_id, now, now))
        elif claim.consumer_uuid in emptied:
            gone.append(stored.id)
        else:
            if type_id is None:
                type_id = stored.consumer_type_id  # kept before 1.38
            bumped = _run(conn, (
                "UPDATE consumers SET generation = generation + 1, project_id = ?, "
                "user_id = ?, consumer_type_id = ?, updated_at = ? "
                "WHERE id = ? AND generation = ?"
            ), (project_id, user_id, type_id, now, stored.id, stored.generation))
            if bumped.rowcount != 1:
                raise ConcurrentClaim()
    if gone:
        _run(conn, f"DELETE FROM consumers WHERE id IN ({marks(gone)})", gone)
    return created


def replace(w: Writer, claims: Sequence[Claim]) -> None:
    """Make each consumer hold exactly what its claim names (all or nothing)."""
    apply(w, prepare(w, claims))


# -- reads -----------------------------------------------------------------------------------
@dataclass
class ConsumerAllocations:
    """What one consumer holds, as GET /allocations/{consumer_uuid} shows it."""

    project_id: str
    user_id: str
    generation: int
    consumer_type: str | None
    # provider uuid -> (provider generation, resource class -> amount)
    providers: dict[str, tuple[int, dict[str, int]]]
    last_modified: datetime.datetime | None


_ct = schema.consumer_types
_projects = schema.projects
_users = schema.users
# SELECT rp.uuid, rp.generation, rc.name, a.used, a.created_at, a.updated_at,
#        c.generation, ct.name, p.external_id, u.external_id
# FROM allocations a JOIN resource_providers rp ON rp.id = a.resource_provider_id
# JOIN resource_classes rc ON rc.id = a.resource_class_id
# JOIN consumers c ON c.uuid = a.consumer_id JOIN projects p ON p.id = c.project_id
# JOIN users u ON u.id = c.user_id LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id
# WHERE a.consumer_id = :uuid ORDER BY a.id
_FOR_CONSUMER = (
    sa.select(
        _rp.c.uuid, _rp.c.generation, _rc.c.name, _alloc.c.used, _alloc.c.created_at,
        _alloc.c.updated_at, _consumers.c.generation, _ct.c.name, _projects.c.external_id,
        _users.c.external_id,
    )
    .select_from(_alloc)
    .join(_rp, _rp.c.id == _alloc.c.resource_provider_id)
    .join(_rc, _rc.c.id == _alloc.c.resource_class_id)
    .join(_consumers, _consumers.c.uuid == _alloc.c.consumer_id)
    .join(_projects, _projects.c.id == _consumers.c.project_id)
    .join(_users, _users.c.id == _consumers.c.user_id)
    .outerjoin(_ct, _ct.c.id == _consumers.c.consumer_type_id)
    .where(_alloc.c.consumer_id == sa.bindparam("uuid"))
    .order_by(_alloc.c.id)
)


def _newest(
    current: datetime.datetime | None, created: datetime.datetime | None,
    updated: datetime.datetime | None,
) -> datetime.datetime | None:
    stamp = updated or created
    if stamp is None or (current is not None and current >= stamp):
        return current
    return stamp


def for_consumer(conn: Connection, consumer_uuid: str) -> ConsumerAllocations | None:
    """The consumer's allocations, or None if it holds none."""
    found: ConsumerAllocations | None = None
    for row in conn.execute(_FOR_CONSUMER, {"uuid": consumer_uuid}):
        if found is None:
            found = ConsumerAllocations(row[8], row[9], row[6], row[7], {}, None)
        _, amounts = found.providers.setdefault(row[0], (row[1], {}))
        amounts[row[2]] = row[3]
        found.last_modified = _newest(found.last_modified, row[4], row[5])
    return found


@dataclass
class ProviderAllocations:
    """Who holds what on one provider, as GET /resource_providers/{uuid}/allocations shows."""

    # consumer uuid -> (consumer generation, resource class -> amount)
    consumers: dict[str, tuple[int, dict[str, int]]]
    last_modified: datetime.datetime | None


# SELECT a.consumer_id, c.generation, rc.name, a.used, a.created_at, a.updated_at
# FROM allocations a JOIN consumers c ON c.uuid = a.consumer_id
# JOIN resource_classes rc ON rc.id = a.resource_class_id
# WHERE a.resource_provider_id = :id ORDER BY a.id
_FOR_PROVIDER = (
    sa.select(
        _alloc.c.consumer_id, _consumers.c.generation, _rc.c.name, _alloc.c.used,
        _alloc.c.created_at, _alloc.c.updated_at,
    )
    .select_from(_alloc)
    .join(_consumers, _consumers.c.uuid == _alloc.c.consumer_id)
    .join(_rc, _rc.c.id == _alloc.c.resource_class_id)
    .where(_alloc.c.resource_provider_id == sa.bindparam("id"))
    .order_by(_alloc.c.id)
)


def for_provider(conn: Connection, provider_id: int) -> ProviderAllocations:
    """The allocations held on one provider, by consumer."""
    found = ProviderAllocations({}, None)
    for row in conn.execute(_FOR_PROVIDER, {"id": provider_id}):
        _, amounts = found.consumers.setdefault(row[0], (row[1], {}))
        amounts[row[2]] = row[3]
        found.last_modified = _newest(found.last_modified, row[4], row[5])
    return found


_HELD_SQL = ("SELECT resource_provider_id, resource_class_id, used FROM allocations "
             "WHERE consumer_id = ?")


def delete_consumer(w: Writer, consumer_uuid: str) -> bool:
    """Delete every allocation of the consumer, and the consumer; False if it held none.

    As upstream, no generation changes.
    """
    conn = w.conn
    held = _run(conn, _HELD_SQL, [consumer_uuid]).rows
    if not held:
        return False
    lock_providers(conn, ids=sorted({row[0] for row in held}))
    if conn.dialect.name == "postgresql":
        # Read again under the locks: a claim of the consumer's may have committed
        # meanwhile (SQLite's write transaction already excluded it).
        held = _run(conn, _HELD_SQL, [consumer_uuid]).rows
    _run(conn, "DELETE FROM allocations WHERE consumer_id = ?", [consumer_uuid])
    _run(conn, "DELETE FROM consumers WHERE uuid = ?", [consumer_uuid])
    usage: dict[tuple[int, int], int] = defaultdict(int)
    for provider_id, rc_id, used in held:
        usage[(int(provider_id), int(rc_id))] -= int(used)
    w.allocations_changed(usage, ())
    return True
