"""``GET /v2/images``'s query string as glance reads it, parsed into an ``ImageQuery``,
and the steps that run in Python over what the SQL filters left (property filters,
sorting, the marker and the page). Pure functions.

Filters: ``name``, ``id``, ``status``, ``disk_format``, ``container_format``,
``owner`` (each also as ``in:a,b``); ``visibility`` (public, private, shared,
community, all); ``member_status`` (pending, accepted, rejected, all); ``tag``
(repeatable: every one); ``protected``, ``os_hidden`` (true, false; hidden images are
listed only with ``os_hidden=true``); ``size_min``, ``size_max``; ``created_at`` and
``updated_at`` as ``OP:TIME`` with OP one of gt, gte, lt, lte, eq, neq; ``checksum``,
``os_hash_value``; any other key filters on that property's value.
Sorting: ``sort_key`` (repeatable) with ``sort_dir``, or ``sort=key:dir,...``;
default created_at desc. Paging: ``limit`` (default 25, at most 1000), ``marker``.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

from moorage.image.errors import BadRequest
from moorage.image.records import MemberStatus, StoredImage, Visibility

DEFAULT_LIMIT = 25
MAX_LIMIT = 1000
SORT_KEYS = ("name", "status", "container_format", "disk_format", "size", "virtual_size",
             "id", "created_at", "updated_at", "visibility", "owner", "min_disk",
             "min_ram", "protected", "os_hidden")
SORT_DIRS = ("asc", "desc")
TIME_OPERATORS = ("gt", "gte", "lt", "lte", "eq", "neq")
# Filters on a column, exact or with in:
IN_FILTERS = ("name", "id", "status", "disk_format", "container_format", "owner")
EXACT_FILTERS = ("checksum", "os_hash_value")
BOOLEAN_FILTERS = ("protected", "os_hidden")
TIME_FILTERS = ("created_at", "updated_at")
PAGING = ("limit", "marker", "sort_key", "sort_dir", "sort")
SPECIAL = ("visibility", "member_status", "tag", "size_min", "size_max")


@dataclass(frozen=True)
class TimeFilter:
    column: str
    operator: str
    moment: datetime.datetime


@dataclass(frozen=True)
class ImageQuery:
    visibility: str | None = None
    member_status: str = MemberStatus.ACCEPTED.value
    # column -> allowed values
    among: dict[str, tuple[str, ...]] = field(default_factory=dict)
    booleans: dict[str, bool] = field(default_factory=dict)
    times: tuple[TimeFilter, ...] = ()
    size_min: int | None = None
    size_max: int | None = None
    tags: tuple[str, ...] = ()
    properties: dict[str, str] = field(default_factory=dict)
    sort: tuple[tuple[str, str], ...] = (("created_at", "desc"),)
    limit: int = DEFAULT_LIMIT
    marker: str | None = None


def _one(pairs: Sequence[tuple[str, str]], name: str) -> str | None:
    values = [v for k, v in pairs if k == name]
    return values[-1] if values else None


def _boolean(name: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise BadRequest(f"Invalid value for {name}: {text!r}; allowed: true, false.")
    return lowered == "true"


def _size(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise BadRequest(f"Invalid value for {name}: {text!r}; allowed: an integer >= 0.")
    return value


def parse_time(name: str, text: str) -> datetime.datetime:
    """An ISO 8601 time, as naive UTC."""
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(f"Invalid time for {name}: {text!r}; allowed: an ISO 8601 time "
                         "such as 2026-01-01T00:00:00Z.") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.UTC).replace(tzinfo=None)
    return moment


def _time_filter(name: str, text: str) -> TimeFilter:
    operator, _, moment = text.partition(":")
    if operator not in TIME_OPERATORS or not moment:
        raise BadRequest(f"Invalid filter {name}={text!r}: allowed: OP:TIME with OP one of "
                         f"{', '.join(TIME_OPERATORS)}.")
    return TimeFilter(name, operator, parse_time(name, moment))


def _sort(pairs: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    keys = [v for k, v in pairs if k == "sort_key"]
    dirs = [v for k, v in pairs if k == "sort_dir"]
    combined = _one(pairs, "sort")
    if combined is not None and (keys or dirs):
        raise BadRequest("The sort and sort_key/sort_dir parameters cannot be used "
                         "together.")
    chosen: list[tuple[str, str]] = []
    if combined is not None:
        for item in combined.split(","):
            key, _, direction = item.strip().partition(":")
            chosen.append((key, direction or "desc"))
    else:
        if len(dirs) > 1 and len(dirs) != len(keys):
            raise BadRequest("Give one sort_dir, or one for each sort_key.")
        for index, key in enumerate(keys or ["created_at"]):
            direction = dirs[index] if len(dirs) > 1 else (dirs[0] if dirs else "desc")
            chosen.append((key, direction))
    for key, direction in chosen:
        if key not in SORT_KEYS:
            raise BadRequest(f"Invalid sort key {key!r}; allowed: {', '.join(SORT_KEYS)}.")
        if direction not in SORT_DIRS:
            raise BadRequest(f"Invalid sort direction {direction!r}; allowed: asc, desc.")
    return tuple(chosen)


def _limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIMIT
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise BadRequest(f"Invalid value for limit: {text!r}; allowed: an integer >= 0.")
    return min(value, MAX_LIMIT)


def parse(pairs: Sequence[tuple[str, str]]) -> ImageQuery:
    """The query of a list request; 400 naming the parameter that is wrong."""
    visibility = _one(pairs, "visibility")
    if visibility is not None and visibility not in (*Visibility, "all"):
        raise BadRequest(f"Invalid value for visibility: {visibility!r}; allowed: "
                         f"{', '.join(Visibility)}, all.")
    member_status = _one(pairs, "member_status") or MemberStatus.ACCEPTED.value
    if member_status not in (*MemberStatus, "all"):
        raise BadRequest(f"Invalid value for member_status: {member_status!r}; allowed: "
                         f"{', '.join(MemberStatus)}, all.")
    among: dict[str, tuple[str, ...]] = {}
    booleans: dict[str, bool] = {}
    times: list[TimeFilter] = []
    properties: dict[str, str] = {}
    for name, value in pairs:
        if name in IN_FILTERS:
            among[name] = tuple(value[3:].split(",")) if value.startswith("in:") else (value,)
        elif name in EXACT_FILTERS:
            among[name] = (value,)
        elif name in BOOLEAN_FILTERS:
            booleans[name] = _boolean(name, value)
        elif name in TIME_FILTERS:
            times.append(_time_filter(name, value))
        elif name not in (*PAGING, *SPECIAL):
            properties[name] = value
    size_min, size_max = _one(pairs, "size_min"), _one(pairs, "size_max")
    return ImageQuery(
        visibility=visibility, member_status=member_status, among=among, booleans=booleans,
        times=tuple(times),
        size_min=None if size_min is None else _size("size_min", size_min),
        size_max=None if size_max is None else _size("size_max", size_max),
        tags=tuple(v for k, v in pairs if k == "tag"), properties=properties,
        sort=_sort(pairs), limit=_limit(_one(pairs, "limit")), marker=_one(pairs, "marker"))


def _value(image: StoredImage, key: str) -> object:
    value = getattr(image, key)
    return value.value if hasattr(value, "value") else value


def _sort_value(image: StoredImage, key: str) -> tuple[int, object]:
    value = _value(image, key)
    return (0, "") if value is None else (1, value)


def ordered(images: Sequence[StoredImage], sort: Sequence[tuple[str, str]]
            ) -> list[StoredImage]:
    """``images`` in ``sort``'s order, ties broken by id; nulls first ascending."""
    keys = list(sort)
    if "id" not in (key for key, _ in keys):
        keys.append(("id", keys[-1][1] if keys else "desc"))
    result = list(images)
    for key, direction in reversed(keys):  # stable sorts, the last key first
        result.sort(key=functools.partial(_sort_value, key=key), reverse=direction == "desc")
    return result


def with_properties(images: Sequence[StoredImage], properties: dict[str, str]
                    ) -> list[StoredImage]:
    return [i for i in images
            if all(i.properties.get(k) == v for k, v in properties.items())]


def page(images: Sequence[StoredImage], marker: str | None, limit: int
         ) -> tuple[list[StoredImage], bool]:
    """The page after ``marker`` (400 when no listed image has that id), and whether
    more follow."""
    start = 0
    if marker is not None:
        ids = [i.id for i in images]
        if marker not in ids:
            raise BadRequest(f"Invalid marker. Image {marker} could not be found.")
        start = ids.index(marker) + 1
    chosen = list(images[start:start + limit])
    return chosen, start + limit < len(images)
