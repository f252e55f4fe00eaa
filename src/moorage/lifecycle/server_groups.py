"""Server groups and their members (``server_groups``, ``server_group_members``): what
the compute API stores (os-server-groups, a member added with its server), what a
scheduling reads (``placement``: one statement), and the late check a build makes
before its spawn (``reserve``).

Where a member is: a server in BUILD is on the host its build reserved under the
group's lock (``server_group_members.host``), since the build records its host on the
server only later, without waiting (``conductor.tasks.spawn``); any other server is
where its row says (ACTIVE on its host, ERROR on none, a move on its source). Deleted
servers are no members (their rows go with the delete; the reads skip DELETED anyway).

Why a lock, and which: two builds of one anti-affinity group scheduled at once both see
the other's host free. Each build reserves its host in a transaction that first locks
the group's row (``SELECT ... FOR UPDATE`` on PostgreSQL; on SQLite the writer's
transaction already excludes every other writer), reads the members' hosts again and
asks the policy's rule (``scheduler.server_groups.refusal``) with them; the second
build waits for the first's commit, then sees its reservation and is refused. (On
PostgreSQL that relies on the writer's READ COMMITTED: each statement after the lock
sees what its holder committed. On SQLite the writers of a group commit share one
transaction, in turns, and each sees what those before it wrote.)
"""

from __future__ import annotations

import datetime
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.db.clock import utcnow_precise
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.schema import server_group_members, server_groups, servers
from moorage.lifecycle.states import ServerStatus
from moorage.scheduler.server_groups import (
    DEFAULT_MAX_SERVER_PER_HOST,
    GroupPlacement,
    GroupPolicy,
    refusal,
)

# The rule of anti-affinity's groups (2.64).
MAX_SERVER_PER_HOST = "max_server_per_host"


@dataclass(frozen=True)
class ServerGroupRecord:
    """A server group and its members that are not deleted (nova shows only those)."""

    uuid: str
    name: str
    project_id: str
    user_id: str
    policy: GroupPolicy
    rules: Mapping[str, int] = field(default_factory=dict)
    created_at: datetime.datetime = field(default_factory=utcnow_precise)
    members: tuple[str, ...] = ()

    @property
    def max_server_per_host(self) -> int:
        return int(self.rules.get(MAX_SERVER_PER_HOST, DEFAULT_MAX_SERVER_PER_HOST))


def _record(row: sa.RowMapping, members: Sequence[str] = ()) -> ServerGroupRecord:
    return ServerGroupRecord(
        uuid=row["uuid"], name=row["name"], project_id=row["project_id"],
        user_id=row["user_id"], policy=GroupPolicy(row["policy"]),
        rules={str(k): int(v) for k, v in orjson.loads(row["rules"]).items()},
        created_at=row["created_at"], members=tuple(members))


# -- the API's reads and writes -----------------------------------------------------------
def create_group(conn: Connection, group: ServerGroupRecord) -> None:
    # INSERT INTO server_groups (uuid, name, project_id, user_id, policy, rules,
    # created_at) VALUES (...)
    conn.execute(server_groups.insert().values(
        uuid=group.uuid, name=group.name, project_id=group.project_id,
        user_id=group.user_id, policy=str(group.policy),
        rules=orjson.dumps(dict(group.rules)).decode(), created_at=group.created_at))


def _members(conn: Connection, uuids: Sequence[str]) -> dict[str, list[str]]:
    """group uuid -> its members not deleted, in the order they joined."""
    if not uuids:
        return {}
    # SELECT m.group_uuid, m.server_uuid FROM server_group_members m
    #   JOIN servers s ON s.uuid = m.server_uuid
    #  WHERE m.group_uuid IN (...) AND s.status != 'DELETED' ORDER BY s.created_at, s.uuid
    rows = conn.execute(
        sa.select(server_group_members.c.group_uuid, server_group_members.c.server_uuid)
        .join(servers, servers.c.uuid == server_group_members.c.server_uuid)
        .where(server_group_members.c.group_uuid.in_(list(uuids)),
               servers.c.status != str(ServerStatus.DELETED))
        .order_by(servers.c.created_at, servers.c.uuid))
    found: dict[str, list[str]] = {uuid: [] for uuid in uuids}
    for group_uuid, server_uuid in rows:
        found[group_uuid].append(server_uuid)
    return found


