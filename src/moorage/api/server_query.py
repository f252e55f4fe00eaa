"""The query string of GET /servers and /servers/detail as nova reads it, translated
into the store's ``ServerQuery``: filters, order and page, at the version asked, for the
caller asking.

nova's rules (servers.py ``_get_servers``, common.py, the query schemas of each
version), in the order nova applies them:

- The schema checks the values it types (a regular expression, a date-time, a
  non-negative limit, a sort key of the version's list) for everyone: a bad one is a
  400 naming the parameter. From 2.75 a parameter it does not know is a 400 too.
- A caller without ``os_compute_api:servers:allow_all_filters`` (a user) keeps only
  the user filters of the version; the others are dropped unread, as nova drops them.
  The paging and sorting parameters are never filters.
- A filter on a joined table (metadata, security_groups...) or a name starting with
  "_", which only an administrator keeps, is a 400.
- ``status`` names nova's statuses; one Moorage's servers are never in matches nothing,
  and one nova does not have is a 400 from 2.38 (an empty list before). DELETED is an
  administrator's.
- Deleted servers are listed under ``changes-since`` or ``changes-before``, or as an
  administrator's ``deleted`` says; otherwise not.
- Without ``all_tenants`` a list is the caller's project's (a ``project_id`` given is
  ignored); with it, every project's, or the ``project_id`` (``tenant_id``) given.
- ``sort_key``/``sort_dir`` pair up in order; a key nova keeps only for compatibility is
  dropped before 2.75; host and node are administrators' keys (403).

Moorage keeps no address, kernel, ramdisk, root device or progress for a server, so a
filter on them is decided here, once, on the value its servers show ("" or none):
``ip`` and ``ip6`` match nothing. See docs/compute-api.md.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from moorage.api import microversion as mv
from moorage.api.context import RequestContext
from moorage.api.errors import BadRequest, Forbidden
from moorage.api.handlers.common import boolean, invalid_query, moment, only_known
from moorage.api.handlers.paging import page_limit
from moorage.api.http import QueryParams
from moorage.lifecycle.listing import (
    NEWEST_FIRST,
    Deleted,
    ServerField,
    ServerQuery,
    Sort,
    TagMatch,
)
from moorage.lifecycle.states import VM_STATES, ServerStatus

F = ServerField
TAG_FILTERS = ("tags", "tags-any", "not-tags", "not-tags-any")
PAGING_AND_SORTING = ("sort_key", "sort_dir", "limit", "marker")

# -- what nova's query schemas know ------------------------------------------------------
# Filters on joined tables, which nova refuses by name (admins) or drops (users).
_JOINED = ("block_device_mapping", "services", "metadata", "system_metadata",
           "info_cache", "security_groups", "pci_devices")
# Values the schema checks as regular expressions (nova's common_query_regex_param).
_REGEX = ("kernel_id", "ramdisk_id", "hostname", "key_name", "power_state", "node",
          "flavor", "reservation_id", "launched_at", "terminated_at", "availability_zone",
          "name", "display_name", "description", "display_description", "locked_by",
          "root_device_name", "config_drive", "access_ip_v4", "access_ip_v6",
          "auto_disk_config", "progress", "ip", "ip6", "created_at", *TAG_FILTERS)
# Every parameter of the 2.1 schema (its other ones take any text).
_KNOWN = frozenset({
    *_REGEX, *_JOINED, *PAGING_AND_SORTING, "user_id", "project_id", "tenant_id",
    "launch_index", "image_ref", "image", "vm_state", "task_state", "host", "uuid",
    "all_tenants", "soft_deleted", "deleted", "status", "changes-since"} - set(TAG_FILTERS))
# What later schemas add.
_KNOWN_FROM: tuple[tuple[mv.Gate, tuple[str, ...]], ...] = (
    (mv.SERVER_LIST_TAGS, TAG_FILTERS),
    (mv.SERVER_LIST_CHANGES_BEFORE, ("changes-before",)),
    (mv.SERVER_LIST_LOCKED, ("locked",)),
)

# The filters a user keeps, by the version that gives them (nova's
# ``_get_server_search_options``).
_USER_FILTERS: tuple[tuple[mv.Gate | None, tuple[str, ...]], ...] = (
    (None, ("reservation_id", "name", "status", "image", "flavor", "ip", "changes-since",
            "all_tenants")),
    (mv.SERVER_LIST_IP6, ("ip6",)),
    (mv.SERVER_LIST_TAGS, TAG_FILTERS),
    (mv.SERVER_LIST_CHANGES_BEFORE, ("changes-before",)),
    (mv.SERVER_LIST_LOCKED, ("locked",)),
    (mv.SERVER_LIST_MORE_FILTERS, ("availability_zone", "config_drive", "key_name",
                                   "created_at", "launched_at", "terminated_at",
                                   "power_state", "task_state", "vm_state", "progress",
                                   "user_id")),
    (mv.SERVER_LIST_HOSTNAME, ("hostname",)),
)

# -- what each filter reads ----------------------------------------------------------------
# Exact: the field is the value (nova's exact filters; project_id is the scope's).
_EXACT: Mapping[str, ServerField] = {
    "uuid": F.UUID, "user_id": F.USER_ID, "image": F.IMAGE_ID, "image_ref": F.IMAGE_ID,
    "flavor": F.FLAVOR_ID, "host": F.HOST, "task_state": F.TASK_STATE}
# A regular expression searched in the field's text (nova's other filters).
_PATTERN: Mapping[str, ServerField] = {
    "name": F.NAME, "display_name": F.NAME, "reservation_id": F.RESERVATION_ID,
    "hostname": F.HOSTNAME, "key_name": F.KEY_NAME,
    "availability_zone": F.AVAILABILITY_ZONE, "node": F.NODE,
    "description": F.DESCRIPTION, "display_description": F.DESCRIPTION,
    "access_ip_v4": F.ACCESS_IPV4, "access_ip_v6": F.ACCESS_IPV6,
    "auto_disk_config": F.DISK_CONFIG, "launch_index": F.LAUNCH_INDEX,
    "created_at": F.CREATED_AT, "launched_at": F.LAUNCHED_AT,
    "terminated_at": F.DELETED_AT, "power_state": F.POWER_STATE}
# Yes or no (nova's locked; config_drive, which nova keeps as text, is one here).
_FLAGS: Mapping[str, ServerField] = {"locked": F.LOCKED, "config_drive": F.CONFIG_DRIVE}
# What every Moorage server shows for a value it does not keep (None: no value, which
# no pattern matches).
_SHOWN: Mapping[str, str | None] = {
    "kernel_id": "", "ramdisk_id": "", "root_device_name": None, "locked_by": None,
    "progress": "0", "ip": None, "ip6": None}

# -- sorting ----------------------------------------------------------------------------------
# nova's sort keys and Moorage's field for each (None: a value every server shares
# here, which orders nothing).
_SORT_KEYS: Mapping[str, ServerField | None] = {
    "access_ip_v4": F.ACCESS_IPV4, "access_ip_v6": F.ACCESS_IPV6,
    "auto_disk_config": F.DISK_CONFIG, "availability_zone": F.AVAILABILITY_ZONE,
    "config_drive": F.CONFIG_DRIVE, "created_at": F.CREATED_AT,
    "display_description": F.DESCRIPTION, "display_name": F.NAME, "host": F.HOST,
    "hostname": F.HOSTNAME, "image_ref": F.IMAGE_ID, "instance_type_id": F.FLAVOR_ID,
    "kernel_id": None, "key_name": F.KEY_NAME, "launch_index": F.LAUNCH_INDEX,
    "launched_at": F.LAUNCHED_AT, "locked_by": F.LOCKED, "node": F.NODE,
    "power_state": F.POWER_STATE, "progress": None, "project_id": F.PROJECT_ID,
    "ramdisk_id": None, "root_device_name": None, "task_state": F.TASK_STATE,
    "terminated_at": F.DELETED_AT, "updated_at": F.UPDATED_AT, "user_id": F.USER_ID,
    "uuid": F.UUID, "vm_state": F.VM_STATE}
# Keys nova accepted before it validated them and ignores (until 2.75, when they are
# a 400); locked is a key from 2.73.
_IGNORED_SORT_KEYS = frozenset({
    "architecture", "cell_name", "cleaned", "default_ephemeral_device",
    "default_swap_device", "deleted", "deleted_at", "disable_terminate", "ephemeral_gb",
    "ephemeral_key_uuid", "id", "key_data", "launched_on", "locked", "memory_mb",
    "os_type", "reservation_id", "root_gb", "shutdown_terminate", "user_data", "vcpus",
    "vm_mode"})
_ADMIN_SORT_KEYS = frozenset({"host", "node"})
_DIRECTIONS = {"asc": False, "desc": True}

# nova's statuses (common._STATE_MAP); Moorage's servers are in some of them.
NOVA_STATUSES = frozenset({
    "ACTIVE", "BUILD", "DELETED", "ERROR", "HARD_REBOOT", "MIGRATING", "PASSWORD", "PAUSED",
    "REBOOT", "REBUILD", "RESCUE", "RESIZE", "REVERT_RESIZE", "SHELVED",
    "SHELVED_OFFLOADED", "SHUTOFF", "SOFT_DELETED", "SUSPENDED", "VERIFY_RESIZE"})


@dataclass(frozen=True)
class ServerListing:
    """A list request, read: the query, whether it spans every project (which the
    handler authorizes), and whether a filter already decided that nothing matches."""

    query: ServerQuery
    all_tenants: bool
    matches_nothing: bool = False


def known(version: mv.Version) -> frozenset[str]:
    """The parameters nova's schema of ``version`` knows."""
    names = set(_KNOWN)
    for gate, added in _KNOWN_FROM:
        if mv.at(version, gate):
            names.update(added)
    return frozenset(names)


