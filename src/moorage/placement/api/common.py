"""Helpers shared by the handlers of several nouns."""

from __future__ import annotations

import datetime
from collections.abc import Iterable

from moorage.placement.engine.index import ProviderIndex
from moorage.placement.http import NotFound
from moorage.placement.storage.records import ProviderRecord


def provider_or_404(index: ProviderIndex, uuid: str) -> ProviderRecord:
    """The indexed provider with ``uuid``, or 404 in upstream's words."""
    record = index.by_uuid.get(uuid)
    if record is None:
        raise NotFound(f"No resource provider with uuid {uuid} found")
    return record


def latest(stamps: Iterable[datetime.datetime | None]) -> datetime.datetime | None:
    """The newest of some timestamps (None when there is none): a last-modified value."""
    return max((s for s in stamps if s is not None), default=None)


# The detail of a 409 placement.concurrent_update for a stale generation in a request body.
GENERATION_CONFLICT = (
    "Resource provider's generation already changed. Please update the generation and "
    "try again."
)