def find_group(conn: Connection, uuid: str, project_id: str | None
               ) -> ServerGroupRecord | None:
    """The group, with its members; ``project_id``: only a group of that project (a
    non-admin's read, as nova's), None: any."""
    # SELECT * FROM server_groups WHERE uuid = :uuid [AND project_id = :project_id]
    statement = sa.select(server_groups).where(server_groups.c.uuid == uuid)
    if project_id is not None:
        statement = statement.where(server_groups.c.project_id == project_id)
    row = conn.execute(statement).mappings().first()
    if row is None:
        return None
    return _record(row, _members(conn, [uuid])[uuid])


def exists(conn: Connection, uuid: str, project_id: str | None) -> bool:
    """Whether the group is there (for ``project_id``: of that project)."""
    # SELECT 1 FROM server_groups WHERE uuid = :uuid [AND project_id = :project_id]
    statement = sa.select(sa.literal(1)).where(server_groups.c.uuid == uuid)
    if project_id is not None:
        statement = statement.where(server_groups.c.project_id == project_id)
    return conn.execute(statement).first() is not None


def list_groups(conn: Connection, project_id: str | None, *, limit: int,
                offset: int = 0) -> list[ServerGroupRecord]:
    """A project's groups (None: every project's), oldest first, ``offset`` skipped,
    at most ``limit``; with their members, in one more statement."""
    # SELECT * FROM server_groups [WHERE project_id = :p] ORDER BY created_at, uuid
    #  LIMIT :limit OFFSET :offset
    statement = sa.select(server_groups)
    if project_id is not None:
        statement = statement.where(server_groups.c.project_id == project_id)
    statement = statement.order_by(server_groups.c.created_at, server_groups.c.uuid) \
        .limit(limit).offset(offset)
    rows = list(conn.execute(statement).mappings())
    members = _members(conn, [row["uuid"] for row in rows])
    return [_record(row, members[row["uuid"]]) for row in rows]


def delete_group(conn: Connection, uuid: str) -> bool:
    """Delete the group and its memberships; False when it was not there."""
    # DELETE FROM server_group_members WHERE group_uuid = :uuid;
    # DELETE FROM server_groups WHERE uuid = :uuid
    conn.execute(server_group_members.delete().where(
        server_group_members.c.group_uuid == uuid))
    return bool(conn.execute(server_groups.delete().where(
        server_groups.c.uuid == uuid)).rowcount)


def add_member(conn: Connection, group_uuid: str, server_uuid: str) -> bool:
    """Make a new server a member, in the transaction that inserts it; False when the
    group was deleted meanwhile (the server then is in no group)."""
    # INSERT INTO server_group_members (group_uuid, server_uuid, host)
    #   SELECT uuid, :server, NULL FROM server_groups WHERE uuid = :group
    #   RETURNING server_uuid
    # (RETURNING: an INSERT ... SELECT's rowcount is -1 on PostgreSQL here.)
    chosen = sa.select(server_groups.c.uuid, sa.literal(server_uuid, sa.String),
                       sa.null()).where(server_groups.c.uuid == group_uuid)
    return conn.execute(server_group_members.insert().from_select(
        ["group_uuid", "server_uuid", "host"], chosen)
        .returning(server_group_members.c.server_uuid)).first() is not None


def forget_member(conn: Connection, server_uuid: str) -> None:
    """A deleted server leaves its groups."""
    # DELETE FROM server_group_members WHERE server_uuid = :server
    conn.execute(server_group_members.delete().where(
        server_group_members.c.server_uuid == server_uuid))


def groups_of(conn: Connection, server_uuid: str) -> list[str]:
    """The groups a server is in (nova's ``server_groups`` of a shown server, 2.71)."""
    # SELECT group_uuid FROM server_group_members WHERE server_uuid = :server
    return [str(uuid) for uuid, in conn.execute(
        sa.select(server_group_members.c.group_uuid)
        .where(server_group_members.c.server_uuid == server_uuid)
        .order_by(server_group_members.c.group_uuid))]


def count_groups(conn: Connection, project_id: str) -> int:
    """A project's server groups (nova's ``server_groups`` quota counts these)."""
    # SELECT count(*) FROM server_groups WHERE project_id = :p
    return int(conn.execute(sa.select(sa.func.count()).select_from(server_groups)
                            .where(server_groups.c.project_id == project_id)).scalar_one())


def count_members(conn: Connection, group_uuid: str) -> int:
    """A group's members not deleted (nova's ``server_group_members`` quota)."""
    # SELECT count(*) FROM server_group_members m JOIN servers s ON s.uuid = m.server_uuid
    #  WHERE m.group_uuid = :g AND s.status != 'DELETED'
    return int(conn.execute(
        sa.select(sa.func.count()).select_from(server_group_members)
        .join(servers, servers.c.uuid == server_group_members.c.server_uuid)
        .where(server_group_members.c.group_uuid == group_uuid,
               servers.c.status != str(ServerStatus.DELETED))).scalar_one())