def user_filters(version: mv.Version) -> frozenset[str]:
    """The filters a user (no allow_all_filters) keeps at ``version``."""
    return frozenset(name for gate, names in _USER_FILTERS
                     if gate is None or mv.at(version, gate) for name in names)


def read(params: QueryParams, version: mv.Version, caller: RequestContext, *,
         all_filters: bool) -> ServerListing:
    """The list ``params`` ask for. ``all_filters``: the caller keeps every filter
    (nova's allow_all_filters policy, an administrator's by default)."""
    names = known(version)
    if mv.at(version, mv.SERVER_LIST_STRICT):
        try:  # nova's schema lets "_..." through, for the 400 below to name it
            only_known(params, names | {name for name in params if name.startswith("_")})
        except BadRequest as unknown:
            raise BadRequest(f"{unknown.message}; allowed: "
                             f"{', '.join(sorted(names))}.") from None
    _check_formats(params, names)
    sort = _sort(params, version, caller)
    limit = page_limit(params)
    kept = set(params) - set(PAGING_AND_SORTING)
    if not all_filters:
        kept &= user_filters(version)
    refused = sorted(name for name in kept if name in _JOINED or name.startswith("_"))
    if refused:  # an administrator's only: a user's were dropped
        raise BadRequest(f"Invalid filter field: {refused[0]}.")
    filters = {name: params.get(name) or "" for name in sorted(kept)}
    return _translate(filters, params, version, caller, sort, limit)


