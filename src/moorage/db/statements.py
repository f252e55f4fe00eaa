"""Statements on the write paths, run the cheapest way each backend allows.

A service's hot statements (a server's transition, an operation's claim, placement's
allocation claims) run thousands of times a second under a burst of boots; SQLAlchemy's
execution path cost more CPU than the statements themselves. Inside a transaction they
go to the DBAPI connection of the transaction's connection, compiled once: on
PostgreSQL as psycopg adapts the values, on SQLite with SQLAlchemy's own bind
processing of each parameter's type (the timestamps in the text form the file's
comparisons rely on).
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

# A row as either backend hands it: SQLAlchemy's ``Row`` on SQLite, the driver's
# tuple on PostgreSQL. Read it by position.
Row = Sequence[Any]

# What a Statement holds: a DML statement or a SELECT.
Buildable = sa.Update | sa.Insert | sa.Delete | sa.Select[Any] | sa.CompoundSelect[*tuple[Any, ...]]

# The parameters of driver SQL: by name (``%(name)s``) or by position (``?``).
Parameters = Mapping[str, object] | Sequence[object]


class Outcome:
    """What a ``Statement`` run did: the rows it counted, the rows it returned."""

    __slots__ = ("rowcount", "rows")

    def __init__(self, rowcount: int, rows: list[Row]) -> None:
        self.rowcount = rowcount
        self.rows = rows

    def first(self) -> Row | None:
        return self.rows[0] if self.rows else None

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)


class Statement:
    """A statement built once, run the cheapest way each backend allows.

    On PostgreSQL it is compiled once to the driver's SQL and run on the DBAPI cursor
    of the connection, inside its transaction: SQLAlchemy's execution path cost more
    CPU than the statement (a server's transition: 138 µs against 44), and the
    compute API runs several per boot. psycopg adapts the values (str, int, bool,
    datetime, None) itself.

    On SQLite, inside a transaction, it is compiled once too and run on the DBAPI
    connection, each value through the bind processor SQLAlchemy would apply for its
    type (so a DATETIME is written in the text form the file's comparisons rely on);
    errors are raised as SQLAlchemy raises them (``sa.exc.IntegrityError``...). Rows
    come back as SQLAlchemy would give them when no returned column's type needs
    processing; a statement returning a column that does (a DATETIME read back) runs
    through SQLAlchemy, unless ``sqlite_driver`` says its caller reads the driver's
    values (text timestamps). Outside a transaction (SQLAlchemy's autobegin) it runs
    through SQLAlchemy, which begins one, unless ``snapshot`` says it is a SELECT
    read as its own snapshot: the driver then runs it outside a transaction too (it
    begins nothing for a SELECT). A server's boot runs about ten of them in the
    compute API; this path cut each by about two thirds (``bench/statements.py``).
    The statement's IN lists must not be expanding (write ``a = x OR a = y``)."""

    def __init__(self, statement: Buildable, *,
                 sqlite_driver: bool = False, snapshot: bool = False) -> None:
        if snapshot and not isinstance(statement, sa.Select | sa.CompoundSelect):
            raise ValueError("only a SELECT is read as its own snapshot")
        self.statement = statement
        self.sqlite_driver = sqlite_driver
        self.snapshot = snapshot
        self._driver: tuple[str, dict[str, object]] | None = None
        self._sqlite: _SQLitePlan | None = None
        self._sqlite_compiled = False

    def run(self, conn: Connection, params: Mapping[str, object]) -> Outcome:
        if conn.dialect.name != "postgresql":
            plan = self._sqlite_plan(conn.dialect)
            if plan is not None and (self.snapshot or conn.in_transaction()):
                return plan.run(conn, params)
            result = conn.execute(self.statement, params)
            return Outcome(result.rowcount, list(result) if result.returns_rows else [])
        if self._driver is None:
            compiled = self.statement.compile(dialect=conn.dialect)
            sql = str(compiled)
            if "POSTCOMPILE" in sql:
                raise ValueError("a Statement cannot hold an expanding IN list: " + sql)
            # Values bound in the statement itself (its literals) come with it.
            self._driver = (sql, {k: v for k, v in compiled.params.items()
                                  if v is not None})
        sql, bound = self._driver
        return on_cursor(conn, sql, {**bound, **params} if bound else params)

    def _sqlite_plan(self, dialect: sa.Dialect) -> _SQLitePlan | None:
        if not self._sqlite_compiled:
            self._sqlite = _SQLitePlan.of(self.statement, dialect,
                                          driver_rows=self.sqlite_driver)
            self._sqlite_compiled = True
        return self._sqlite


# A bound value's writer: SQLAlchemy's bind processor for its type, or None.
_Writer = Callable[[object], object] | None


class _SQLitePlan:
    """A statement compiled for SQLite once: its SQL, its parameters' names in order,
    the values bound in it, and each parameter's writer."""

    __slots__ = ("bound", "names", "sql", "writers")

    def __init__(self, sql: str, names: tuple[str, ...], bound: dict[str, object],
                 writers: tuple[_Writer, ...]) -> None:
        self.sql = sql
        self.names = names
        self.bound = bound
        self.writers = writers

    @classmethod
    def of(cls, statement: Buildable, dialect: sa.Dialect, *,
           driver_rows: bool) -> _SQLitePlan | None:
        """The plan, or None when only SQLAlchemy can run it as the caller expects
        (an expanding IN list; a returned column whose type is processed on reading,
        unless the caller takes the driver's values)."""
        compiled = statement.compile(dialect=dialect)
        sql = str(compiled)
        if compiled.positiontup is None or "POSTCOMPILE" in sql:
            if driver_rows:
                raise ValueError("not a statement of fixed positional parameters: " + sql)
            return None
        if not driver_rows and any(
                column.type.dialect_impl(dialect).result_processor(dialect, None)
                is not None for column in statement.exported_columns):
            return None
        names = tuple(compiled.positiontup)
        writers = tuple(_writer(compiled.binds[name].type, dialect) for name in names)
        return cls(sql, names, {k: v for k, v in compiled.params.items() if v is not None},
                   writers)

    def values(self, params: Mapping[str, object]) -> tuple[object, ...]:
        """The driver's values for ``params``, in the SQL's order, each written."""
        given = {**self.bound, **params} if self.bound else params
        return tuple(value if write is None or value is None else write(value)
                     for write, value in zip(self.writers,
                                             (given[name] for name in self.names),
                                             strict=True))

    def run(self, conn: Connection, params: Mapping[str, object]) -> Outcome:
        return on_sqlite(conn, self.sql, self.values(params))


def on_sqlite(conn: Connection, sql: str, values: Sequence[object]) -> Outcome:
    """Execute SQLite's SQL on the DBAPI connection of ``conn``, inside its transaction
    (the caller checked there is one); a failure raised as SQLAlchemy raises it."""
    driver = conn.connection.driver_connection
    assert driver is not None
    try:
        cursor = driver.execute(sql, values)
    except conn.dialect.loaded_dbapi.Error as exc:
        raise _as_sqlalchemy_error(conn, sql, values, exc) from exc
    try:
        rows = cursor.fetchall() if cursor.description is not None else []
        return Outcome(cursor.rowcount, rows)
    finally:
        cursor.close()


def _as_sqlalchemy_error(conn: Connection, sql: str, values: Parameters,
                         exc: Exception) -> BaseException:
    """The DBAPI's ``exc`` as SQLAlchemy raises it (``sa.exc.IntegrityError``...)."""
    error: BaseException = sa.exc.DBAPIError.instance(
        sql, values, exc, conn.dialect.loaded_dbapi.Error, dialect=conn.dialect)
    return error


def _writer(bound: sa.types.TypeEngine[object], dialect: sa.Dialect) -> _Writer:
    """How SQLAlchemy writes a value bound as ``bound`` on ``dialect``. A parameter of
    no type (a bindparam compared with nothing typed) takes a datetime as
    ``driver_datetime`` writes it, and any other value as it is."""
    if isinstance(bound, sa.types.NullType):
        return lambda value: (driver_datetime(dialect, value)
                              if isinstance(value, datetime.datetime) else value)
    write = bound.dialect_impl(dialect).bind_processor(dialect)
    return _isoformatted(write) if type(bound) is sa.DateTime else write


@functools.cache
def _datetime_writer(dialect: sa.Dialect) -> _Writer:
    return _isoformatted(sa.DateTime().dialect_impl(dialect).bind_processor(dialect))


_PROBE = datetime.datetime(987, 6, 5, 4, 3, 2, 1)


def _isoformatted(write: _Writer) -> _Writer:
    """``write`` (SQLAlchemy's DateTime writer) made faster where it writes a naive
    datetime as ``isoformat(" ", "microseconds")`` does, as it does on SQLite (its
    DATETIME text): the C method costs about a third of SQLAlchemy's ``%`` format of
    seven fields, and a boot writes a few dozen. Whatever else it writes (an aware
    datetime, a date) and every other backend's writer are left to it."""
    if write is None or write(_PROBE) != _PROBE.isoformat(" ", "microseconds"):
        return write
    slow = write

    def isoformatted(value: object) -> object:
        if value.__class__ is datetime.datetime and value.tzinfo is None:
            return value.isoformat(" ", "microseconds")
        return slow(value)
    return isoformatted


@functools.cache
def _datetime_reader(dialect: sa.Dialect) -> Callable[[object], datetime.datetime] | None:
    return sa.DateTime().dialect_impl(dialect).result_processor(  # type: ignore[return-value]
        dialect, None)


def datetime_from_driver(dialect: sa.Dialect, value: object) -> datetime.datetime | None:
    """A timestamp column's value as the driver returned it (``sqlite_driver`` rows:
    SQLite's text), as SQLAlchemy would have returned it: a datetime, or None."""
    read = _datetime_reader(dialect)
    if value is None or read is None:
        return value  # type: ignore[return-value]
    return read(value)


def driver_datetime(dialect: sa.Dialect, moment: datetime.datetime) -> str | datetime.datetime:
    """``moment`` as the backend's driver takes it in driver SQL: on SQLite SQLAlchemy's
    DATETIME text, microseconds always (``2026-01-01 12:00:00.000000``), which the
    file's comparisons rely on; on PostgreSQL the datetime itself."""
    write = _datetime_writer(dialect)
    return moment if write is None else str(write(moment))


def marks(values: Collection[object]) -> str:
    """``?, ?, ?``: the placeholders of an IN list of ``values`` in driver SQL."""
    return ", ".join("?" * len(values))


def driver_sql(conn: Connection, sql: str, params: Sequence[object] = ()) -> Outcome:
    """Run SQL written for the driver, with ``?`` placeholders, on either backend, on
    the connection's DBAPI connection (as ``Statement``; on SQLite outside a
    transaction through SQLAlchemy's ``exec_driver_sql``, which begins one). Errors
    as SQLAlchemy raises them (``sa.exc.IntegrityError``...), on both backends."""
    if conn.dialect.name != "postgresql":
        if conn.in_transaction():
            return on_sqlite(conn, sql, tuple(params))
        result = conn.exec_driver_sql(sql, tuple(params))
        return Outcome(result.rowcount, list(result) if result.returns_rows else [])
    return on_cursor(conn, _pyformat(sql), tuple(params))


def driver_sql_many(conn: Connection, sql: str, rows: Sequence[Sequence[object]]) -> None:
    """Run SQLite's SQL (``?`` placeholders) once per row of ``rows``, inside the
    caller's transaction, on the DBAPI connection (SQLAlchemy's ``exec_driver_sql``
    outside one); errors as SQLAlchemy raises them."""
    if not conn.in_transaction():
        conn.exec_driver_sql(sql, list(rows))
        return
    driver = conn.connection.driver_connection
    assert driver is not None
    try:
        driver.executemany(sql, rows).close()
    except conn.dialect.loaded_dbapi.Error as exc:
        raise _as_sqlalchemy_error(conn, sql, rows, exc) from exc


@functools.lru_cache(maxsize=512)
def _pyformat(sql: str) -> str:
    return sql.replace("?", "%s")


def on_cursor(conn: Connection, sql: str, params: Parameters) -> Outcome:
    """Execute the driver's SQL on the DBAPI cursor of ``conn``, inside its
    transaction; a failure raised as SQLAlchemy raises it, as on SQLite."""
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql, params)
        rows = cursor.fetchall() if cursor.description is not None else []
        return Outcome(cursor.rowcount, rows)
    except conn.dialect.loaded_dbapi.Error as exc:
        raise _as_sqlalchemy_error(conn, sql, params, exc) from exc
    finally:
        cursor.close()


def insert_if_absent(conn: Connection, table: sa.Table, values: Mapping[str, object]) -> bool:
    """Insert one row unless one with the same unique key exists; True if inserted.

    ``INSERT ... ON CONFLICT DO NOTHING`` on both backends, so a concurrent writer
    adding the same name (trait, resource class, aggregate) is not an error.
    """
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    insert = dialect.insert(table).values(**values).on_conflict_do_nothing()
    # RETURNING yields no row when the insert was skipped (rowcount is not reliable here).
    return conn.execute(insert.returning(*table.primary_key.columns)).first() is not None


def insert_rows(conn: Connection, table: sa.Table,
                rows: Sequence[Mapping[str, object]]) -> None:
    """Insert ``rows`` (mappings with the same keys). On PostgreSQL several rows
    go in one multi-row INSERT: executemany sends them in a pipeline, whose
    machinery cost more CPU than the statements (a provider's three inventories,
    its traits). On SQLite, executemany."""
    if not rows:
        return
    if conn.dialect.name != "postgresql" or len(rows) == 1:
        conn.execute(_insert_of(table), rows)
        return
    columns = tuple(rows[0])
    conn.exec_driver_sql(_multi_insert(conn.dialect, table, columns, len(rows)),
                         {f"{column}_{n}": row[column] for n, row in enumerate(rows)
                          for column in columns})


@functools.cache
def _insert_of(table: sa.Table) -> sa.Insert:
    return sa.insert(table)


@functools.lru_cache(maxsize=256)
def _multi_insert(dialect: sa.Dialect, table: sa.Table, columns: tuple[str, ...],
                  rows: int) -> str:
    """INSERT INTO table (columns) VALUES (%(a_0)s, %(b_0)s), (%(a_1)s, ...) ...,
    compiled once per shape (SQLAlchemy does not cache multi-row VALUES)."""
    statement = sa.insert(table).values([
        {column: sa.bindparam(f"{column}_{n}") for column in columns} for n in range(rows)])
    return str(statement.compile(dialect=dialect))
