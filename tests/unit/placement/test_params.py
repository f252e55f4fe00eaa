"""Query-string and header parsers, against random well-formed and malformed input."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moorage.placement import microversion
from moorage.placement.api import params
from moorage.placement.http import BadRequest

NAMES = st.from_regex(r"\A[A-Z][A-Z0-9_]{0,20}\Z")
UUIDS = st.uuids().map(str)


@given(st.dictionaries(NAMES, st.integers(1, 10**9), min_size=1, max_size=6))
def test_resources_round_trip(resources: dict[str, int]) -> None:
    text = ",".join(f"{rc}:{n}" for rc, n in resources.items())
    assert params.parse_resources(text) == resources


@given(NAMES, st.integers(max_value=0))
def test_resources_need_positive_amounts(name: str, amount: int) -> None:
    with pytest.raises(BadRequest, match="requires amount >= 1"):
        params.parse_resources(f"{name}:{amount}")


@pytest.mark.parametrize("text", ["VCPU", "VCPU:1:2", "VCPU:1,", "VCPU:", "VCPU:x", " ",
                                  "VCPU:٣", "VCPU:1²"])
def test_malformed_resources(text: str) -> None:
    with pytest.raises(BadRequest):
        params.parse_resources(text)


@given(st.lists(NAMES, min_size=1, max_size=5, unique=True),
       st.lists(NAMES, max_size=3, unique=True))
def test_required_splits_required_and_forbidden(required: list[str], forbidden: list[str]
                                                ) -> None:
    text = ",".join(required + [f"!{f}" for f in forbidden])
    got_required, got_forbidden = params.parse_required(text, allow_forbidden=True,
                                                        allow_any=True)
    assert got_required == [frozenset([r]) for r in required]
    assert got_forbidden == frozenset(forbidden)


@given(st.lists(NAMES, min_size=1, max_size=5, unique=True))
def test_any_of_from_1_39_only(names: list[str]) -> None:
    text = "in:" + ",".join(names)
    assert params.parse_required(text, allow_forbidden=True, allow_any=True) == (
        [frozenset(names)], frozenset())
    with pytest.raises(BadRequest, match=r"only supported since microversion 1\.39"):
        params.parse_required(text, allow_forbidden=True, allow_any=False)


def test_forbidden_before_1_22_and_empty_names_are_refused() -> None:
    with pytest.raises(BadRequest, match=r"HW_CPU_X86_VMX,CUSTOM_MAGIC"):
        params.parse_required("A,!B", allow_forbidden=False, allow_any=False)
    for text in ("A,,B", "!", "in:A,", "in:A,!B"):
        with pytest.raises(BadRequest):
            params.parse_required(text, allow_forbidden=True, allow_any=True)


def test_only_the_last_required_counts_before_1_39() -> None:
    values = ["A", "B,!C"]
    assert params.parse_required_params(values, allow_forbidden=True, allow_any=False) == (
        [frozenset(["B"])], frozenset(["C"]))
    assert params.parse_required_params(values, allow_forbidden=True, allow_any=True) == (
        [frozenset(["A"]), frozenset(["B"])], frozenset(["C"]))


@given(st.lists(UUIDS, min_size=1, max_size=4, unique=True), st.booleans())
def test_member_of_forms(aggregates: list[str], negative: bool) -> None:
    prefix = "!in:" if negative else "in:"
    required, forbidden = params.parse_member_of(prefix + ",".join(aggregates))
    assert (forbidden if negative else required) == frozenset(aggregates)
    assert not (required if negative else forbidden)
    single = aggregates[0]
    assert params.parse_member_of(single) == (frozenset([single]), frozenset())
    assert params.parse_member_of("!" + single) == (frozenset(), frozenset([single]))


def test_member_of_needs_uuids_and_in_for_lists() -> None:
    with pytest.raises(BadRequest, match="valid UUID"):
        params.parse_member_of("in:not-a-uuid")
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    with pytest.raises(BadRequest, match="must be prefixed"):
        params.parse_member_of(f"{a},{b}")
    with pytest.raises(BadRequest, match=r"Multiple member_of1 parameters"):
        params.parse_member_of_params([a, b], "1", allow_multiple=False, allow_forbidden=True)
    with pytest.raises(BadRequest, match="Forbidden member_of parameters"):
        params.parse_member_of_params(["!" + a], "", allow_multiple=True, allow_forbidden=False)


@given(st.uuids())
def test_uuid_like_accepts_every_spelling(value: uuid.UUID) -> None:
    for spelling in (str(value), str(value).upper(), value.hex, "{" + str(value) + "}",
                     f"urn:uuid:{value}"):
        assert params.is_uuid_like(spelling)
    assert not params.is_uuid_like(str(value)[:-1])


@given(st.integers(0, 39))
def test_supported_versions_parse(minor: int) -> None:
    assert microversion.parse(f"1.{minor}") == (1, minor)


@given(st.text(max_size=10))
def test_version_parser_never_crashes(text: str) -> None:
    try:
        version = microversion.parse(text)
    except microversion.MicroversionError as exc:
        assert exc.status in (400, 406)
    else:
        assert version in microversion.VERSIONS


@pytest.mark.parametrize("text", ["1.٣", "\u0661.2", "1.³", "+1.2", "1.+2", "1. 2"])
def test_versions_are_ascii_digits_only(text: str) -> None:
    """int() reads these as numbers; as a version they are malformed, a 400."""
    with pytest.raises(microversion.MicroversionError) as raised:
        microversion.parse(text)
    assert raised.value.status == 400
