"""``Statement`` on SQLite: inside a transaction it runs on the DBAPI connection, and
what it writes, reads and raises is what SQLAlchemy's own execution gives. On
PostgreSQL, where it runs on the driver's cursor, what it raises is SQLAlchemy's too."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from moorage.db.database import Database
from moorage.db.statements import Statement, datetime_from_driver, driver_sql, driver_sql_many

metadata = sa.MetaData()


def _table(name: str, into: sa.MetaData) -> sa.Table:
    return sa.Table(
        name, into,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("name", sa.String(32), nullable=False, unique=True),
        sa.Column("done", sa.Boolean, nullable=False),
        sa.Column("at", sa.DateTime, nullable=True),
        sa.Column("note", sa.Text, nullable=True),
    )


things = _table("things", metadata)

# A value of every kind a hot statement binds, the timestamp with and without its
# microseconds (SQLite compares their text: the form must be SQLAlchemy's exactly).
VALUES = [
    {"id": 1, "name": "one", "done": True, "at": datetime.datetime(2026, 1, 2, 3, 4, 5),
     "note": "é ünïcode"},
    {"id": 2, "name": "two", "done": False,
     "at": datetime.datetime(2026, 1, 2, 3, 4, 5, 600), "note": None},
    {"id": 3, "name": "three", "done": True, "at": None, "note": ""},
]

_INSERT = Statement(things.insert().values(
    {name: sa.bindparam(name) for name in ("id", "name", "done", "at", "note")}))
# A bindparam typed by nothing it is compared with: a datetime value still goes in
# SQLAlchemy's form.
_TOUCH = Statement(things.update().where(things.c.name == sa.bindparam("b_name"))
                   .values(at=sa.bindparam("when", type_=sa.types.NullType())))
_SINCE = Statement(sa.select(things.c.id, things.c.name)
                   .where(things.c.at >= sa.bindparam("b_since")).order_by(things.c.id))
_TIMES = Statement(sa.select(things.c.id, things.c.at).order_by(things.c.id))
_TIMES_AS_TEXT = Statement(sa.select(things.c.id, things.c.at).order_by(things.c.id),
                           sqlite_driver=True)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'things.sqlite'}")
    metadata.create_all(database.engine)
    yield database
    database.dispose()


def _stored(db: Database, table: str = "things") -> list[tuple[object, ...]]:
    """The rows as SQLite holds them (the driver's values, no type processing)."""
    with db.reader() as conn:
        return [tuple(row) for row in conn.exec_driver_sql(
            f"SELECT id, name, done, at, note FROM {table} ORDER BY id")]


def _executed(db: Database) -> list[str]:
    """Every statement SQLAlchemy's execution path runs from now on."""
    seen: list[str] = []
    sa.event.listen(db.engine, "before_cursor_execute",
                    lambda _c, _cur, sql, *_rest: seen.append(sql))
    return seen


def test_a_statement_writes_what_sqlalchemy_writes(db: Database) -> None:
    twins = _table("twins", sa.MetaData())
    twins.create(db.engine)
    executed = _executed(db)
    with db.writer() as writer:
        for row in VALUES:
            assert _INSERT.run(writer.conn, row).rowcount == 1
    assert executed == [], "a Statement in a transaction went through SQLAlchemy"
    with db.writer() as writer:
        writer.conn.execute(twins.insert(), VALUES)
    assert _stored(db) == _stored(db, "twins")
    assert _stored(db)[1][3] == "2026-01-02 03:04:05.000600"


@pytest.mark.parametrize("moment", [
    datetime.datetime(987, 6, 5, 4, 3, 2, 1),  # a year of three digits
    datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),  # aware
    datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone(
        datetime.timedelta(hours=-5))),
    datetime.date(2026, 1, 2),  # a date, no time
], ids=["early-year", "utc", "offset", "date"])
def test_every_datetime_is_written_in_sqlalchemys_text(db: Database,
                                                        moment: datetime.date) -> None:
    """The DATETIME writer's short cut (``isoformat``) for naive datetimes leaves every
    other value to SQLAlchemy: the text stored is SQLAlchemy's whatever comes."""
    twins = _table("twins", sa.MetaData())
    twins.create(db.engine)
    row = {"id": 1, "name": "one", "done": True, "at": moment, "note": None}
    with db.writer() as writer:
        _INSERT.run(writer.conn, row)
        writer.conn.execute(twins.insert(), [row])
    assert _stored(db) == _stored(db, "twins")


def test_a_datetime_bound_without_a_type_is_written_as_sqlalchemy_writes_one(
        db: Database) -> None:
    with db.writer() as writer:
        for row in VALUES:
            _INSERT.run(writer.conn, row)
        when = datetime.datetime(2026, 5, 6, 7, 8, 9)
        assert _TOUCH.run(writer.conn, {"b_name": "three", "when": when}).rowcount == 1
    assert _stored(db)[2][3] == "2026-05-06 07:08:09.000000"
    with db.reader() as conn:
        # Compared as text with a typed bound value: found only in the same form.
        found = _SINCE.run(conn, {"b_since": datetime.datetime(2026, 1, 2, 3, 4, 5, 1)})
    assert [tuple(row) for row in found] == [(2, "two"), (3, "three")]


