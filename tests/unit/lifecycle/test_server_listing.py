"""Listing servers as GET /servers asks the store: every filter, order and page in the
query (``listing``), on both backends; and a server's tags rows kept in step with its
attributes by the writes that change them."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterator, Mapping

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory

from moorage.api.storage import migration
from moorage.db.database import Database
from moorage.lifecycle import machine, store
from moorage.lifecycle.attributes import ServerAttributes
from moorage.lifecycle.listing import Deleted, ServerField, ServerQuery, Sort, TagMatch
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.schema import server_tags
from moorage.lifecycle.states import ServerStatus
from tests.lifecycle_paths import drive, new_record, paths

F = ServerField
T0 = datetime.datetime(2020, 1, 1, 12, 0, 0)
ACTIVE, ERROR = (ServerStatus.ACTIVE, None), (ServerStatus.ERROR, None)
DELETED = (ServerStatus.DELETED, None)


@dataclasses.dataclass(frozen=True)
class Spec:
    """A server of the fixture: where it is and what its owner said of it."""

    name: str
    minute: int
    state: tuple[ServerStatus, None] | None = ACTIVE  # None: BUILD, as created
    project: str = "p1"
    host: str = "h1"
    zone: str | None = None
    attributes: ServerAttributes = dataclasses.field(default_factory=ServerAttributes)


SERVERS = (
    Spec("web-1", 1, host="h1", zone="az1", attributes=ServerAttributes(
        tags=("web", "blue"), key_name="k1", hostname="web-1", config_drive=True)),
    Spec("web-2", 2, host="h2", attributes=ServerAttributes(
        tags=("web", "red"), key_name="k2", hostname="web-2")),
    Spec("db-1", 3, state=None, attributes=ServerAttributes(tags=("db",))),
    Spec("db-2", 4, state=ERROR, project="p2", attributes=ServerAttributes(
        reservation_id="r-0042", locked=True)),
    Spec("old", 0, state=DELETED, attributes=ServerAttributes(tags=("web",))),
    Spec("locked", 5, attributes=ServerAttributes(locked=True, key_name="k1",
                                                  description="the lock")),
)


def _record(spec: Spec) -> ServerRecord:
    base = new_record(spec.name)
    return dataclasses.replace(base, project_id=spec.project, availability_zone=spec.zone,
                               created_at=T0 + datetime.timedelta(minutes=spec.minute),
                               attributes=spec.attributes)


@pytest.fixture(scope="module")
def servers(shared_db: Database) -> Iterator[Database]:
    """The servers of SERVERS, each brought to its state by the table's transitions."""
    for spec in SERVERS:
        with shared_db.writer() as writer:
            store.insert_server(writer.conn, _record(spec))
        if spec.state is not None:
            drive(shared_db, spec.name, paths()[spec.state], spec.host)
    yield shared_db


def _names(db: Database, query: ServerQuery) -> list[str]:
    with db.reader() as conn:
        return [record.name for record in store.list_servers(conn, query)]


def _equal(**values: str) -> Mapping[ServerField, frozenset[str]]:
    return {F(name): frozenset({value}) for name, value in values.items()}


# (what the query asks, the names it lists, newest first)
FILTERS: list[tuple[ServerQuery, list[str]]] = [
    (ServerQuery(), ["locked", "db-2", "db-1", "web-2", "web-1"]),
    (ServerQuery(equal=_equal(project_id="p1")), ["locked", "db-1", "web-2", "web-1"]),
    (ServerQuery(equal=_equal(host="h2")), ["web-2"]),
    (ServerQuery(equal=_equal(task_state="scheduling")), ["db-1"]),
    (ServerQuery(patterns={F.NAME: "^web"}), ["web-2", "web-1"]),
    (ServerQuery(patterns={F.NAME: "[0-9]$"}), ["db-2", "db-1", "web-2", "web-1"]),
    (ServerQuery(patterns={F.KEY_NAME: "k1"}), ["locked", "web-1"]),
    (ServerQuery(patterns={F.RESERVATION_ID: "0042"}), ["db-2"]),
    (ServerQuery(patterns={F.AVAILABILITY_ZONE: "az"}), ["web-1"]),
    (ServerQuery(patterns={F.DESCRIPTION: "lock"}), ["locked"]),
    (ServerQuery(patterns={F.CREATED_AT: "12:03"}), ["db-1"]),
    (ServerQuery(patterns={F.POWER_STATE: "1"}), ["locked", "web-2", "web-1"]),
    (ServerQuery(flags={F.LOCKED: True}), ["locked", "db-2"]),
    (ServerQuery(flags={F.LOCKED: False}), ["db-1", "web-2", "web-1"]),
    (ServerQuery(flags={F.CONFIG_DRIVE: True}), ["web-1"]),
    (ServerQuery(statuses=frozenset({ServerStatus.ERROR, ServerStatus.BUILD})),
     ["db-2", "db-1"]),
    (ServerQuery(statuses=frozenset()), []),
    (ServerQuery(deleted=Deleted.ONLY), ["old"]),
    (ServerQuery(deleted=Deleted.INCLUDED, equal=_equal(project_id="p1"),
                 patterns={F.NAME: "o"}), ["locked", "old"]),
    (ServerQuery(tags=TagMatch(all_of=("web",))), ["web-2", "web-1"]),
    (ServerQuery(tags=TagMatch(all_of=("web", "red"))), ["web-2"]),
    (ServerQuery(tags=TagMatch(any_of=("red", "db"))), ["db-1", "web-2"]),
    (ServerQuery(tags=TagMatch(not_all_of=("web", "blue"))),
     ["locked", "db-2", "db-1", "web-2"]),
    (ServerQuery(tags=TagMatch(none_of=("web", "db"))), ["locked", "db-2"]),
    (ServerQuery(tags=TagMatch(all_of=("web",), none_of=("blue",))), ["web-2"]),
    (ServerQuery(deleted=Deleted.INCLUDED, tags=TagMatch(all_of=("web",))),
     ["web-2", "web-1", "old"]),
]


