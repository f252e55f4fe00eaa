"""GET /os-migrations in every microversion's shape, over HTTP: each gate of
``os-migrations`` changes the answer exactly at its version; 2.1 has exactly nova's
keys (old_instance_type_id and the rest, which novaclient reads); from 2.59 the list
is paged in the query, newest first, with a next link; bad input is a 400 naming it."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from moorage.api import microversion
from moorage.api.microversion import Version
from moorage.lifecycle.records import MigrationRecord
from moorage.lifecycle.states import MigrationKind
from tests.api_fixtures import ComputeApi, GateCase, Observe, just_before, version
from tests.lifecycle_paths import record_move

# Long ago: the move finished by a transition is stamped now, after the others.
T0 = datetime.datetime(2020, 1, 1, 12, 0, 0)
FIRST = "11111111-1111-4111-8111-111111111111"
SECOND = "22222222-2222-4222-8222-222222222222"
THIRD = "33333333-3333-4333-8333-333333333333"
SERVER = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"


def _at(minutes: int) -> datetime.datetime:
    return T0 + datetime.timedelta(minutes=minutes)


@pytest.fixture
def api(compute_api: ComputeApi) -> ComputeApi:
    """Three moves, recorded as the conductor records them: a cold migration from h1
    finished on h2, a resize from h2 asked for by u2, and an evacuation from h3
    recorded before Moorage kept who asked."""
    database = compute_api.state.database
    record_move(database, MigrationRecord(
        uuid=FIRST, server_uuid=SERVER, kind=MigrationKind.MIGRATION, source_host="h1",
        created_at=_at(0), updated_at=_at(0), user_id="u1", project_id="p1"),
        destination="h2")
    record_move(database, MigrationRecord(
        uuid=SECOND, server_uuid=SERVER, kind=MigrationKind.RESIZE, source_host="h2",
        created_at=_at(1), updated_at=_at(2), user_id="u2", project_id="p2"))
    record_move(database, MigrationRecord(
        uuid=THIRD, server_uuid=SERVER, kind=MigrationKind.EVACUATION, source_host="h3",
        created_at=_at(2), updated_at=_at(3)))
    return compute_api


def _get(api: ComputeApi, at: Version | str, query: str = "") -> Any:
    return api.admin("GET", f"/v2.1/os-migrations{query}", headers=version(at))


def _listed(api: ComputeApi, at: Version | str, query: str = "") -> list[dict[str, Any]]:
    response = _get(api, at, query)
    assert response.status_code == 200, response.text
    return list(response.json()["migrations"])


# -- one case per gate ---------------------------------------------------------------------



def _newest(api: ComputeApi, at: Version) -> dict[str, Any]:
    return _listed(api, at)[0]


def _count(query: str) -> Observe:
    return lambda api, at: len(_listed(api, at, query))


def _found(query: str) -> Observe:
    """The uuids listed, or the status of a refusal."""
    def observe(api: ComputeApi, at: Version) -> object:
        response = _get(api, at, query)
        if response.status_code != 200:
            return response.status_code
        return [m["uuid"] for m in response.json()["migrations"]]
    return observe


CASES = [
    GateCase(microversion.MIGRATION_TYPE, "migration_type",
             lambda api, at: _newest(api, at).get("migration_type"), None, "evacuation"),
    GateCase(microversion.MIGRATION_PAGING, "uuid",
             lambda api, at: _newest(api, at).get("uuid"), None, THIRD),
    GateCase(microversion.MIGRATION_PAGING, "limit", _count("?limit=1"), 3, 1),
    GateCase(microversion.MIGRATION_PAGING, "changes-since",
             _count("?changes-since=2020-01-01T12:03:00Z"), 3, 2),
    GateCase(microversion.MIGRATION_PAGING, "an unknown parameter",
             lambda api, at: _get(api, at, "?colour=red").status_code, 200, 400),
    GateCase(microversion.MIGRATION_CHANGES_BEFORE, "changes-before",
             _found("?changes-before=2020-01-01T12:02:00Z"), 400, [SECOND]),
    GateCase(microversion.MIGRATION_OWNER, "user_id and project_id",
             lambda api, at: [(m.get("user_id"), m.get("project_id"))
                              for m in _listed(api, at)],
             [(None, None)] * 3, [(None, None), ("u2", "p2"), ("u1", "p1")]),
    GateCase(microversion.MIGRATION_OWNER, "the user_id filter", _found("?user_id=u2"),
             400, [SECOND]),
    GateCase(microversion.MIGRATION_OWNER, "the project_id filter", _found("?project_id=p1"),
             400, [FIRST]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.gate.version}-{c.what}")
def test_the_answer_changes_exactly_at_the_gate(api: ComputeApi, case: GateCase) -> None:
    assert (case.observe(api, just_before(case.gate)), case.observe(api, case.gate.version)
            ) == (case.before, case.at)


def test_every_migration_gate_has_a_case() -> None:
    gates = {g for g in microversion.GATES if g.resource == "os-migrations"}
    assert gates == {case.gate for case in CASES}


# -- the shapes and the values ----------------------------------------------------------

V2_1_KEYS = {"id", "instance_uuid", "source_compute", "dest_compute", "source_node",
             "dest_node", "dest_host", "old_instance_type_id", "new_instance_type_id",
             "status", "created_at", "updated_at"}


def test_at_2_1_a_migration_has_exactly_novas_keys_and_true_values(api: ComputeApi) -> None:
    response = _get(api, "2.1")
    assert set(response.json()) == {"migrations"}
    newest_first = response.json()["migrations"]
    assert [set(m) for m in newest_first] == [V2_1_KEYS] * 3
    finished = newest_first[2]
    assert (finished["instance_uuid"], finished["source_compute"], finished["dest_compute"],
            finished["status"]) == (SERVER, "h1", "h2", "finished")
    assert isinstance(finished["id"], int)
    # What Moorage does not keep is what nova says when it has none.
    assert [finished[k] for k in ("source_node", "dest_node", "dest_host",
                                  "old_instance_type_id", "new_instance_type_id")] == [None] * 5
    assert (newest_first[0]["created_at"], newest_first[0]["updated_at"]) == (
        "2020-01-01T12:02:00.000000", "2020-01-01T12:03:00.000000")
    assert newest_first[0]["dest_compute"] is None


def test_the_newest_shape_keeps_what_moorages_client_reads(api: ComputeApi) -> None:
    newest = _listed(api, microversion.MAX_VERSION)[0]
    assert {"id", "uuid", "instance_uuid", "migration_type", "source_compute",
            "dest_compute", "status", "created_at", "updated_at"} <= set(newest)


@pytest.mark.parametrize(("query", "expected"), [
    ("?host=h2", [SECOND, FIRST]),
    ("?source_compute=h2", [SECOND]),
    ("?host=h2&source_compute=h1", [SECOND, FIRST]),  # nova: host wins
    ("?status=finished", [FIRST]),
    ("?migration_type=resize", [SECOND]),
    ("?instance_uuid=" + SERVER, [THIRD, SECOND, FIRST]),
    ("?hidden=true", []),
    ("?hidden=false", [THIRD, SECOND, FIRST]),
    ("?changes-since=2020-01-01T12:02:00&changes-before=2020-01-01T12:03:00",
     [THIRD, SECOND]),
    ("?changes-since=2020-01-01T13:02:00%2B01:00", [THIRD, SECOND, FIRST]),
])
def test_filters(api: ComputeApi, query: str, expected: list[str]) -> None:
    assert [m["uuid"] for m in _listed(api, microversion.MAX_VERSION, query)] == expected


def test_below_2_59_nova_filters_by_requester_too(api: ComputeApi) -> None:
    """nova's query below 2.59 reads every parameter given, user_id among them."""
    assert [m["id"] for m in _listed(api, "2.1", "?user_id=u2")] == [
        m["id"] for m in _listed(api, "2.1", "?migration_type=resize")]


