"""Server groups in the store, on both backends: where each member counts (a build's
reservation, a placed server's host, nowhere once deleted), the late check's reserve,
and the counts the quotas read."""

from __future__ import annotations

import sqlalchemy as sa

from moorage.db.database import Database
from moorage.lifecycle import server_groups as groups
from moorage.lifecycle.schema import server_group_members
from moorage.lifecycle.server_groups import ServerGroupRecord
from moorage.lifecycle.states import ServerStatus
from moorage.scheduler.server_groups import GroupPolicy
from tests.lifecycle_paths import bring, insert

GROUP = "5f0e2a4c-1b3d-4e6f-8a9b-0c1d2e3f4a5b"
ACTIVE, ERROR = (ServerStatus.ACTIVE, None), (ServerStatus.ERROR, None)
DELETED = (ServerStatus.DELETED, None)


def _group(db: Database, policy: GroupPolicy = GroupPolicy.ANTI_AFFINITY,
           uuid: str = GROUP, project: str = "p", **rules: int) -> None:
    with db.writer() as writer:
        groups.create_group(writer.conn, ServerGroupRecord(uuid, "g", project, "u", policy,
                                                           rules))


def _join(db: Database, server: str, group: str = GROUP) -> bool:
    with db.writer() as writer:
        return groups.add_member(writer.conn, group, server)


def _reserve(db: Database, server: str, host: str) -> str | None:
    with db.writer() as writer:
        return groups.reserve(writer.conn, GROUP, server, host)


def test_each_member_counts_where_it_is(db: Database) -> None:
    _group(db)
    bring(db, "on-h1", ACTIVE, host="h1")
    bring(db, "failed", ERROR)
    bring(db, "gone", DELETED, host="h3")
    insert(db, "building")
    insert(db, "me")
    for server in ("on-h1", "failed", "gone", "building", "me"):
        assert _join(db, server)
    with db.reader() as conn:
        group = groups.placement(conn, GROUP, "me")
    assert group is not None and group.policy is GroupPolicy.ANTI_AFFINITY
    # A build counts nowhere until the late check reserves its host.
    assert group.members_on == {"h1": 1}
    assert _reserve(db, "building", "h2") is None
    assert _reserve(db, "me", "h1") == (
        f"runs a server of server group {GROUP} (anti-affinity) already "
        "(at most 1 per host)")
    assert _reserve(db, "me", "h3") is None  # the deleted member left h3
    with db.reader() as conn:
        seen_by_another = groups.placement(conn, GROUP, "someone-else")
        seen_by_me = groups.placement(conn, GROUP, "me")
        assert groups.count_members(conn, GROUP) == 4
        assert groups.find_group(conn, GROUP, "p") is not None
        assert groups.find_group(conn, GROUP, "another project") is None
    assert seen_by_another is not None and seen_by_me is not None
    assert seen_by_another.members_on == {"h1": 1, "h2": 1, "h3": 1}
    assert seen_by_me.members_on == {"h1": 1, "h2": 1}  # a server is not its own member


def test_max_server_per_host_and_affinity_in_the_late_check(db: Database) -> None:
    _group(db, max_server_per_host=2)
    for server in ("s1", "s2", "s3"):
        insert(db, server)
        _join(db, server)
    assert [_reserve(db, s, "h1") is None for s in ("s1", "s2", "s3")] == [True, True, False]
    affine = "6a1f3b5d-2c4e-4f70-9bac-1d2e3f4a5b6c"
    _group(db, GroupPolicy.AFFINITY, uuid=affine)
    for server in ("a1", "a2"):
        insert(db, server)
        _join(db, server, affine)
    with db.writer() as writer:
        assert groups.reserve(writer.conn, affine, "a1", "h2") is None  # the first decides
        assert groups.reserve(writer.conn, affine, "a2", "h1") is not None
        assert groups.reserve(writer.conn, affine, "a2", "h2") is None


def test_a_deleted_group_takes_its_members_and_refuses_new_ones(db: Database) -> None:
    _group(db)
    _group(db, uuid="6a1f3b5d-2c4e-4f70-9bac-1d2e3f4a5b6c", project="q")
    insert(db, "s1")
    _join(db, "s1")
    with db.reader() as conn:
        assert groups.count_groups(conn, "p") == 1
        assert groups.groups_of(conn, "s1") == [GROUP]
    with db.writer() as writer:
        assert groups.delete_group(writer.conn, GROUP)
        assert not groups.delete_group(writer.conn, GROUP)
    assert not _join(db, "s1")
    assert _reserve(db, "s1", "h1") is None  # no group, nothing to keep to
    with db.reader() as conn:
        assert groups.placement(conn, GROUP, "s1") is None
        assert groups.count_groups(conn, "p") == 0
        assert conn.execute(sa.select(sa.func.count()).select_from(
            server_group_members)).scalar_one() == 0