def _check_formats(params: QueryParams, names: Collection[str]) -> None:
    """The values nova's schema types, whoever asks and whether or not the filter is
    kept: regular expressions (those nova's schema names, and every other value this
    API searches as one: launch_index...) and times."""
    for name in sorted({*_REGEX, *_PATTERN}):
        if name not in names:
            continue
        for text in params.getall(name):
            try:
                re.compile(text)
            except re.error as exc:
                raise invalid_query(name, text, f"{text!r} is not a 'regex': {exc}.") from None
    for name in ("changes-since", "changes-before"):
        if name in names:
            for text in params.getall(name):
                moment(name, text)


def _flag(name: str, text: str) -> bool:
    """nova's strict boolean (oslo's bool_from_string, strict)."""
    try:
        return boolean(text, name)
    except BadRequest:
        raise invalid_query(name, text, f"Unrecognized value {text!r}; allowed: true, "
                            "false, 1, 0, yes, no, on, off, t, f, y, n.") from None


def _statuses(values: Sequence[str], version: mv.Version, caller: RequestContext
              ) -> tuple[frozenset[ServerStatus], bool] | None:
    """The statuses asked for, and whether deleted servers are (an administrator's
    DELETED alone); None: a status nova does not have, before 2.38."""
    asked = {value.strip().upper() for value in values}
    unknown = sorted(asked - NOVA_STATUSES)
    if unknown:
        if not mv.at(version, mv.SERVER_LIST_BAD_STATUS):
            return None
        raise BadRequest(f"Invalid status value {unknown[0]!r} for the status filter; "
                         f"allowed: {', '.join(sorted(NOVA_STATUSES))}.")
    deleted = asked == {str(ServerStatus.DELETED)}
    if deleted and not caller.is_admin:
        raise Forbidden("Only administrators may list deleted instances")
    return frozenset(ServerStatus(s) for s in asked if s in ServerStatus.__members__), deleted