def test_rows_come_back_as_sqlalchemy_gives_them(db: Database) -> None:
    with db.writer() as writer:
        for row in VALUES:
            _INSERT.run(writer.conn, row)
    with db.reader() as conn:
        typed = [tuple(row) for row in _TIMES.run(conn, {})]
        text = [tuple(row) for row in _TIMES_AS_TEXT.run(conn, {})]
    # A DATETIME read back is SQLAlchemy's to process: a datetime, as conn.execute gives.
    assert typed == [(row["id"], row["at"]) for row in VALUES]
    # The caller that asked for the driver's values gets SQLite's text.
    assert text == [(1, "2026-01-02 03:04:05.000000"), (2, "2026-01-02 03:04:05.000600"),
                    (3, None)]


def test_an_error_is_sqlalchemys_and_nothing_is_half_written(db: Database) -> None:
    with db.writer() as writer:
        _INSERT.run(writer.conn, VALUES[0])
    with pytest.raises(sa.exc.IntegrityError, match=r"UNIQUE constraint failed: things\.name"), \
            db.writer() as writer:
        _INSERT.run(writer.conn, VALUES[1])
        _INSERT.run(writer.conn, {**VALUES[2], "name": "one"})
    assert [row[0] for row in _stored(db)] == [1]


def test_a_snapshot_read_runs_on_the_driver_outside_a_transaction(db: Database) -> None:
    """A SELECT read as its own snapshot begins nothing (a reader of one statement,
    placement's catch-up), and its text timestamps read back as SQLAlchemy's."""
    with db.writer() as writer:
        for row in VALUES:
            _INSERT.run(writer.conn, row)
    snapshot = Statement(sa.select(things.c.id, things.c.at).order_by(things.c.id),
                         sqlite_driver=True, snapshot=True)
    executed = _executed(db)
    with db.engine.connect() as conn:
        rows = [tuple(row) for row in snapshot.run(conn, {})]
        assert not conn.in_transaction()
        read = [datetime_from_driver(conn.dialect, at) for _id, at in rows]
    assert executed == [], "a snapshot read went through SQLAlchemy"
    assert rows[1] == (2, "2026-01-02 03:04:05.000600")
    assert read == [row["at"] for row in VALUES]
    with pytest.raises(ValueError, match="only a SELECT"):
        Statement(things.delete(), snapshot=True)


def test_outside_a_transaction_sqlalchemy_begins_one(db: Database) -> None:
    executed = _executed(db)
    with db.engine.connect() as conn:
        assert not conn.in_transaction()
        _INSERT.run(conn, VALUES[0])
        assert conn.in_transaction()  # SQLAlchemy's autobegin
        conn.rollback()
    assert len(executed) == 1 and executed[0].startswith("INSERT INTO things")
    assert _stored(db) == []


def test_driver_sql_runs_in_the_transaction_and_fails_as_sqlalchemy_does(
        db: Database) -> None:
    insert = "INSERT INTO things (id, name, done, at, note) VALUES (?, ?, ?, ?, ?)"
    executed = _executed(db)
    with db.writer() as writer:
        driver_sql_many(writer.conn, insert, [(1, "one", 1, None, None),
                                              (2, "two", 0, None, "x")])
        assert [tuple(row) for row in driver_sql(
            writer.conn, "SELECT id, note FROM things WHERE done = ? ORDER BY id", (0,))
        ] == [(2, "x")]
    assert executed == [], "driver SQL in a transaction went through SQLAlchemy"
    with pytest.raises(sa.exc.IntegrityError, match=r"UNIQUE constraint failed"), \
            db.writer() as writer:
        driver_sql(writer.conn, "DELETE FROM things WHERE id = ?", (1,))
        driver_sql_many(writer.conn, insert, [(3, "three", 1, None, None),
                                              (4, "two", 1, None, None)])
    # The failed transaction undid its delete and its first insert.
    assert [row[:2] for row in _stored(db)] == [(1, "one"), (2, "two")]


@pytest.fixture
def pg_db(postgresql_url: str) -> Iterator[Database]:
    database = Database(postgresql_url)
    metadata.create_all(database.engine)
    yield database
    database.dispose()


def test_on_postgresql_an_error_is_sqlalchemys_too(pg_db: Database) -> None:
    # PostgreSQL's statements run on the driver's cursor: what fails there is raised
    # as SQLAlchemy raises it, as on SQLite, and the transaction is undone whole.
    with pg_db.writer() as writer:
        _INSERT.run(writer.conn, VALUES[0])
    with pytest.raises(sa.exc.IntegrityError, match="things_name_key"), \
            pg_db.writer() as writer:
        _INSERT.run(writer.conn, VALUES[1])
        _INSERT.run(writer.conn, {**VALUES[2], "name": "one"})
    with pg_db.reader() as conn:
        assert [row[0] for row in conn.execute(sa.select(things.c.id))] == [1]
    # A regular expression PostgreSQL cannot read is the caller's DataError.
    matching = Statement(sa.select(things.c.id)
                         .where(things.c.name.regexp_match(sa.bindparam("pattern"))))
    with pytest.raises(sa.exc.DataError, match="regular expression"), \
            pg_db.reader() as conn:
        matching.run(conn, {"pattern": "(unclosed"})
