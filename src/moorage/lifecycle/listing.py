"""What a server list asks of the servers table, as SQL: the fields it filters and sorts
on, and the statement that reads one page.

Why in SQL: a cloud holds tens of thousands of servers, and a server list is what
every dashboard polls. Every filter, the order and the page are the query's, so a page
reads a page of rows: the default order (newest first) walks
``ix_servers_created_at_uuid``; tags are matched by EXISTS on ``server_tags``' keys;
the fields a server keeps in its attributes (key name, hostname, locked...) are read
by the database's JSON functions.

Paging: the page after a marker is the keyset after the marker's own values of the
sort fields (read by a first statement), ties broken by created_at and uuid, so a page
never repeats or skips a server, whatever the order. A field that may be NULL sorts and
compares as a blank value of its type (SQLite and PostgreSQL put NULLs at opposite
ends; a blank is in the same place on both).

The compute API translates nova's names and rules into a ``ServerQuery``
(``moorage.api.server_query``); nothing here knows HTTP.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from moorage.db.statements import Statement
from moorage.lifecycle.schema import server_tags, servers
from moorage.lifecycle.states import (
    GUEST_RUNS,
    GUEST_STOPPED,
    NOSTATE,
    RUNNING,
    SHUTDOWN,
    VM_STATES,
    ServerStatus,
)

# Any SQL value of a server (a column, a JSON field, a CASE): compared, matched, sorted.
Value = sa.ColumnElement[object]


class ServerField(StrEnum):
    """A value of a server that a list filters or sorts on."""

    UUID = "uuid"
    NAME = "name"
    PROJECT_ID = "project_id"
    USER_ID = "user_id"
    IMAGE_ID = "image_id"
    FLAVOR_ID = "flavor_id"
    AVAILABILITY_ZONE = "availability_zone"
    HOST = "host"
    NODE = "node"
    TASK_STATE = "task_state"
    VM_STATE = "vm_state"  # nova's, from the status (states.VM_STATES)
    POWER_STATE = "power_state"  # nova's, from the status (states.power_state)
    CREATED_AT = "created_at"
    UPDATED_AT = "updated_at"
    LAUNCHED_AT = "launched_at"
    DELETED_AT = "deleted_at"
    # Kept in servers.attributes (lifecycle.attributes.ServerAttributes, same names).
    RESERVATION_ID = "reservation_id"
    KEY_NAME = "key_name"
    HOSTNAME = "hostname"
    DESCRIPTION = "description"
    ACCESS_IPV4 = "access_ipv4"
    ACCESS_IPV6 = "access_ipv6"
    DISK_CONFIG = "disk_config"
    CONFIG_DRIVE = "config_drive"
    LOCKED = "locked"
    LAUNCH_INDEX = "launch_index"


F = ServerField
_EPOCH = datetime.datetime(1970, 1, 1)
_TEXT, _BOOLEAN, _INTEGER = "text", "boolean", "integer"
# The fields kept in the attributes JSON, by their JSON type.
_ATTRIBUTES: Mapping[ServerField, str] = {
    F.RESERVATION_ID: _TEXT, F.KEY_NAME: _TEXT, F.HOSTNAME: _TEXT, F.DESCRIPTION: _TEXT,
    F.ACCESS_IPV4: _TEXT, F.ACCESS_IPV6: _TEXT, F.DISK_CONFIG: _TEXT,
    F.CONFIG_DRIVE: _BOOLEAN, F.LOCKED: _BOOLEAN, F.LAUNCH_INDEX: _INTEGER}
# What a field that may be NULL sorts and compares as when it is (a JSON field is NULL
# in a row written before the field existed).
_BLANKS: Mapping[ServerField, object] = {
    F.AVAILABILITY_ZONE: "", F.HOST: "", F.NODE: "", F.TASK_STATE: "",
    F.LAUNCHED_AT: _EPOCH, F.DELETED_AT: _EPOCH,
    **{name: {_TEXT: "", _BOOLEAN: False, _INTEGER: 0}[kind]
       for name, kind in _ATTRIBUTES.items()}}


def _literals(statuses: frozenset[ServerStatus]) -> list[sa.BindParameter[str]]:
    return [sa.literal(str(s)) for s in sorted(statuses)]


def value(name: ServerField, postgresql: bool) -> Value:
    """The SQL of a field: its column, its JSON field (``CAST(attributes AS JSONB) ->>
    'key_name'`` on PostgreSQL, ``JSON_EXTRACT(attributes, '$."key_name"')`` on SQLite),
    or nova's state derived from the status (a CASE)."""
    if name == F.VM_STATE:
        return sa.case({str(s): vm for s, vm in VM_STATES.items()},
                       value=servers.c.status, else_="error")
    if name == F.POWER_STATE:
        # IN lists of single values, not an expanding one: the statement is compiled
        # once (``page``).
        return sa.case((servers.c.status.in_(_literals(GUEST_RUNS)), RUNNING),
                       (servers.c.status.in_(_literals(GUEST_STOPPED)), SHUTDOWN),
                       else_=NOSTATE)
    kind = _ATTRIBUTES.get(name)
    if kind is None:
        column: Value = servers.c[name.value]
        return column
    document = (sa.cast(servers.c.attributes, JSONB) if postgresql
                else sa.type_coerce(servers.c.attributes, sa.JSON))
    item = document[name.value]
    found: Value = (item.as_boolean() if kind == _BOOLEAN else
                    item.as_integer() if kind == _INTEGER else item.as_string())
    return found