def _translate(filters: Mapping[str, str], params: QueryParams, version: mv.Version,
               caller: RequestContext, sort: tuple[Sort, ...], limit: int) -> ServerListing:
    nothing = False
    equal: dict[ServerField, frozenset[str]] = {}
    patterns: dict[ServerField, str] = {}
    flags: dict[ServerField, bool] = {}
    statuses: frozenset[ServerStatus] | None = None
    deleted = Deleted.EXCLUDED
    if "changes-since" in filters or "changes-before" in filters:
        deleted = Deleted.INCLUDED
    if "deleted" in filters:
        deleted = Deleted.ONLY if filters["deleted"].strip().lower() in (
            "1", "t", "true", "on", "y", "yes") else Deleted.EXCLUDED
    if "status" in filters:
        found = _statuses(params.getall("status"), version, caller)
        if found is None:
            nothing = True
        else:
            statuses, only_deleted = found
            if only_deleted:
                deleted = Deleted.ONLY
    if "vm_state" in filters:
        wanted = filters["vm_state"]
        by_vm_state = frozenset(s for s, vm in VM_STATES.items() if vm == wanted)
        statuses = by_vm_state if statuses is None else statuses & by_vm_state
    for name, text in filters.items():
        if name in _EXACT:
            equal[_EXACT[name]] = equal.get(_EXACT[name], frozenset({text})) & {text}
        elif name in _PATTERN:
            patterns[_PATTERN[name]] = text
        elif name in _FLAGS:
            flags[_FLAGS[name]] = _flag(name, text)
        elif name in _SHOWN:
            shown = _SHOWN[name]
            nothing = nothing or shown is None or re.search(text, shown) is None
    all_tenants = _all_tenants(filters)
    if all_tenants:
        project = filters.get("project_id") or filters.get("tenant_id")
        if project:
            equal[F.PROJECT_ID] = frozenset({project})
    elif caller.project_id:
        equal[F.PROJECT_ID] = frozenset({caller.project_id})
    else:
        equal[F.USER_ID] = frozenset({caller.user_id or ""})
    since = moment("changes-since", filters["changes-since"]) \
        if "changes-since" in filters else None
    before = moment("changes-before", filters["changes-before"]) \
        if "changes-before" in filters else None
    if since is not None and before is not None and before < since:
        raise BadRequest("The value of changes-since must be less than or equal to "
                         "changes-before.")
    query = ServerQuery(
        equal=equal, patterns=patterns, flags=flags, statuses=statuses,
        tags=_tags(filters), deleted=deleted, changes_since=since, changes_before=before,
        sort=sort, limit=limit, marker=params.get("marker"))
    return ServerListing(query, all_tenants, nothing)


def _all_tenants(filters: Mapping[str, str]) -> bool:
    """nova's ``is_all_tenants``: present and empty, or a true word (a word that is
    neither is a 400)."""
    if "all_tenants" not in filters:
        return False
    text = filters["all_tenants"]
    return True if not text else _flag("all_tenants", text)


def _tags(filters: Mapping[str, str]) -> TagMatch:
    def listed(name: str) -> tuple[str, ...]:
        return tuple(filters[name].split(",")) if name in filters else ()

    return TagMatch(all_of=listed("tags"), any_of=listed("tags-any"),
                    not_all_of=listed("not-tags"), none_of=listed("not-tags-any"))


def sort_keys(version: mv.Version) -> frozenset[str]:
    """The sort keys nova's schema of ``version`` accepts."""
    keys = set(_SORT_KEYS) | _IGNORED_SORT_KEYS
    if mv.at(version, mv.SERVER_LIST_LOCKED):
        keys.add("locked")
    if mv.at(version, mv.SERVER_LIST_STRICT):
        keys -= _IGNORED_SORT_KEYS - {"locked"}
    return frozenset(keys)


def _sort(params: QueryParams, version: mv.Version, caller: RequestContext
          ) -> tuple[Sort, ...]:
    """The order asked for (nova's get_sort_params, remove_invalid_sort_keys and
    process_sort_params), newest first when none is."""
    keys = [key.strip() for key in params.getall("sort_key")]
    directions = [text.strip() for text in params.getall("sort_dir")]
    allowed = sort_keys(version)
    for key in keys:
        if key not in allowed:
            raise invalid_query("sort_key", key, f"{key!r} is not a sort key; allowed: "
                                f"{', '.join(sorted(allowed))}.")
    ignored = _IGNORED_SORT_KEYS - ({"locked"} if mv.at(version, mv.SERVER_LIST_LOCKED)
                                    else set())
    for index in reversed(range(len(keys))):
        if keys[index] in ignored:
            if len(directions) > index:
                del directions[index]
            del keys[index]
        elif keys[index] in _ADMIN_SORT_KEYS and not caller.is_admin:
            raise Forbidden(f"Only administrators can sort servers by {keys[index]}")
    for direction in directions:
        if direction not in _DIRECTIONS:
            raise invalid_query("sort_dir", direction, "Unknown sort direction, must be "
                                "'desc' or 'asc'.")
    if len(directions) > max(len(keys), 1):
        raise invalid_query("sort_dir", ",".join(directions), "Sort direction size "
                            "exceeds sort key size.")
    if not keys:
        return NEWEST_FIRST if not directions else (
            Sort(F.CREATED_AT, _DIRECTIONS[directions[0]]),)
    default = _DIRECTIONS[directions[0]] if directions else True
    found: list[Sort] = []
    for index, key in enumerate(keys):
        descending = _DIRECTIONS[directions[index]] if index < len(directions) else default
        name = F.LOCKED if key == "locked" else _SORT_KEYS[key]
        if name is not None:
            found.append(Sort(name, descending))
    return tuple(found) or (Sort(F.CREATED_AT, default),)
