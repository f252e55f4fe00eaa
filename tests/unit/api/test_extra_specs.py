"""Extra spec validation: one table of cases, one assertion each."""

from __future__ import annotations

import pytest

from moorage.api.extra_specs import InvalidExtraSpec, validate_extra_spec

VALID = [
    ("trait:HW_CPU_X86_AVX2", "required"),
    ("trait:COMPUTE_STATUS_DISABLED", "forbidden"),
    ("trait1:CUSTOM_GOLD", "required"),
    ("trait_group-a:CUSTOM_GOLD_2", "forbidden"),
    ("resources:VCPU", "0"),
    ("resources1:CUSTOM_FPGA", "2"),
    ("resources:MEMORY_MB", "1024"),
    ("group_policy", "isolate"),
    ("group_policy", "none"),
    ("hw:cpu_policy", "dedicated"),
    ("hw:mem_page_size", "2MB"),
    ("hw:numa_nodes", "2"),
    ("hw:vif_multiqueue_enabled", "true"),
    ("hw:something_new", "anything"),
    ("aggregate_instance_extra_specs:ssd", "true"),
    ("quota:disk_read_bytes_sec", "10240"),
]

INVALID = [
    ("trait:HW_CPU_X86_AVX2", "yes", "allowed: required, forbidden"),
    ("trait:NOT_A_TRAIT", "required", "'NOT_A_TRAIT' is not a trait"),
    ("trait:custom_lower", "required", "is not a trait"),
    ("resources:VCPU", "-1", "non-negative integer"),
    ("resources:VCPU", "two", "non-negative integer"),
    ("resources:NOT_A_CLASS", "1", "'NOT_A_CLASS' is not a resource class"),
    ("group_policy", "strict", "allowed: none, isolate"),
    ("hw:cpu_policy", "exclusive", "allowed: shared, dedicated, mixed"),
    ("hw:numa_nodes", "0", "positive integer"),
    ("hw:mem_page_size", "huge", "allowed: small, large, any"),
]


@pytest.mark.parametrize(("key", "value"), VALID)
def test_valid_extra_specs_are_kept(key: str, value: str) -> None:
    assert validate_extra_spec(key, value) == value


@pytest.mark.parametrize(("key", "value", "message"), INVALID)
def test_invalid_extra_specs_name_key_and_allowed_values(key: str, value: str,
                                                         message: str) -> None:
    with pytest.raises(InvalidExtraSpec) as caught:
        validate_extra_spec(key, value)
    assert key in str(caught.value)
    assert message in str(caught.value)


def test_numbers_become_strings() -> None:
    assert validate_extra_spec("resources:VCPU", 2) == "2"


def test_non_string_values_are_refused() -> None:
    with pytest.raises(InvalidExtraSpec, match="must be a string"):
        validate_extra_spec("hw:cpu_policy", {"a": 1})