def _sorted_value(name: ServerField, postgresql: bool) -> Value:
    """The field as it sorts: NULL as its blank."""
    found = value(name, postgresql)
    if name not in _BLANKS:
        return found
    blank = _BLANKS[name]
    literal = sa.literal(blank, sa.DateTime) if isinstance(blank, datetime.datetime) \
        else sa.literal(blank)
    return sa.func.coalesce(found, literal)


_NOT_TEXT = frozenset({F.CREATED_AT, F.UPDATED_AT, F.LAUNCHED_AT, F.DELETED_AT,
                       F.POWER_STATE, *(n for n, kind in _ATTRIBUTES.items() if kind != _TEXT)})


def _text(name: ServerField, postgresql: bool) -> Value:
    """The field as text, for a regular expression (nova matches its times and numbers
    as their text too)."""
    found = value(name, postgresql)
    return sa.cast(found, sa.String) if name in _NOT_TEXT else found


@dataclass(frozen=True)
class Sort:
    """One key of a list's order."""

    name: ServerField
    descending: bool = True


class Deleted(StrEnum):
    """Which servers a list reads by whether they are deleted."""

    EXCLUDED = "excluded"  # the default
    INCLUDED = "included"  # nova's changes-since and changes-before
    ONLY = "only"  # an administrator's deleted=true


@dataclass(frozen=True)
class TagMatch:
    """nova's tag filters: all of ``all_of`` (``tags``), any of ``any_of``
    (``tags-any``), not all of ``not_all_of`` (``not-tags``), none of ``none_of``
    (``not-tags-any``). Empty: that filter is not asked."""

    all_of: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    not_all_of: tuple[str, ...] = ()
    none_of: tuple[str, ...] = ()


NEWEST_FIRST = (Sort(F.CREATED_AT, True),)


@dataclass(frozen=True)
class ServerQuery:
    """What a server list asks: every filter given must hold."""

    # The field is one of these values (the project, the user, the image...).
    equal: Mapping[ServerField, frozenset[str]] = field(default_factory=dict)
    # The field's text matches this regular expression (anywhere in it, as re.search).
    patterns: Mapping[ServerField, str] = field(default_factory=dict)
    # The field (a yes or no: locked, config_drive) is this.
    flags: Mapping[ServerField, bool] = field(default_factory=dict)
    statuses: frozenset[ServerStatus] | None = None  # None: any
    tags: TagMatch = TagMatch()
    deleted: Deleted = Deleted.EXCLUDED
    # Updated at or after / at or before (naive UTC).
    changes_since: datetime.datetime | None = None
    changes_before: datetime.datetime | None = None
    sort: tuple[Sort, ...] = NEWEST_FIRST
    limit: int | None = None
    marker: str | None = None  # the uuid of the server the page comes after


def order(query: ServerQuery) -> tuple[Sort, ...]:
    """The query's order with nova's tie-breakers: created_at, then the uuid (nova's
    row id), in the first key's direction."""
    keys = list(query.sort or NEWEST_FIRST)
    direction = keys[0].descending
    names = {key.name for key in keys}
    keys += [Sort(name, direction) for name in (F.CREATED_AT, F.UUID) if name not in names]
    return tuple(keys)


