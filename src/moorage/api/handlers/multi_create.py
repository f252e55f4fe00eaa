"""One POST /servers, several servers (min_count, max_count): nova's semantics.

As many as the quota allows between ``min_count`` and ``max_count`` are created
(fewer than ``min_count``: 403); with more than one, each is named
``name-1`` .. ``name-N`` (nova's "%(name)s-%(count)d"), its hostname alike unless one
was asked, its ``launch_index`` its place; all share the request's reservation_id.
Also read here, for the same check: a create's personality files (before 2.57),
which the quota limits though Moorage injects none.
"""

from __future__ import annotations

import dataclasses
import uuid as uuidlib
from collections.abc import Mapping
from typing import Any

from moorage.api.errors import BadRequest
from moorage.lifecycle.attributes import HOSTNAME_MAX, hostname_from
from moorage.lifecycle.records import ServerRecord


def counts(body: Mapping[str, Any]) -> tuple[int, int]:
    """(min_count, max_count) of a create body (the schema checked each is a positive
    integer, maybe as digits); max_count defaults to min_count, as in nova."""
    min_count = int(body.get("min_count", 1))
    max_count = int(body.get("max_count", min_count))
    if min_count > max_count:
        raise BadRequest("min_count must be <= max_count")
    return min_count, max_count


def injected_files(body: Mapping[str, Any]) -> list[tuple[int, int]]:
    """The path and content length of each personality file a create gives (before
    2.57; Moorage injects none, but nova's quota on them still applies)."""
    return [(len(str(item.get("path", ""))), len(str(item.get("contents", ""))))
            for item in body.get("personality") or () if isinstance(item, dict)]


def copies(record: ServerRecord, count: int, *, hostname_asked: bool) -> list[ServerRecord]:
    """The ``count`` servers of a request ``record`` describes: itself when one."""
    if count == 1:
        return [record]
    made = []
    for index in range(count):
        suffix = f"-{index + 1}"
        name = record.name + suffix
        hostname = (record.attributes.hostname if hostname_asked else
                    hostname_from(record.name)[:HOSTNAME_MAX - len(suffix)] + suffix)
        attributes = dataclasses.replace(record.attributes, launch_index=index,
                                         hostname=hostname)
        made.append(dataclasses.replace(record, uuid=str(uuidlib.uuid4()), name=name,
                                        attributes=attributes))
    return made
