"""What a hot statement costs on SQLite: through SQLAlchemy's execution path, its
compiled SQL through ``exec_driver_sql``, and as ``moorage.db.statements.Statement``
runs it inside a transaction (on the DBAPI connection, values through SQLAlchemy's
bind processors).

Usage: PYTHONPATH=src python bench/statements.py [--rows N] [--batch K]

A migrated compute API database in a temporary directory (no fsync per commit: the
disk's noise hid the rest), then N rows of each statement a boot writes in the
compute API, K per write transaction, each way in turn, three rounds; prints the
median microseconds per statement of the rounds. The statements are the module's
own, with the values their callers bind.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import tempfile
import time
import uuid as uuidlib
from collections.abc import Callable, Mapping
from pathlib import Path

from sqlalchemy.engine import Connection

from moorage.api.storage import migration
from moorage.db.database import Database
from moorage.db.statements import Statement
from moorage.lifecycle import actions, operations

Params = Callable[[int], Mapping[str, object]]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def _action(n: int) -> Mapping[str, object]:
    now = _now()
    return {"server_uuid": f"s{n}", "request_id": f"req-{uuidlib.uuid4()}",
            "action": "create", "user_id": "u", "project_id": "p", "start_time": now,
            "updated_at": now}


def _operation(n: int) -> Mapping[str, object]:
    now = _now().replace(microsecond=0)
    return {"server_uuid": str(uuidlib.uuid4()), "kind": "build", "arguments": "{}",
            "owner": "conductor-1", "lease_until": now, "takeovers": 0, "progress": "{}",
            "created_at": now, "updated_at": now}


def _event(n: int) -> Mapping[str, object]:
    now = _now()
    return {"b_uuid": f"s{n}", "b_request": "req-0", "event": "compute__do_build",
            "start_time": now, "finish_time": None, "result": None, "traceback": None,
            "host": "compute-1", "details": None}


def _sqlalchemy(statement: Statement) -> Callable[[Connection, Mapping[str, object]], object]:
    """The statement run as ``Statement`` ran it on SQLite before: through SQLAlchemy."""
    def run(conn: Connection, params: Mapping[str, object]) -> object:
        result = conn.execute(statement.statement, params)
        return list(result) if result.returns_rows else []
    return run


def _exec_driver_sql(statement: Statement) -> Callable[[Connection, Mapping[str, object]],
                                                       object]:
    """The statement run as ``sqlite_driver`` ran it before: its compiled SQL through
    SQLAlchemy's ``exec_driver_sql`` (no type processing, the same bound values)."""
    def run(conn: Connection, params: Mapping[str, object]) -> object:
        plan = statement._sqlite_plan(conn.dialect)
        assert plan is not None
        result = conn.exec_driver_sql(plan.sql, plan.values(params))
        return list(result) if result.returns_rows else []
    return run


def _timed(db: Database, run: Callable[[Connection, Mapping[str, object]], object],
           params: Params, rows: int, batch: int) -> float:
    """Microseconds per statement, the transactions' BEGIN and COMMIT left out."""
    spent = 0.0
    for start in range(0, rows, batch):
        values = [params(n) for n in range(start, min(start + batch, rows))]
        with db.writer() as writer:
            began = time.perf_counter()
            for value in values:
                run(writer.conn, value)
            spent += time.perf_counter() - began
    return spent / rows * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=20,
                        help="statements per write transaction (a group commit's batch)")
    args = parser.parse_args()
    cases: list[tuple[str, Statement, Params]] = [
        ("instance action INSERT", actions._INSERT_ACTION, _action),
        ("operation INSERT ... RETURNING", operations._INSERT, _operation),
        ("action event INSERT ... SELECT", actions._INSERT_EVENT, _event),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite:///{Path(tmp) / 'api.sqlite'}", sqlite_synchronous=False)
        migration.upgrade(db)
        with db.writer() as writer:  # the events' action
            actions._INSERT_ACTION.run(writer.conn, {**_action(0), "request_id": "req-0"})
        print(f"SQLite, {args.rows:,} rows per statement and way, {args.batch} per "
              "transaction, median of 3 rounds")
        print("| statement | SQLAlchemy µs | its SQL by exec_driver_sql µs | Statement µs "
              "| saved on SQLAlchemy |")
        print("|---|---:|---:|---:|---:|")
        try:
            for label, statement, params in cases:
                ways = {"sqlalchemy": _sqlalchemy(statement),
                        "driver SQL": _exec_driver_sql(statement),
                        "statement": statement.run}
                spent: dict[str, list[float]] = {way: [] for way in ways}
                for _ in range(3):
                    for way, run in ways.items():
                        spent[way].append(_timed(db, run, params, args.rows, args.batch))
                slow, driver, fast = (statistics.median(spent[way]) for way in ways)
                print(f"| {label} | {slow:.1f} | {driver:.1f} | {fast:.1f} | "
                      f"{1 - fast / slow:.0%} |")
        finally:
            db.dispose()


if __name__ == "__main__":
    main()
