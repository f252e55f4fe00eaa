"""Microversion negotiation and the table of gates (moorage.api.microversion)."""

from __future__ import annotations

import pytest

from moorage.api import microversion
from moorage.api.microversion import (
    GATES,
    MAX_VERSION,
    MIN_VERSION,
    MicroversionError,
    Version,
    parse,
    requested,
)


@pytest.mark.parametrize(("text", "expected"), [
    ("2.1", Version(2, 1)), ("2.9", Version(2, 9)), ("2.10", Version(2, 10)),
    (" 2.60 ", Version(2, 60)), ("latest", MAX_VERSION), ("LATEST", MAX_VERSION),
    (str(MAX_VERSION), MAX_VERSION),
])
def test_versions_served(text: str, expected: Version) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize("text", ["2", "2.", ".1", "2.1.1", "v2.1", "2.01", "02.1", "2.x",
                                  "2.+1", "2.\u0663", "", "2,1", "-2.1"])
def test_malformed_versions_are_400_naming_the_format(text: str) -> None:
    with pytest.raises(MicroversionError) as raised:
        parse(text)
    assert raised.value.status == 400
    assert "MajorNum.MinorNum" in raised.value.message


@pytest.mark.parametrize("text", ["2.0", "1.1", "3.0", "2.1000",
                                  f"2.{MAX_VERSION.minor + 1}"])
def test_versions_outside_the_range_are_406_naming_it(text: str) -> None:
    with pytest.raises(MicroversionError) as raised:
        parse(text)
    assert raised.value.status == 406
    assert f"Minimum is {MIN_VERSION} and maximum is {MAX_VERSION}" in raised.value.message


def _environ(**headers: str) -> dict[str, object]:
    return {f"HTTP_{name.upper()}": value for name, value in headers.items()}


def test_no_header_is_the_minimum() -> None:
    assert requested({}) == MIN_VERSION
    # Another service's entry says nothing of compute.
    assert requested(_environ(openstack_api_version="placement 1.30")) == MIN_VERSION


def test_the_standard_header_wins_over_the_legacy_one() -> None:
    environ = _environ(openstack_api_version="placement 1.2, compute 2.60",
                       x_openstack_nova_api_version="2.5")
    assert requested(environ) == Version(2, 60)
    assert requested(_environ(x_openstack_nova_api_version="2.5")) == Version(2, 5)
    # Without a compute entry, the legacy header is read.
    environ = _environ(openstack_api_version="placement 1.2",
                       x_openstack_nova_api_version="2.7")
    assert requested(environ) == Version(2, 7)


def test_the_last_compute_entry_wins_and_the_service_is_any_case() -> None:
    environ = _environ(openstack_api_version="compute 2.3, COMPUTE 2.33")
    assert requested(environ) == Version(2, 33)


def test_a_bad_value_in_either_header_is_refused() -> None:
    with pytest.raises(MicroversionError):
        requested(_environ(openstack_api_version="compute two"))
    with pytest.raises(MicroversionError):
        requested(_environ(x_openstack_nova_api_version="9.9"))


def test_versions_order_as_numbers_not_text() -> None:
    assert Version(2, 9) < Version(2, 10) < Version(2, 100)


def test_every_gate_is_inside_the_served_range_and_documented_in_order() -> None:
    assert GATES, "the table is empty"
    for gate in GATES:
        assert MIN_VERSION < gate.version <= MAX_VERSION, gate
        assert gate.change and gate.resource
    document = microversion.document()
    assert len(document) == len(GATES)
    versions = [Version.of(entry["version"]) for entry in document]
    assert versions == sorted(versions)


def test_a_gate_opens_at_its_version_and_not_before() -> None:
    gate = microversion.FLAVOR_DESCRIPTION
    assert not microversion.at(Version(2, 54), gate)
    assert microversion.at(Version(2, 55), gate)
    assert microversion.at(MAX_VERSION, gate)


def test_an_empty_header_is_refused_not_read_as_no_version() -> None:
    """Granian hands a value of bytes beyond ASCII (digits such as "٣" sent raw) to the
    application as "": that must not become 2.1."""
    for environ in (_environ(openstack_api_version=""),
                    _environ(openstack_api_version="  "),
                    _environ(x_openstack_nova_api_version="")):
        with pytest.raises(MicroversionError) as refused:
            requested(environ)
        assert refused.value.status == 400
        assert "empty or not ASCII" in refused.value.message
