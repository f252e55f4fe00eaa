"""Aggregates: the uuids a provider is associated with.

An aggregate is only a uuid; its row in ``placement_aggregates`` is created the
first time a provider is put in it and never deleted (as upstream). The uuids
are stored as the client spelled them.
"""

from __future__ import annotations

from collections.abc import Collection

import sqlalchemy as sa

from moorage.db.statements import insert_if_absent
from moorage.placement.storage import schema
from moorage.placement.storage.database import Writer

_agg = schema.placement_aggregates
_rpa = schema.resource_provider_aggregates


def _ensure_ids(w: Writer, uuids: Collection[str]) -> dict[str, int]:
    """Internal ids of the aggregates ``uuids``, creating the missing ones."""
    query = sa.select(_agg.c.uuid, _agg.c.id).where(_agg.c.uuid.in_(sorted(uuids)))
    # SELECT uuid, id FROM placement_aggregates WHERE uuid IN (:uuids)
    ids: dict[str, int] = {u: i for u, i in w.conn.execute(query)}
    missing = [u for u in uuids if u not in ids]
    if missing:
        for agg_uuid in missing:
            # INSERT INTO placement_aggregates (uuid, created_at) VALUES (...)
            # ON CONFLICT DO NOTHING
            insert_if_absent(w.conn, _agg, {"uuid": agg_uuid, "created_at": w.now})
        ids = {u: i for u, i in w.conn.execute(query)}
    return ids


def set_for_provider(w: Writer, provider_id: int, uuids: Collection[str]) -> None:
    """Make ``uuids`` the provider's aggregates. The generation is the caller's business:
    upstream increments it only from microversion 1.19."""
    conn = w.conn
    wanted = set(uuids)
    # SELECT agg.uuid, agg.id FROM resource_provider_aggregates rpa
    # JOIN placement_aggregates agg ON agg.id = rpa.aggregate_id
    # WHERE rpa.resource_provider_id = :id
    have = {
        u: i
        for u, i in conn.execute(
            sa.select(_agg.c.uuid, _agg.c.id)
            .join_from(_rpa, _agg, _rpa.c.aggregate_id == _agg.c.id)
            .where(_rpa.c.resource_provider_id == provider_id)
        )
    }
    removed = sorted(i for u, i in have.items() if u not in wanted)
    added = wanted - have.keys()
    if removed:
        # DELETE FROM resource_provider_aggregates
        # WHERE resource_provider_id = :id AND aggregate_id IN (:removed)
        conn.execute(
            sa.delete(_rpa).where(
                _rpa.c.resource_provider_id == provider_id, _rpa.c.aggregate_id.in_(removed)
            )
        )
    if added:
        ids = _ensure_ids(w, added)
        # INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id, ...)
        conn.execute(
            sa.insert(_rpa),
            [
                {"resource_provider_id": provider_id, "aggregate_id": ids[u], "created_at": w.now}
                for u in sorted(added)
            ],
        )
    if removed or added:
        w.touch(provider_id)
