"""nova's two spellings of a time, written without strftime on the hot path: the
same text as its formats, for every kind of value a server's row holds."""

from __future__ import annotations

import datetime

import pytest

from moorage.api.timestamps import ISO_TIME_FORMAT, NOVA_TIME_FORMAT, iso_time, nova_time

UTC = datetime.UTC


@pytest.mark.parametrize("value", [
    datetime.datetime(2026, 11, 28, 2, 7, 1, 123456),
    datetime.datetime(2026, 11, 28, 2, 7, 1),  # no microseconds: still six digits
    datetime.datetime(2026, 1, 2, 3, 4, 5, 600),
    datetime.datetime(1999, 12, 31, 23, 59, 59, 999999),
    datetime.datetime(1000, 1, 1),
    datetime.datetime(999, 1, 1),  # strftime's own spelling, whatever it is
    datetime.datetime(2026, 11, 28, 2, 7, 1, 5, tzinfo=UTC),
])
def test_the_text_is_strftimes(value: datetime.datetime) -> None:
    assert nova_time(value) == value.strftime(NOVA_TIME_FORMAT)
    assert iso_time(value) == value.strftime(ISO_TIME_FORMAT)


def test_none_stays_none() -> None:
    assert nova_time(None) is None and iso_time(None) is None


def test_the_spellings() -> None:
    moment = datetime.datetime(2026, 11, 28, 2, 7, 1)
    assert (nova_time(moment), iso_time(moment)) == ("2026-11-28T02:07:01.000000",
                                                     "2026-11-28T02:07:01Z")
