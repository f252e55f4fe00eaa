"""The trait ownership rules, as a table."""

from __future__ import annotations

import pytest

from moorage.compute.traits import COMPUTE_NODE, STATUS_DISABLED, desired_traits
from moorage.virt.report import Source, TraitReport

AVX2, SSE42, QCOW2 = "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42", "COMPUTE_IMAGE_TYPE_QCOW2"


def on(name: str) -> TraitReport:
    return TraitReport(name, True, Source.DRIVER_TABLE)


def off(name: str) -> TraitReport:
    return TraitReport(name, False, Source.DRIVER_TABLE)


@pytest.mark.parametrize(("current", "reports", "disabled", "expected"), [
    # supported traits are added, COMPUTE_NODE always
    (set(), [on(AVX2)], False, {AVX2, COMPUTE_NODE}),
    # unsupported traits are removed, even if an operator set them: the driver owns them
    ({AVX2, COMPUTE_NODE}, [off(AVX2)], False, {COMPUTE_NODE}),
    # traits the driver says nothing about are kept (operators' CUSTOM_* and others)
    ({"CUSTOM_GOLD", SSE42}, [on(AVX2)], False, {"CUSTOM_GOLD", SSE42, AVX2, COMPUTE_NODE}),
    # the disabled state adds or removes COMPUTE_STATUS_DISABLED
    ({COMPUTE_NODE}, [], True, {COMPUTE_NODE, STATUS_DISABLED}),
    ({COMPUTE_NODE, STATUS_DISABLED}, [], False, {COMPUTE_NODE}),
    # an excluded image type reported off next to the same type on: on wins
    (set(), [on(QCOW2), off(QCOW2)], False, {QCOW2, COMPUTE_NODE}),
])
def test_ownership_rules(current: set[str], reports: list[TraitReport], disabled: bool,
                         expected: set[str]) -> None:
    assert desired_traits(current, reports, disabled=disabled) == expected


def test_nested_providers_keep_status_and_get_no_compute_node() -> None:
    result = desired_traits({STATUS_DISABLED}, [on("HW_NIC_SRIOV")], compute_node=False,
                            disabled=None)
    assert result == {STATUS_DISABLED, "HW_NIC_SRIOV"}
