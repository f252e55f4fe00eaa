"""Flavor and image to the GET /allocation_candidates query, upstream's semantics."""

from __future__ import annotations

import pytest

from moorage.model.flavor import Flavor
from moorage.scheduler.resource_request import (
    flavor_groups,
    flavor_resources,
    resource_request,
)
from tests.unit.scheduler.fakes import spec


def params(**kwargs: object) -> dict[str, list[str]]:
    """The query parameters of the spec ``kwargs`` describe, by name."""
    request = resource_request(spec(**kwargs))  # type: ignore[arg-type]
    out: dict[str, list[str]] = {}
    for key, value in request.query_params():
        out.setdefault(key, []).append(value)
    return out


def test_flavor_gives_vcpu_memory_and_disk() -> None:
    assert params() == {"resources": ["DISK_GB:1,MEMORY_MB:512,VCPU:2"]}


@pytest.mark.parametrize(("flavor", "is_bfv", "expected"), [
    (Flavor("f", 1, 64, root_gb=10), False, {"VCPU": 1, "MEMORY_MB": 64, "DISK_GB": 10}),
    (Flavor("f", 1, 64, root_gb=10), True, {"VCPU": 1, "MEMORY_MB": 64, "DISK_GB": 0}),
    (Flavor("f", 1, 64, root_gb=10, ephemeral_gb=5, swap_mb=1025), True,
     {"VCPU": 1, "MEMORY_MB": 64, "DISK_GB": 7}),
    (Flavor("f", 1, 64, root_gb=0), False, {"VCPU": 1, "MEMORY_MB": 64, "DISK_GB": 0}),
])
def test_flavor_resources(flavor: Flavor, is_bfv: bool, expected: dict[str, int]) -> None:
    assert flavor_resources(flavor, is_bfv=is_bfv) == expected


def test_zero_root_disk_asks_no_disk() -> None:
    request = resource_request(spec(Flavor("f", 1, 64, root_gb=0)))
    assert "DISK_GB" not in request.unnumbered.resources


def test_volume_backed_server_asks_no_root_disk() -> None:
    request = resource_request(spec(Flavor("f", 1, 64, root_gb=20), is_bfv=True))
    assert request.unnumbered.resources == {"VCPU": 1, "MEMORY_MB": 64}
    with_ephemeral = resource_request(spec(Flavor("f", 1, 64, root_gb=20, ephemeral_gb=3),
                                           is_bfv=True))
    assert with_ephemeral.unnumbered.resources["DISK_GB"] == 3


@pytest.mark.parametrize(("extra_specs", "expected"), [
    # override a flavor amount
    ({"resources:VCPU": "4"}, {"resources": ["DISK_GB:1,MEMORY_MB:512,VCPU:4"]}),
    # 0 removes it
    ({"resources:DISK_GB": "0"}, {"resources": ["MEMORY_MB:512,VCPU:2"]}),
    # add a custom class
    ({"resources:CUSTOM_GPU": "1"},
     {"resources": ["CUSTOM_GPU:1,DISK_GB:1,MEMORY_MB:512,VCPU:2"]}),
    # a class named in a numbered group is not asked again in the unnumbered one
    ({"resources1:VCPU": "2", "group_policy": "none"},
     {"resources": ["DISK_GB:1,MEMORY_MB:512"], "resources1": ["VCPU:2"],
      "group_policy": ["none"]}),
    # PCPU instead of VCPU
    ({"resources:PCPU": "2"}, {"resources": ["DISK_GB:1,MEMORY_MB:512,PCPU:2"]}),
    # traits, unnumbered and numbered, required and forbidden
    ({"trait:HW_CPU_X86_AVX2": "required", "trait:CUSTOM_SLOW": "forbidden"},
     {"resources": ["DISK_GB:1,MEMORY_MB:512,VCPU:2"],
      "required": ["HW_CPU_X86_AVX2,!CUSTOM_SLOW"]}),
    ({"resources_gpu:CUSTOM_GPU": "1", "trait_gpu:CUSTOM_FAST": "required",
      "group_policy": "isolate"},
     {"resources": ["DISK_GB:1,MEMORY_MB:512,VCPU:2"], "resources_gpu": ["CUSTOM_GPU:1"],
      "required_gpu": ["CUSTOM_FAST"], "group_policy": ["isolate"]}),
    # not placement's: ignored
    ({"hw:cpu_policy": "shared", "capabilities:cpu_info": "x"},
     {"resources": ["DISK_GB:1,MEMORY_MB:512,VCPU:2"]}),
])
def test_extra_specs(extra_specs: dict[str, str], expected: dict[str, list[str]]) -> None:
    assert params(extra_specs=extra_specs) == expected


