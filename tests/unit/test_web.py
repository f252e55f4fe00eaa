"""What every service's request parsing shares (``moorage.web``): the checks a JSON
body passes before any schema reads it, and the date of a last-modified header."""

from __future__ import annotations

import datetime
import email.utils

import orjson
import pytest

from moorage.web import MAX_JSON_DEPTH, http_date, json_body_problem, nested_deeper_than


def _nested(depth: int) -> object:
    value: object = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@pytest.mark.parametrize("depth", [0, 1, 2, MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH])
def test_a_body_within_the_depth_passes(depth: int) -> None:
    body = orjson.dumps(_nested(depth))
    assert not nested_deeper_than(orjson.loads(body), MAX_JSON_DEPTH)
    assert json_body_problem(body, orjson.loads(body)) is None


def test_one_level_more_is_refused_and_said_so() -> None:
    body = orjson.dumps({"server": _nested(MAX_JSON_DEPTH)})
    problem = json_body_problem(body, orjson.loads(body))
    assert problem == (f"JSON nested more than {MAX_JSON_DEPTH} levels deep is not allowed "
                       "in the request body.")


def test_far_deeper_than_the_stack_is_refused_without_recursing() -> None:
    data: object = 0
    for _ in range(100_000):
        data = [data]
    assert nested_deeper_than(data, MAX_JSON_DEPTH)


def test_depth_counts_the_deepest_branch_not_the_widest() -> None:
    wide = {f"k{n}": [{"a": 1}] for n in range(1000)}
    assert not nested_deeper_than(wide, 3)
    assert nested_deeper_than({**wide, "deep": _nested(5)}, 3)


def test_a_nul_is_still_refused() -> None:
    body = b'{"name": "a\\u0000b"}'
    assert json_body_problem(body, orjson.loads(body)) == (
        "NUL characters are not allowed in the request body.")


@pytest.mark.parametrize("moment", [
    datetime.datetime(2026, 11, 28, 2, 7, 1, 999999),  # naive: UTC, to the second
    datetime.datetime(2026, 11, 28, 2, 7, 1),
    datetime.datetime(2026, 11, 28, 3, 7, 1, 5, tzinfo=datetime.timezone(
        datetime.timedelta(hours=1))),
    datetime.datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=datetime.UTC),
])
def test_an_http_date_is_the_emails_to_the_second(moment: datetime.datetime) -> None:
    aware = moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)
    expected = email.utils.format_datetime(
        aware.astimezone(datetime.UTC).replace(microsecond=0), usegmt=True)
    assert http_date(moment) == http_date(moment) == expected