# -- what a scheduling reads, and the late check ------------------------------------------
def hinted(record: ServerRecord) -> str | None:
    """The group a server's create named (``os:scheduler_hints`` group), as its
    membership stores it; None for a server in no group (no statement needed)."""
    hint = record.attributes.scheduler_hints.get("group")
    if not isinstance(hint, str) or not hint:
        return None
    try:
        return str(uuidlib.UUID(hint))
    except ValueError:
        return None


def placement_of(conn: Connection, record: ServerRecord) -> GroupPlacement | None:
    """A server's group as its next scheduling reads it: None at no cost for a server in
    no group, else one statement (``placement``)."""
    group = hinted(record)
    return None if group is None else placement(conn, group, record.uuid)



def _member_host() -> sa.ColumnElement[str]:
    """Where a member is: its reservation while it builds, its server's host after."""
    return sa.case((servers.c.status == str(ServerStatus.BUILD),
                    server_group_members.c.host), else_=servers.c.host)


# Where the group's other members are: host -> how many (a member on no host: NULL).
_MEMBER_HOSTS = (
    sa.select(_member_host().label("member_host"), sa.func.count().label("n"))
    .select_from(server_group_members.join(
        servers, servers.c.uuid == server_group_members.c.server_uuid))
    .where(server_group_members.c.group_uuid == sa.bindparam("group"),
           server_group_members.c.server_uuid != sa.bindparam("server"),
           servers.c.status != str(ServerStatus.DELETED))
    .group_by(sa.literal_column("member_host")).subquery("h"))
# SELECT g.policy, g.rules, h.member_host, h.n FROM server_groups g LEFT JOIN (
#   SELECT CASE WHEN s.status = 'BUILD' THEN m.host ELSE s.host END AS member_host,
#          count(*) AS n
#     FROM server_group_members m JOIN servers s ON s.uuid = m.server_uuid
#    WHERE m.group_uuid = :group AND m.server_uuid != :server
#      AND s.status != 'DELETED' GROUP BY member_host) h ON true
#  WHERE g.uuid = :group
_PLACEMENT = (
    sa.select(server_groups.c.policy, server_groups.c.rules, _MEMBER_HOSTS.c.member_host,
              _MEMBER_HOSTS.c.n)
    .select_from(server_groups.outerjoin(_MEMBER_HOSTS, sa.true()))
    .where(server_groups.c.uuid == sa.bindparam("group")))


def placement(conn: Connection, group_uuid: str, server_uuid: str) -> GroupPlacement | None:
    """The group of ``server_uuid`` as its scheduling reads it: the policy, its rule and
    how many of the *other* members each host has (one statement). None when the
    group is gone."""
    rows = conn.execute(_PLACEMENT, {"group": group_uuid, "server": server_uuid}).all()
    if not rows:
        return None
    policy, rules = GroupPolicy(rows[0][0]), orjson.loads(rows[0][1])
    members_on = {str(host): int(n) for _, _, host, n in rows if host is not None}
    return GroupPlacement(group_uuid, policy,
                          int(rules.get(MAX_SERVER_PER_HOST, DEFAULT_MAX_SERVER_PER_HOST)),
                          members_on)


# SELECT uuid FROM server_groups WHERE uuid = :group FOR UPDATE (PostgreSQL; SQLite's
# writer already excludes the others)
_LOCK = sa.select(server_groups.c.uuid).where(
    server_groups.c.uuid == sa.bindparam("group")).with_for_update()
# UPDATE server_group_members SET host = :host WHERE group_uuid = :group
#  AND server_uuid = :server
_RESERVE = server_group_members.update().where(
    server_group_members.c.group_uuid == sa.bindparam("group"),
    server_group_members.c.server_uuid == sa.bindparam("server")).values(
    host=sa.bindparam("host"))


def reserve(conn: Connection, group_uuid: str, server_uuid: str, host: str) -> str | None:
    """The late check of a build about to spawn on ``host``, in the caller's write
    transaction: lock the group, read where its other members are now (builds that
    reserved a host included) and, if ``host`` keeps to the policy, reserve it for
    this member. The refusal's reason (naming the group) otherwise; None when
    reserved, or when the group is gone."""
    if conn.execute(_LOCK, {"group": group_uuid}).first() is None:
        return None
    group = placement(conn, group_uuid, server_uuid)
    if group is None:
        return None
    refused = refusal(group, host)
    if refused is None:
        conn.execute(_RESERVE, {"group": group_uuid, "server": server_uuid, "host": host})
    return refused
