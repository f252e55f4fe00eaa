"""A server list's query string read as nova reads it (moorage.api.server_query): what
each filter becomes at each version, for a user and for an administrator, and the
refusals. Pure translation: no database, no HTTP."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from moorage.api import microversion as mv
from moorage.api import server_query
from moorage.api.context import RequestContext
from moorage.api.errors import ApiError
from moorage.api.http import QueryParams
from moorage.lifecycle.listing import (
    Deleted,
    ServerField,
    ServerQuery,
    Sort,
    TagMatch,
)
from moorage.lifecycle.states import ServerStatus

F = ServerField
USER = RequestContext("u1", "p1", ("member",))
ADMIN = RequestContext("admin", "admin", ("admin",))
LATEST = mv.MAX_VERSION
MINE = {F.PROJECT_ID: frozenset({"p1"})}


def _read(text: str, version: mv.Version = LATEST, caller: RequestContext = USER
          ) -> server_query.ServerListing:
    return server_query.read(QueryParams(parse_qsl(text, keep_blank_values=True)), version,
                             caller, all_filters=caller.is_admin)


def _query(text: str, version: mv.Version = LATEST, caller: RequestContext = USER
           ) -> ServerQuery:
    return _read(text, version, caller).query


V = mv.Version
# (query string, version, caller, what the store is asked; only the fields named)
READS: list[tuple[str, mv.Version, RequestContext, dict[str, object]]] = [
    ("", LATEST, USER, {"equal": MINE, "sort": (Sort(F.CREATED_AT, True),),
                        "limit": 1000, "deleted": Deleted.EXCLUDED}),
    ("limit=5000&marker=m1", LATEST, USER, {"limit": 1000, "marker": "m1"}),
    ("name=^web&reservation_id=r-1", LATEST, USER,
     {"patterns": {F.NAME: "^web", F.RESERVATION_ID: "r-1"}}),
    ("image=i1&flavor=f1", LATEST, USER,
     {"equal": {**MINE, F.IMAGE_ID: frozenset({"i1"}), F.FLAVOR_ID: frozenset({"f1"})}}),
    ("status=active&status=ERROR", LATEST, USER,
     {"statuses": frozenset({ServerStatus.ACTIVE, ServerStatus.ERROR})}),
    ("status=SHUTOFF", LATEST, USER, {"statuses": frozenset({ServerStatus.SHUTOFF})}),
    ("status=PAUSED", LATEST, USER, {"statuses": frozenset()}),
    ("tags=a,b&tags-any=c&not-tags=d&not-tags-any=e,f", V(2, 26), USER,
     {"tags": TagMatch(("a", "b"), ("c",), ("d",), ("e", "f"))}),
    ("tags=a", V(2, 25), USER, {"tags": TagMatch()}),
    ("changes-since=2026-01-01T00:00:00Z", LATEST, USER, {"deleted": Deleted.INCLUDED}),
    ("changes-before=2026-01-01T00:00:00Z", V(2, 65), USER,
     {"deleted": Deleted.EXCLUDED, "changes_before": None}),
    ("locked=yes", V(2, 73), USER, {"flags": {F.LOCKED: True}}),
    ("locked=yes", V(2, 72), USER, {"flags": {}}),
    ("vm_state=active&key_name=k", V(2, 83), USER,
     {"statuses": frozenset({ServerStatus.ACTIVE, ServerStatus.REBUILD,
                             ServerStatus.RESIZE, ServerStatus.REBOOT,
                             ServerStatus.HARD_REBOOT}), "patterns": {F.KEY_NAME: "k"}}),
    ("vm_state=active&key_name=k", V(2, 82), USER, {"statuses": None, "patterns": {}}),
    ("hostname=h", V(2, 90), USER, {"patterns": {F.HOSTNAME: "h"}}),
    ("host=h1&node=n&deleted=true&project_id=p2", LATEST, USER,
     {"equal": MINE, "patterns": {}, "deleted": Deleted.EXCLUDED}),
    ("host=h1&node=n&deleted=true", LATEST, ADMIN,
     {"equal": {F.PROJECT_ID: frozenset({"admin"}), F.HOST: frozenset({"h1"})},
      "patterns": {F.NODE: "n"}, "deleted": Deleted.ONLY}),
    ("all_tenants&tenant_id=p2", LATEST, ADMIN, {"equal": {F.PROJECT_ID: frozenset({"p2"})}}),
    ("all_tenants=0", LATEST, ADMIN, {"equal": {F.PROJECT_ID: frozenset({"admin"})}}),
    ("all_tenants=1", LATEST, ADMIN, {"equal": {}}),
    ("status=DELETED", LATEST, ADMIN, {"deleted": Deleted.ONLY}),
    ("sort_key=display_name&sort_dir=asc&sort_key=uuid", LATEST, USER,
     {"sort": (Sort(F.NAME, False), Sort(F.UUID, False))}),
    ("sort_key=id&sort_key=display_name&sort_dir=asc&sort_dir=desc", V(2, 74), USER,
     {"sort": (Sort(F.NAME, True),)}),
    ("sort_key=locked", V(2, 73), USER, {"sort": (Sort(F.LOCKED, True),)}),
    ("sort_key=locked", V(2, 72), USER, {"sort": (Sort(F.CREATED_AT, True),)}),
    ("sort_key=kernel_id&sort_dir=asc", LATEST, USER, {"sort": (Sort(F.CREATED_AT, False),)}),
    ("sort_dir=asc", LATEST, USER, {"sort": (Sort(F.CREATED_AT, False),)}),
]


@pytest.mark.parametrize(("text", "version", "caller", "expected"), READS)
def test_what_each_query_asks_of_the_store(text: str, version: mv.Version,
                                           caller: RequestContext,
                                           expected: dict[str, object]) -> None:
    query = _query(text, version, caller)
    assert {name: getattr(query, name) for name in expected} == expected


# (query string, version, caller): a filter decided without the database.
NOTHING: list[tuple[str, mv.Version, RequestContext, bool]] = [
    ("ip=10.0.0.1", LATEST, USER, True),
    ("ip6=::1", V(2, 5), USER, True),
    ("ip6=::1", V(2, 4), USER, False),
    ("status=SLEEPY", V(2, 37), USER, True),
    ("kernel_id=^$", LATEST, ADMIN, False),  # every server shows ""
    ("kernel_id=aki", LATEST, ADMIN, True),
    ("progress=0", V(2, 83), USER, False),
]


@pytest.mark.parametrize(("text", "version", "caller", "nothing"), NOTHING)
def test_filters_no_server_can_match(text: str, version: mv.Version,
                                     caller: RequestContext, nothing: bool) -> None:
    assert _read(text, version, caller).matches_nothing is nothing


def test_all_tenants_is_the_handler_s_to_authorize() -> None:
    assert _read("all_tenants").all_tenants
    assert _read("all_tenants=true").all_tenants
    assert not _read("all_tenants=off").all_tenants


# (query string, version, caller, status, in the message)
REFUSED: list[tuple[str, mv.Version, RequestContext, int, str]] = [
    ("sort_key=colour", LATEST, USER, 400, "sort_key. Value: colour"),
    ("sort_key=id", LATEST, USER, 400, "'id' is not a sort key; allowed: access_ip_v4"),
    ("sort_key=host", LATEST, USER, 403, "Only administrators can sort servers by host"),
    ("sort_key=node", LATEST, USER, 403, "by node"),
    ("sort_dir=up", LATEST, USER, 400, "sort_dir. Value: up. Unknown sort direction"),
    ("sort_dir=asc&sort_dir=desc", LATEST, USER, 400, "Sort direction size exceeds"),
    ("limit=-1", LATEST, USER, 400, "limit. Value: -1"),
    ("limit=1.5", LATEST, USER, 400, "limit"),
    ("changes-since=monday", LATEST, USER, 400, "changes-since. Value: monday"),
    ("changes-since=2026-01-02T00:00:00&changes-before=2026-01-01T00:00:00", LATEST, USER,
     400, "changes-since must be less than or equal to changes-before"),
    ("status=SLEEPY", V(2, 38), USER, 400, "Invalid status value 'SLEEPY'"),
    ("status=DELETED", LATEST, USER, 403, "Only administrators may list deleted"),
    ("name=(", LATEST, USER, 400, "name. Value: (. '(' is not a 'regex'"),
    ("node=(", LATEST, USER, 400, "node"),  # checked, then dropped for a user
    ("locked=maybe", LATEST, USER, 400, "locked. Value: maybe"),
    ("all_tenants=maybe", LATEST, USER, 400, "all_tenants. Value: maybe"),
    ("colour=blue", V(2, 75), USER, 400, "'colour' was unexpected); allowed: "),
    ("_hidden=1", LATEST, ADMIN, 400, "Invalid filter field: _hidden."),
    ("security_groups=x", LATEST, ADMIN, 400, "Invalid filter field: security_groups."),
]


@pytest.mark.parametrize(("text", "version", "caller", "status", "message"), REFUSED)
def test_refusals_name_the_parameter(text: str, version: mv.Version,
                                     caller: RequestContext, status: int,
                                     message: str) -> None:
    with pytest.raises(ApiError) as refused:
        _read(text, version, caller)
    assert refused.value.status == status
    assert message in refused.value.message


@pytest.mark.parametrize("text", ["colour=blue", "security_groups=x", "_hidden=1"])
def test_what_users_may_not_filter_on_is_dropped_before_2_75(text: str) -> None:
    assert _query(text, V(2, 74)) == _query("", V(2, 74))


def test_the_known_parameters_grow_with_the_version() -> None:
    assert "tags" not in server_query.known(V(2, 25))
    assert "tags" in server_query.known(V(2, 26))
    assert "changes-before" in server_query.known(V(2, 66))
    assert "locked" in server_query.known(V(2, 73))
    assert server_query.user_filters(V(2, 1)) < server_query.user_filters(LATEST)
    assert "id" in server_query.sort_keys(V(2, 74))
    assert "id" not in server_query.sort_keys(V(2, 75))
    assert "locked" in server_query.sort_keys(V(2, 75))
