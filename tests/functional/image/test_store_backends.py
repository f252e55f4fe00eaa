"""The image service's SQL on both backends: what a list, a member and an upload's
status moves write and read, on SQLite and on PostgreSQL."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

import pytest

from moorage.api.storage import migration
from moorage.db.database import Database
from moorage.image import query, store
from moorage.image.records import (
    DataDigest,
    ImageStatus,
    MemberStatus,
    StoredImage,
    Visibility,
)

NOW = datetime.datetime(2026, 1, 1)


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    url = (request.getfixturevalue("postgresql_url") if request.param == "postgresql"
           else f"sqlite:///{tmp_path / 'api.sqlite'}")
    database = Database(url)
    migration.upgrade(database)
    yield database
    database.dispose()


def _image(image_id: str, owner: str, visibility: Visibility, **fields: object) -> StoredImage:
    base = StoredImage(id=image_id, name=image_id, status=ImageStatus.QUEUED,
                       visibility=visibility, owner=owner, disk_format="raw",
                       container_format="bare", min_disk=0, min_ram=0, protected=False,
                       os_hidden=False, created_at=NOW, updated_at=NOW)
    return StoredImage(**{**base.__dict__, **fields})  # type: ignore[arg-type]


def _listed(db: Database, project: str, text: str = "") -> set[str]:
    wanted = query.parse([tuple(p.split("=", 1)) for p in text.split("&") if p])  # type: ignore[misc]
    listing = store.Listing(project, False, wanted.visibility, wanted.member_status)
    with db.reader() as conn:
        found = store.select(conn, [store.listable(listing), *store.query_clauses(wanted)],
                             wanted.tags)
    return {image.id for image in found}


def test_lists_members_and_status_moves(db: Database) -> None:
    with db.writer() as writer:
        store.insert(writer.conn, _image("pub", "p1", Visibility.PUBLIC, tags=("a", "b")))
        store.insert(writer.conn, _image("priv", "p1", Visibility.PRIVATE))
        store.insert(writer.conn, _image("shared", "p1", Visibility.SHARED, protected=True))
        store.insert(writer.conn, _image("comm", "p1", Visibility.COMMUNITY))
        store.insert(writer.conn, _image("hidden", "p1", Visibility.PUBLIC, os_hidden=True))
        store.add_member(writer.conn, "shared", "p2")
    assert _listed(db, "p1") == {"pub", "priv", "shared", "comm"}  # its own, all
    assert _listed(db, "p2") == {"pub"}
    assert _listed(db, "p2", "member_status=pending") == {"pub", "shared"}
    assert _listed(db, "p2", "visibility=all&member_status=all") == {"pub", "shared", "comm"}
    assert _listed(db, "p2", "tag=a&tag=b") == {"pub"}
    assert _listed(db, "p2", "os_hidden=true") == {"hidden"}
    assert _listed(db, "p1", "protected=true") == {"shared"}
    assert _listed(db, "p1", "created_at=lt:2026-01-01T00:00:01Z&name=in:pub,priv") == {
        "pub", "priv"}
    with db.writer() as writer:
        member = store.set_member_status(writer.conn, "shared", "p2", MemberStatus.ACCEPTED)
        assert member is not None and member.status is MemberStatus.ACCEPTED
        digest = DataDigest(3, "c" * 32, "sha512", "d" * 128, 3)
        assert store.move_status(writer.conn, "pub", ImageStatus.QUEUED, ImageStatus.SAVING)
        assert not store.move_status(writer.conn, "pub", ImageStatus.QUEUED,
                                     ImageStatus.SAVING)
        assert store.move_status(writer.conn, "pub", ImageStatus.SAVING, ImageStatus.ACTIVE,
                                 digest)
    assert _listed(db, "p2") == {"pub", "shared"}
    assert _listed(db, "p2", "size_min=3&status=active") == {"pub"}
    with db.writer() as writer:
        assert store.mark_deleted(writer.conn, "pub")
        assert store.load(writer.conn, "pub") is None
        assert store.id_taken(writer.conn, "pub")
    assert _listed(db, "p2") == {"shared"}
