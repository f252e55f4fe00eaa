"""os-getConsoleOutput's length: nova's schema (an integer from -1, or one as a
string), and the tail it keeps."""

from __future__ import annotations

import pytest

from moorage.api.errors import BadRequest
from moorage.api.handlers.console_output import requested_length, tail

LOG = "one\ntwo\nthree\n"


@pytest.mark.parametrize(("argument", "length"), [
    (None, None), ({}, None), ({"length": None}, None), ({"length": -1}, None),
    ({"length": 0}, 0), ({"length": 2}, 2), ({"length": "2"}, 2), ({"length": "-1"}, None)])
def test_the_length_asked(argument: object, length: int | None) -> None:
    assert requested_length(argument) == length


@pytest.mark.parametrize("argument", [{"length": -2}, {"length": "two"}, {"length": 1.0},
                                      {"length": True}, {"lines": 2}, ["length"]])
def test_a_bad_length_is_a_400(argument: object) -> None:
    with pytest.raises(BadRequest):
        requested_length(argument)


@pytest.mark.parametrize(("length", "kept"), [
    (None, LOG), (0, ""), (1, ""), (2, "three\n"), (4, LOG), (10, LOG)])
def test_the_tail_keeps_the_last_lines(length: int | None, kept: str) -> None:
    # nova's count: the text after the last newline is a line (empty here).
    assert tail(LOG, length) == kept
