"""Listing moves as GET /os-migrations pages them: newest first, cut by the query (a
limit and a marker), filtered by host, requester and time, on both backends."""

from __future__ import annotations

import datetime

import pytest

from moorage.db.database import Database
from moorage.lifecycle import operations, store
from moorage.lifecycle.records import MigrationRecord
from moorage.lifecycle.states import MigrationKind, OperationKind
from tests.lifecycle_paths import OWNER, record_move

# Long ago: a move finished by a transition is stamped with the clock's now, later.
T0 = datetime.datetime(2020, 1, 1, 12, 0, 0)


def _at(minutes: int) -> datetime.datetime:
    return T0 + datetime.timedelta(minutes=minutes)


def _move(uuid: str, created: int, *, updated: int | None = None, source: str = "h1",
          user: str | None = "u1", project: str | None = "p1") -> MigrationRecord:
    return MigrationRecord(uuid=uuid, server_uuid=f"server-{uuid}",
                           kind=MigrationKind.MIGRATION, source_host=source,
                           created_at=_at(created), updated_at=_at(
                               created if updated is None else updated),
                           user_id=user, project_id=project)


def _uuids(found: list[MigrationRecord]) -> list[str]:
    return [m.uuid for m in found]


def test_moves_are_listed_newest_first_and_paged_in_the_query(db: Database) -> None:
    # m2 and m3 were created in the same second: the later id comes first.
    for uuid, created in (("m1", 0), ("m2", 5), ("m3", 5), ("m4", 9)):
        record_move(db, _move(uuid, created))
    with db.reader() as conn:
        assert _uuids(store.list_migrations(conn)) == ["m4", "m3", "m2", "m1"]
        assert _uuids(store.list_migrations(conn, limit=2)) == ["m4", "m3"]
        assert _uuids(store.list_migrations(conn, limit=2, marker="m3")) == ["m2", "m1"]
        assert _uuids(store.list_migrations(conn, marker="m1")) == []
        assert store.list_migrations(conn, limit=0) == []
        with pytest.raises(LookupError):
            store.list_migrations(conn, marker="no-such-move")


def test_moves_are_filtered_by_host_requester_and_time(db: Database) -> None:
    # Finished on h2 now, so updated after the others.
    record_move(db, _move("a", 0, source="h1", user="u1", project="p1"), destination="h2")
    record_move(db, _move("b", 1, updated=20, source="h2", user="u2", project="p2"))
    record_move(db, _move("c", 2, updated=30, source="h3", user=None, project=None))
    with db.reader() as conn:
        # ``host`` is either end; ``source_host`` only where the move left from.
        assert _uuids(store.list_migrations(conn, host="h2")) == ["b", "a"]
        assert _uuids(store.list_migrations(conn, source_host="h2")) == ["b"]
        assert _uuids(store.list_migrations(conn, user_id="u2")) == ["b"]
        assert _uuids(store.list_migrations(conn, project_id="p1")) == ["a"]
        # Both bounds take the moment itself.
        assert _uuids(store.list_migrations(conn, changes_since=_at(20))) == ["c", "b", "a"]
        assert _uuids(store.list_migrations(conn, changes_before=_at(20))) == ["b"]
        assert _uuids(store.list_migrations(conn, changes_since=_at(20),
                                            changes_before=_at(20))) == ["b"]

def test_the_requester_rides_with_the_operation_to_its_claimer(db: Database) -> None:
    """The conductor that claims the work (or takes it over) knows who asked for it,
    and records them on the move it makes."""
    with db.writer() as writer:
        operations.add(writer.conn, "s1", OperationKind.MIGRATE, request_id="req-1",
                       user_id="admin-user", project_id="admin-project")
    with db.reader() as conn:
        [waiting] = operations.claimable(conn, 10)
    with db.writer() as writer:
        claimed = operations.claim(writer.conn, waiting, OWNER, 30)
    assert claimed is not None
    assert (claimed.user_id, claimed.project_id, claimed.request_id) == (
        "admin-user", "admin-project", "req-1")
    assert claimed.arguments == {}
    moved = record_move(db, MigrationRecord(
        uuid="m1", server_uuid="s2", kind=MigrationKind.RESIZE, source_host="h1",
        user_id=claimed.user_id, project_id=claimed.project_id))
    assert (moved.user_id, moved.project_id) == ("admin-user", "admin-project")
