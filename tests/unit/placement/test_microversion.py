"""Placement's microversion header (``moorage.placement.microversion``): what a
request asks for, and the values refused."""

from __future__ import annotations

import pytest

from moorage.placement.microversion import (
    MAX_VERSION,
    MIN_VERSION,
    MicroversionError,
    Version,
    from_environ,
)


def _asked(value: str | None) -> Version:
    return from_environ({} if value is None else {"HTTP_OPENSTACK_API_VERSION": value})


def test_what_a_request_asks_for() -> None:
    assert _asked(None) == MIN_VERSION
    assert _asked("compute 2.60") == MIN_VERSION  # another service's entry
    assert _asked("placement 1.2, compute 2.1, placement 1.30") == Version(1, 30)
    assert _asked("placement latest") == MAX_VERSION


@pytest.mark.parametrize(("value", "status"), [
    ("", 400),          # what Granian hands over for a value beyond ASCII
    ("   ", 400),
    ("placement 1.٣", 400),
    ("placement 1.3.1", 400),
    ("placement 1.40", 406),
])
def test_refused(value: str, status: int) -> None:
    with pytest.raises(MicroversionError) as refused:
        _asked(value)
    assert refused.value.status == status