@dataclass(frozen=True)
class _Shape:
    """A query with its values taken out, each replaced by the name of the parameter
    that carries it (``shaped``): what the statement of a page is built from. Queries
    of one shape (a dashboard's poll, again and again) share one statement."""

    deleted: Deleted
    statuses: tuple[str, ...] | None
    equal: tuple[tuple[ServerField, tuple[str, ...]], ...]
    patterns: tuple[tuple[ServerField, str], ...]
    flags: tuple[tuple[ServerField, str], ...]
    changes_since: str | None
    changes_before: str | None
    all_of: tuple[str, ...]
    any_of: tuple[str, ...]
    not_all_of: tuple[str, ...]
    none_of: tuple[str, ...]
    order: tuple[Sort, ...]
    marker: tuple[str, ...] | None  # one per key of the order
    limit: str | None


def shaped(query: ServerQuery, marker: Sequence[object] | None
           ) -> tuple[_Shape, dict[str, object]]:
    """The query's shape, and the values of its parameters by name. ``marker``: the
    marker's ``marker_values``, or None for a first page."""
    # Named q_...: SQLAlchemy names the statement's own values after their columns
    # (status_1), and a name may not be both.
    params: dict[str, object] = {}

    def taken(prefix: str, values: Sequence[object]) -> tuple[str, ...]:
        names = tuple(f"q_{prefix}_{i}" for i in range(len(values)))
        params.update(zip(names, values, strict=True))
        return names

    def one(name: str, value: object) -> str:
        params[f"q_{name}"] = value
        return f"q_{name}"

    tags = query.tags
    return _Shape(
        deleted=query.deleted,
        statuses=None if query.statuses is None else taken(
            "status", sorted(str(s) for s in query.statuses)),
        equal=tuple((name, taken(f"equal_{name}", sorted(values)))
                    for name, values in sorted(query.equal.items())),
        patterns=tuple((name, one(f"pattern_{name}", pattern))
                       for name, pattern in sorted(query.patterns.items())),
        flags=tuple((name, one(f"flag_{name}", wanted))
                    for name, wanted in sorted(query.flags.items())),
        changes_since=None if query.changes_since is None else one(
            "changes_since", query.changes_since),
        changes_before=None if query.changes_before is None else one(
            "changes_before", query.changes_before),
        all_of=taken("tag_all", tags.all_of), any_of=taken("tag_any", tags.any_of),
        not_all_of=taken("tag_not_all", tags.not_all_of),
        none_of=taken("tag_none", tags.none_of),
        order=order(query),
        marker=None if marker is None else taken("marker", marker),
        limit=None if query.limit is None else one("limit", query.limit),
    ), params


def _among(found: Value, names: Sequence[str]) -> sa.ColumnElement[bool]:
    """``found IN (:a, :b...)``; false for no values."""
    return found.in_([sa.bindparam(name) for name in names]) if names else sa.false()


def _has(param: str) -> sa.Exists:
    """The server has the tag parameter ``param`` carries."""
    # EXISTS (SELECT 1 FROM server_tags WHERE server_uuid = servers.uuid AND tag = :param)
    return sa.exists().where(server_tags.c.server_uuid == servers.c.uuid,
                             server_tags.c.tag == sa.bindparam(param))


def _has_any(params: Sequence[str]) -> sa.Exists:
    """The server has one of the tags ``params`` carry."""
    # EXISTS (SELECT 1 FROM server_tags WHERE server_uuid = servers.uuid
    #         AND tag IN (:p0, :p1...))
    return sa.exists().where(server_tags.c.server_uuid == servers.c.uuid,
                             _among(server_tags.c.tag, params))


def _conditions(shape: _Shape, postgresql: bool) -> list[sa.ColumnElement[bool]]:
    found: list[sa.ColumnElement[bool]] = []
    deleted = servers.c.status == str(ServerStatus.DELETED)
    if shape.deleted == Deleted.EXCLUDED:
        found.append(sa.not_(deleted))
    elif shape.deleted == Deleted.ONLY:
        found.append(deleted)
    if shape.statuses is not None:
        found.append(_among(servers.c.status, shape.statuses))
    for name, names in shape.equal:
        found.append(_among(value(name, postgresql), names))
    for name, pattern in shape.patterns:
        found.append(_text(name, postgresql).regexp_match(sa.bindparam(pattern)))
    for name, wanted in shape.flags:
        found.append(_sorted_value(name, postgresql) == sa.bindparam(wanted))
    if shape.changes_since is not None:
        found.append(servers.c.updated_at >= sa.bindparam(shape.changes_since))
    if shape.changes_before is not None:
        found.append(servers.c.updated_at <= sa.bindparam(shape.changes_before))
    found += [_has(tag) for tag in shape.all_of]
    if shape.any_of:
        found.append(_has_any(shape.any_of))
    if shape.not_all_of:
        found.append(sa.not_(sa.and_(*(_has(tag) for tag in shape.not_all_of))))
    if shape.none_of:
        found.append(sa.not_(_has_any(shape.none_of)))
    return found


