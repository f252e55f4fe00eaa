"""Admitting new servers under the project's quota, in the transaction that records
them: the project locked, its limits read, its live servers counted (three statements
on PostgreSQL, two on SQLite; none under the noop driver), then the inserts.
"""

from __future__ import annotations

from collections.abc import Sequence

from oslo_config import cfg
from sqlalchemy.engine import Connection

from moorage.api.quotas import engine
from moorage.api.storage import quotas as stored
from moorage.lifecycle import server_groups as group_store
from moorage.lifecycle.records import ServerRecord

# nova's words when a create would take a group past server_group_members.
TOO_MANY_MEMBERS = "Quota exceeded, too many servers in group"


def admit_servers(conn: Connection, conf: cfg.ConfigOpts, record: ServerRecord,
                  min_count: int, max_count: int,
                  injected_files: Sequence[tuple[int, int]] = (),
                  group_uuid: str | None = None) -> int:
    """How many servers like ``record`` (``min_count`` to ``max_count``) its project
    may create now; OverQuota (nova's words) for fewer than ``min_count``, too many
    metadata items or personality files beyond their limits (``injected_files``: each
    one's path and content length; ``group_uuid``: the server group they join, whose
    members the ``server_group_members`` limit bounds). The caller inserts them in
    this transaction."""
    if not engine.enforced(conf):
        return max_count
    stored.lock_project(conn, record.project_id)
    found = engine.limits(conn, conf, record.project_id, record.user_id)
    engine.check_metadata_items(found.user[engine.R.METADATA_ITEMS],
                                len(record.attributes.metadata))
    engine.check_injected_files(found, injected_files)
    count = engine.check_boot(conn, found, record.project_id, record.user_id,
                              record.flavor.vcpus, record.flavor.memory_mb,
                              min_count, max_count)
    if group_uuid is not None:
        # A group belongs to one project, whose lock this transaction holds.
        limit = found.user[engine.R.SERVER_GROUP_MEMBERS]
        if limit != engine.UNLIMITED and \
                group_store.count_members(conn, group_uuid) + count > limit:
            raise engine.OverQuota(TOO_MANY_MEMBERS)
    return count


def admit_server_group(conn: Connection, conf: cfg.ConfigOpts, project_id: str,
                       user_id: str) -> None:
    """One more server group for the project, within ``server_groups``; OverQuota
    with nova's words else. The project is locked as for its servers."""
    if not engine.enforced(conf):
        return
    stored.lock_project(conn, project_id)
    if engine.check_deltas(conn, conf, project_id, user_id, {engine.R.SERVER_GROUPS: 1}):
        raise engine.OverQuota("Quota exceeded, too many server groups.")


def admit_resize(conn: Connection, conf: cfg.ConfigOpts, record: ServerRecord,
                 vcpus: int, memory_mb: int) -> None:
    """A resize of ``record`` to a flavor of ``vcpus`` and ``memory_mb``, within the
    project's cores and RAM (what grows; nova's upsize check); OverQuota else."""
    if not engine.enforced(conf):
        return
    cores_delta = vcpus - record.flavor.vcpus
    ram_delta = memory_mb - record.flavor.memory_mb
    if cores_delta <= 0 and ram_delta <= 0:
        return
    stored.lock_project(conn, record.project_id)
    engine.check_resize(conn, conf, record.project_id, record.user_id, cores_delta,
                        ram_delta)