@pytest.mark.parametrize(("query", "expected"), FILTERS)
def test_each_filter_is_the_query_s(servers: Database, query: ServerQuery,
                                    expected: list[str]) -> None:
    assert _names(servers, query) == expected


# (the order asked, the names in it)
ORDERS: list[tuple[tuple[Sort, ...], list[str]]] = [
    ((Sort(F.NAME, False),), ["db-1", "db-2", "locked", "web-1", "web-2"]),
    ((Sort(F.NAME, True),), ["web-2", "web-1", "locked", "db-2", "db-1"]),
    # Those without a key name sort as a blank: first ascending, on both backends.
    ((Sort(F.KEY_NAME, False),), ["db-1", "db-2", "web-1", "locked", "web-2"]),
    ((Sort(F.KEY_NAME, False), Sort(F.NAME, True)),
     ["db-2", "db-1", "web-1", "locked", "web-2"]),
    ((Sort(F.VM_STATE, False),), ["web-1", "web-2", "locked", "db-1", "db-2"]),
    ((Sort(F.LOCKED, True), Sort(F.CREATED_AT, False)),
     ["db-2", "locked", "web-1", "web-2", "db-1"]),
    ((Sort(F.HOST, False),), ["db-1", "db-2", "web-1", "locked", "web-2"]),
    ((Sort(F.AVAILABILITY_ZONE, True),), ["web-1", "locked", "db-2", "db-1", "web-2"]),
]


@pytest.mark.parametrize(("sort", "expected"), ORDERS)
def test_each_order_and_its_pages(servers: Database, sort: tuple[Sort, ...],
                                  expected: list[str]) -> None:
    """The whole list in the order asked, and the same list walked two at a time from
    each page's last server: no server repeated or skipped."""
    assert _names(servers, ServerQuery(sort=sort)) == expected
    walked: list[str] = []
    marker: str | None = None
    while True:
        page = _names(servers, ServerQuery(sort=sort, limit=2, marker=marker))
        walked += page
        if len(page) < 2:
            break
        marker = page[-1]
    assert walked == expected


def test_a_marker_that_names_no_server_and_an_empty_page(servers: Database) -> None:
    with servers.reader() as conn:
        with pytest.raises(LookupError):
            store.list_servers(conn, ServerQuery(marker="no-such-server"))
        assert store.list_servers(conn, ServerQuery(limit=0)) == []
        # A deleted server is a marker too (nova reads it deleted or not).
        assert store.list_servers(conn, ServerQuery(marker="old")) == []


def test_changes_since_and_before_read_the_last_change(servers: Database) -> None:
    with servers.reader() as conn:
        newest = max(r.updated_at for r in store.list_servers(
            conn, ServerQuery(deleted=Deleted.INCLUDED)))
    assert _names(servers, ServerQuery(changes_since=newest, deleted=Deleted.INCLUDED)) \
        == [_name_updated_at(servers, newest)]
    assert len(_names(servers, ServerQuery(changes_before=newest,
                                           deleted=Deleted.INCLUDED))) == len(SERVERS)
    assert _names(servers, ServerQuery(changes_before=T0)) == []


def _name_updated_at(db: Database, moment: datetime.datetime) -> str:
    with db.reader() as conn:
        [found] = [r.name for r in store.list_servers(
            conn, ServerQuery(deleted=Deleted.INCLUDED)) if r.updated_at == moment]
    return found