def marker_values(query: ServerQuery, postgresql: bool) -> sa.Select[*tuple[object, ...]]:
    """The marker's values of the sort fields, in order (no row: no such server)."""
    # SELECT <sort values> FROM servers WHERE uuid = :marker
    return sa.select(*(_sorted_value(key.name, postgresql) for key in order(query))).where(
        servers.c.uuid == query.marker)


def _after(keys: Sequence[Sort], marker: Sequence[str], postgresql: bool
           ) -> sa.ColumnElement[bool]:
    """The rows after the marker in this order: (k1 after m1) OR (k1 = m1 AND k2 after
    m2) OR ...; the last key is the uuid, so no two rows tie. ``marker``: the names of
    the parameters carrying the marker's values."""
    values = [_sorted_value(key.name, postgresql) for key in keys]
    # The marker's values bound as their fields' types (a yes or no is compared as one).
    bound = [sa.bindparam(m, type_=v.type) for v, m in zip(values, marker, strict=True)]
    either: list[sa.ColumnElement[bool]] = []
    for index, key in enumerate(keys):
        same = [values[i] == bound[i] for i in range(index)]
        beyond = (values[index] < bound[index] if key.descending
                  else values[index] > bound[index])
        either.append(sa.and_(*same, beyond))
    return sa.or_(*either)


# A statement paged newest first, of whatever rows it reads.
Page = TypeVar("Page", bound=sa.Select[*tuple[object, ...]])


def newest_first_page(statement: Page, time: sa.ColumnElement[datetime.datetime],
                      ident: sa.ColumnElement[int],
                      after: tuple[datetime.datetime, int] | None,
                      limit: int | None) -> Page:
    """``statement`` newest first by ``time`` (then ``ident``, so no two rows tie),
    from the row after ``after`` (the marker's ``time`` and ``ident``; None: from the
    newest), at most ``limit`` rows: the keyset page of the lists that only ever
    sort newest first (instance actions, migrations)."""
    # [AND (time < :t OR (time = :t AND ident < :id))] ORDER BY time DESC, ident DESC
    if after is not None:
        marked_time, marked_id = after
        statement = statement.where(sa.or_(
            time < marked_time, sa.and_(time == marked_time, ident < marked_id)))
    statement = statement.order_by(time.desc(), ident.desc())
    return statement.limit(limit) if limit is not None else statement


def page(query: ServerQuery, marker: Sequence[object] | None, postgresql: bool
         ) -> tuple[Statement, dict[str, object]]:
    """The statement of one page, and its parameters. ``marker``: the marker's
    ``marker_values``.

    Every value of the query is a parameter, so the statement is built and compiled
    once per shape of query: a dashboard polling ``changes-since`` sends the same
    shape every time, and building the statement cost more than running it (an empty
    poll's CPU was two thirds SQLAlchemy's statement building and caching)."""
    shape, params = shaped(query, marker)
    return _page_of(shape, postgresql), params


@functools.lru_cache(maxsize=256)
def _page_of(shape: _Shape, postgresql: bool) -> Statement:
    # SELECT * FROM servers WHERE <filters> [AND <after the marker>]
    #   ORDER BY <sort values>, created_at, uuid [LIMIT :limit]
    statement = sa.select(servers).where(*_conditions(shape, postgresql))
    if shape.marker is not None:
        statement = statement.where(_after(shape.order, shape.marker, postgresql))
    statement = statement.order_by(*(
        _sorted_value(key.name, postgresql).desc() if key.descending
        else _sorted_value(key.name, postgresql).asc() for key in shape.order))
    if shape.limit is not None:
        statement = statement.limit(sa.bindparam(shape.limit, type_=sa.Integer))
    # Read as the driver gives the rows (store.list_servers reads its timestamps).
    return Statement(statement, sqlite_driver=True)