def test_pages_follow_the_next_link(api: ComputeApi) -> None:
    page = _get(api, "2.59", "?limit=2").json()
    assert [m["uuid"] for m in page["migrations"]] == [THIRD, SECOND]
    [link] = page["migrations_links"]
    assert link == {"rel": "next",
                    "href": f"{api.url}/v2.1/os-migrations?limit=2&marker={SECOND}"}
    rest = api.admin("GET", link["href"][len(api.url):], headers=version("2.59"),
                     expect=200).json()
    assert rest == {"migrations": [_listed(api, "2.59")[2]]}  # short: no link
    assert "migrations_links" not in _get(api, "2.59").json()


@pytest.mark.parametrize(("query", "words"), [
    ("?marker=nope", "Marker nope could not be found."),
    ("?limit=-1", "Invalid input for query parameters limit. Value: -1."),
    ("?limit=1&limit=2", "limit may be given only once"),
    ("?changes-since=yesterday", "Invalid input for query parameters changes-since. "
                                 "Value: yesterday."),
    ("?changes-before=2020-13-01", "Invalid input for query parameters changes-before."),
    ("?changes-since=2020-01-02&changes-before=2020-01-01",
     "The value of changes-since must be less than or equal to changes-before."),
    ("?colour=red", "Additional properties are not allowed ('colour' was unexpected)"),
])
def test_bad_input_is_a_400_naming_it(api: ComputeApi, query: str, words: str) -> None:
    refused = _get(api, microversion.MAX_VERSION, query)
    assert refused.status_code == 400, refused.text
    assert words in refused.json()["badRequest"]["message"]


def test_only_administrators_list_moves(api: ComputeApi) -> None:
    api.user("GET", "/v2.1/os-migrations", expect=403)