def _tag_rows(db: Database, uuid: str) -> set[str]:
    with db.reader() as conn:
        return set(conn.execute(sa.select(server_tags.c.tag).where(
            server_tags.c.server_uuid == uuid)).scalars())


def _retagged(record: ServerRecord, *tags: str) -> ServerAttributes:
    return dataclasses.replace(record.attributes, tags=tags)


def test_describe_keeps_the_tag_rows_in_step_and_only_when_it_writes(db: Database) -> None:
    with db.writer() as writer:
        store.insert_server(writer.conn, dataclasses.replace(
            new_record("s1"), attributes=ServerAttributes(tags=("a", "b"))))
    assert _tag_rows(db, "s1") == {"a", "b"}
    with db.reader() as conn:
        read = store.load_server(conn, "s1")
    assert read is not None
    with db.writer() as writer:
        assert store.describe(writer.conn, read, read.name, _retagged(read, "b", "c"))
    assert _tag_rows(db, "s1") == {"b", "c"}
    # A writer that read before that change loses its compare-and-set: nothing moves.
    with db.writer() as writer:
        assert not store.describe(writer.conn, read, read.name, _retagged(read))
    assert _tag_rows(db, "s1") == {"b", "c"}
    with db.reader() as conn:
        now = store.load_server(conn, "s1")
    assert now is not None and now.attributes.tags == ("b", "c")


def test_describe_holds_the_precondition_at_the_moment_it_writes(db: Database) -> None:
    with db.writer() as writer:
        store.insert_server(writer.conn, new_record("s1"))
    with db.reader() as conn:
        building = store.load_server(conn, "s1")
    assert building is not None
    tags = _retagged(building, "x")
    with db.writer() as writer:  # BUILD: neither tags nor metadata
        assert not store.describe(writer.conn, building, "s1", tags, machine.TAGS_WRITE)
    drive(db, "s1", paths()[ACTIVE])
    with db.reader() as conn:
        active = store.load_server(conn, "s1")
    assert active is not None
    with db.writer() as writer:
        assert store.describe(writer.conn, active, "s1", _retagged(active, "x"),
                              machine.TAGS_WRITE)
    assert _tag_rows(db, "s1") == {"x"}


def test_the_migration_copies_the_tags_servers_have(db: Database) -> None:
    """Servers created before server_tags existed are found by their tags after it."""
    config = migration.MIGRATIONS._config()
    before = ScriptDirectory.from_config(config).get_revision("0008").down_revision
    assert isinstance(before, str)
    with db.engine.begin() as conn:  # the database as it was before 0008
        meta = sa.MetaData()
        meta.reflect(conn)
        meta.drop_all(conn)
        config.attributes["connection"] = conn
        command.upgrade(config, before)
    # The row as the store wrote it then: no server_tags to write to.
    row = store._to_row(dataclasses.replace(
        new_record("s9"), attributes=ServerAttributes(tags=("kept", "too"))))
    del row["vcpus"], row["memory_mb"]  # columns of 0011
    with db.engine.begin() as conn:
        conn.execute(sa.text(f"INSERT INTO servers ({', '.join(row)}) VALUES "
                             f"({', '.join(':' + name for name in row)})"), row)
    migration.upgrade(db)
    assert _tag_rows(db, "s9") == {"kept", "too"}
    assert _names(db, ServerQuery(tags=TagMatch(all_of=("kept",)))) == ["s9"]


def test_a_listed_server_is_read_again_only_when_its_row_changed(db: Database) -> None:
    """Listed rows are read once per version (store._read_row): each caller still gets
    its own record, and a changed row is read as changed."""
    with db.writer() as writer:
        store.insert_server(writer.conn, new_record("s1"))
    first = _listed(db)
    first.name = "changed by its reader"
    again = _listed(db)
    assert again.name == "s1" and again is not first
    with db.writer() as writer:
        assert store.describe(writer.conn, again, "renamed", _retagged(again, "t"))
    renamed = _listed(db)
    assert (renamed.name, renamed.attributes.tags) == ("renamed", ("t",))


def _listed(db: Database) -> ServerRecord:
    with db.reader() as conn:
        [found] = store.list_servers(conn, ServerQuery())
    return found


def test_a_pattern_the_database_cannot_read_is_sqlalchemy_s_data_error(
        db: Database) -> None:
    """A named group: Python's expressions have them, PostgreSQL's do not. The list
    raises what the compute API answers 400 for, and the database reads on."""
    with db.writer() as writer:
        store.insert_server(writer.conn, new_record("alpha"))
    query = ServerQuery(patterns={F.NAME: "(?P<first>a)"})
    if db.dialect == "postgresql":
        with pytest.raises(sa.exc.DataError, match="invalid regular expression"):
            _names(db, query)
    else:
        assert _names(db, query) == ["alpha"]
    assert _names(db, ServerQuery()) == ["alpha"]
