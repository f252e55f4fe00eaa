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
from moorage.lifecycle.records import ServerRecord


def admit_servers(conn: Connection, conf: cfg.ConfigOpts, record: ServerRecord,
                  min_count: int, max_count: int,
                  injected_files: Sequence[tuple[int, int]] = ()) -> int:
    """How many servers like ``record`` (``min_count`` to ``max_count``) its project
    may create now; OverQuota (nova's words) for fewer than ``min_count``, too many
    metadata items or personality files beyond their limits (``injected_files``: each
    one's path and content length). The caller inserts them in this transaction."""
    if not engine.enforced(conf):
        return max_count
    stored.lock_project(conn, record.project_id)
    found = engine.limits(conn, conf, record.project_id, record.user_id)
    engine.check_metadata_items(found.user[engine.R.METADATA_ITEMS],
                                len(record.attributes.metadata))
    engine.check_injected_files(found, injected_files)
    return engine.check_boot(conn, found, record.project_id, record.user_id,
                             record.flavor.vcpus, record.flavor.memory_mb,
                             min_count, max_count)


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