@pytest.mark.parametrize(("key", "value", "note"), [
    ("resources:VCPU", "two", "must be an integer"),
    ("resources:VCPU", "-1", "must be an integer"),
    ("resources:vcpu", "1", "not a standard or CUSTOM_* resource class"),
    ("trait:HW_CPU_X86_AVX2", "preferred", "allowed: required, forbidden"),
    ("group_policy", "sometimes", "allowed: none, isolate"),
])
def test_malformed_extra_specs_become_notes(key: str, value: str, note: str) -> None:
    parsed = flavor_groups({key: value})
    assert len(parsed.notes) == 1
    assert key in parsed.notes[0] and note in parsed.notes[0]


def test_malformed_amount_keeps_the_flavor_value() -> None:
    request = resource_request(spec(extra_specs={"resources:VCPU": "lots"}))
    assert request.unnumbered.resources["VCPU"] == 2
    assert request.notes


def test_image_traits_union_with_flavor_traits() -> None:
    request = resource_request(spec(
        extra_specs={"trait:CUSTOM_A": "required", "trait:CUSTOM_B": "required"},
        properties={"trait:CUSTOM_B": "required", "trait:CUSTOM_C": "required"}))
    assert request.unnumbered.required == {"CUSTOM_A", "CUSTOM_B", "CUSTOM_C"}
    assert ("required", "CUSTOM_A,CUSTOM_B,CUSTOM_C") in request.query_params()


def test_image_forbidden_and_suffixed_traits_are_ignored() -> None:
    request = resource_request(spec(properties={"trait:CUSTOM_X": "forbidden",
                                                "trait1:CUSTOM_Y": "required"}))
    assert not request.unnumbered.required and not request.unnumbered.forbidden


def test_request_filter_output_goes_to_root_and_aggregates() -> None:
    s = spec()
    s.root_required.update({"COMPUTE_NET_VIF_MODEL_E1000", "COMPUTE_IMAGE_TYPE_QCOW2"})
    s.root_forbidden.add("COMPUTE_STATUS_DISABLED")
    s.member_of.append(frozenset({"agg-b", "agg-a"}))
    s.forbidden_aggregates.update({"agg-x"})
    query = dict(resource_request(s, limit=50).query_params())
    assert query["root_required"] == (
        "COMPUTE_IMAGE_TYPE_QCOW2,COMPUTE_NET_VIF_MODEL_E1000,!COMPUTE_STATUS_DISABLED")
    assert query["limit"] == "50"
    member_of = [v for k, v in resource_request(s).query_params() if k == "member_of"]
    assert member_of == ["!in:agg-x", "in:agg-a,agg-b"]


def test_several_numbered_groups_without_policy_is_noted() -> None:
    request = resource_request(spec(extra_specs={"resources1:CUSTOM_A": "1",
                                                 "resources2:CUSTOM_B": "1"}))
    assert request.group_policy is None
    assert any("group_policy" in note for note in request.notes)


def test_group_emptied_by_zero_is_dropped() -> None:
    request = resource_request(spec(extra_specs={"resources1:CUSTOM_A": "0"}))
    assert "1" not in request.groups


def test_all_required_traits_spans_groups_and_root() -> None:
    s = spec(extra_specs={"trait1:CUSTOM_A": "required", "resources1:CUSTOM_R": "1",
                          "trait:CUSTOM_B": "required"})
    s.root_required.add("CUSTOM_C")
    assert resource_request(s).all_required_traits() == {"CUSTOM_A", "CUSTOM_B", "CUSTOM_C"}
