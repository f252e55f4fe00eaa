"""The flavor list's query on both backends: who sees which flavor, nova's sort keys
with a marker (keyset paging, ties broken by the flavor id), and bounds beyond any
column's integer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from moorage.api.storage import flavors, migration
from moorage.api.storage.flavors import SORT_KEYS, FlavorQuery, FlavorRecord
from moorage.db.database import Database
from moorage.model.flavor import Flavor


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    url = (f"sqlite:///{tmp_path / 'api.sqlite'}" if request.param == "sqlite"
           else request.getfixturevalue("postgresql_url"))
    database = Database(url)
    migration.upgrade(database)
    with database.writer() as writer:
        for ident, ram, description, public in (
                ("a", 512, "tiny", True), ("b", 4096, None, True), ("c", 1024, "", True),
                ("d", 2048, "mid", False)):
            flavors.create_flavor(writer.conn, FlavorRecord(
                ident, Flavor(f"m-{ident}", 1, ram, 1), is_public=public,
                description=description))
        flavors.add_access(writer.conn, "d", "p1")
    yield database
    database.dispose()


def _ids(db: Database, query: FlavorQuery) -> list[str]:
    with db.reader() as conn:
        return [record.id for record in flavors.list_flavors(conn, query)]


def test_who_sees_which_flavor(db: Database) -> None:
    assert _ids(db, FlavorQuery()) == ["a", "b", "c"]
    assert _ids(db, FlavorQuery(project_id="p1")) == ["a", "b", "c", "d"]
    assert _ids(db, FlavorQuery(is_public=False)) == ["d"]
    assert _ids(db, FlavorQuery(is_public=None)) == ["a", "b", "c", "d"]
    with db.reader() as conn:
        assert flavors.load_flavor(conn, "d").projects == ("p1",)


@pytest.mark.parametrize("key", SORT_KEYS)
def test_every_sort_key_pages_through_every_flavor_once(db: Database, key: str) -> None:
    for descending in (False, True):
        every = FlavorQuery(is_public=None, admin=True, sort_key=key, descending=descending)
        whole = _ids(db, every)
        paged: list[str] = []
        marker: str | None = None
        while True:
            page = _ids(db, replace(every, limit=1, marker=marker))
            if not page:
                break
            paged += page
            marker = page[-1]
        assert paged == whole and sorted(whole) == ["a", "b", "c", "d"], (key, descending)


def test_sorting_by_a_value_and_the_marker_a_member_cannot_see(db: Database) -> None:
    assert _ids(db, FlavorQuery(is_public=None, sort_key="memory_mb")) == ["a", "c", "d", "b"]
    # A description that is NULL sorts as the empty one, then by id.
    assert _ids(db, FlavorQuery(sort_key="description")) == ["b", "c", "a"]
    with pytest.raises(LookupError):
        _ids(db, FlavorQuery(marker="d"))
    assert _ids(db, FlavorQuery(marker="d", admin=True)) == []
    assert _ids(db, FlavorQuery(min_ram=2**31)) == []
