"""Every table of trait names a driver reports from is in step with os-traits.

A name os-traits lacks must fail here, not be dropped or reported: the last
test shows that a table drifting from os-traits is caught.
"""

from __future__ import annotations

from collections.abc import Iterable

import os_traits
import pytest

from moorage.model import vocabulary
from moorage.model.image import DISK_BUSES, SCSI_MODELS, VIF_MODELS
from moorage.virt.capabilities import (
    CAPABILITY_TRAITS,
    IMAGE_TYPES,
    NON_TRAIT_CAPABILITIES,
    UnknownCapability,
    capability_reports,
    image_type_key,
)
from moorage.virt.fake import UPSTREAM_CAPABILITIES, FakeDriver
from moorage.virt.ironic import driver as ironic
from moorage.virt.ironic.simulator import IronicSimulator, SimulatedNode
from moorage.virt.report import Source
from moorage.virt.vmware import driver as vmware
from moorage.virt.vmware.simulator import DISK_CONTROLLERS, NIC_DEVICES, VCenterSimulator
from tests.unit.virt.builders import config

OS_TRAITS = frozenset(os_traits.get_traits())
CAPABILITY_TABLES = {
    "fake": UPSTREAM_CAPABILITIES,
    "vmware": vmware.CAPABILITIES,
    "ironic": ironic.CAPABILITIES,
}


def unknown(names: Iterable[str]) -> set[str]:
    return {n for n in names if n not in OS_TRAITS and not vocabulary.is_custom(n)}


def test_the_shared_capability_table_names_only_os_traits() -> None:
    assert unknown(CAPABILITY_TRAITS.values()) == set()
    # every image type has its key, and no key stands for two traits
    assert {image_type_key(f) for f in IMAGE_TYPES} <= set(CAPABILITY_TRAITS)
    assert len(set(CAPABILITY_TRAITS.values())) == len(CAPABILITY_TRAITS)
    assert not NON_TRAIT_CAPABILITIES & set(CAPABILITY_TRAITS)


@pytest.mark.parametrize("driver", sorted(CAPABILITY_TABLES))
def test_driver_capability_tables_use_known_keys(driver: str) -> None:
    keys = set(CAPABILITY_TABLES[driver])
    assert keys - set(CAPABILITY_TRAITS) - NON_TRAIT_CAPABILITIES == set()


@pytest.mark.parametrize(("driver", "image_types"), [
    # upstream's per-driver image types (True ones)
    ("fake", {"raw"}),
    ("vmware", {"iso", "vmdk"}),
    ("ironic", {"qcow2", "raw", "ami"}),
])
def test_driver_image_types_are_upstreams(driver: str, image_types: set[str]) -> None:
    table = CAPABILITY_TABLES[driver]
    assert {f for f in IMAGE_TYPES if table.get(image_type_key(f))} == image_types


def test_vmware_device_tables_name_only_os_traits_and_image_vocabulary() -> None:
    # every vSphere NIC device maps to a hw_vif_model, every controller to a bus
    assert set(vmware.NIC_DEVICE_FOR_MODEL.values()) == set(NIC_DEVICES)
    assert set(vmware.NIC_DEVICE_FOR_MODEL) <= set(VIF_MODELS)
    assert set(vmware.CONTROLLER_BUS) == set(DISK_CONTROLLERS)
    assert {bus for bus, _ in vmware.CONTROLLER_BUS.values()} <= set(DISK_BUSES)
    assert {m for _, m in vmware.CONTROLLER_BUS.values() if m} <= set(SCSI_MODELS)
    # every NIC model and disk bus an image can ask for has its trait
    assert unknown(vocabulary.trait_name(vocabulary.VIF_MODEL, m) for m in VIF_MODELS) == set()
    assert unknown(vocabulary.trait_name(vocabulary.STORAGE_BUS, b) for b in DISK_BUSES) == set()


def all_reports() -> dict[str, list[str]]:
    """Every trait each driver reports on a node with everything switched on."""
    simulator = VCenterSimulator(disk_controllers=DISK_CONTROLLERS)
    vmware_driver = vmware.VMwareDriver(config(), simulator)
    ironic_driver = ironic.IronicDriver(config(), IronicSimulator([SimulatedNode(
        "1b0c6d1e-0000-4000-8000-000000000001", resource_class="gold",
        traits=frozenset({os_traits.HW_CPU_X86_AVX2}))]))
    fake_driver = FakeDriver(config(fake_driver__supported_image_types=list(IMAGE_TYPES),
                                    fake_driver__traits=[os_traits.COMPUTE_NET_VIF_MODEL_IGB]))
    return {
        driver.name: [r.trait for node in driver.nodes() for r in driver.trait_reports(node)]
        for driver in (fake_driver, vmware_driver, ironic_driver)
    }


@pytest.mark.parametrize("driver", ["fake", "vmware", "ironic"])
def test_every_reported_trait_is_in_os_traits(driver: str) -> None:
    reported = all_reports()[driver]
    assert reported
    assert unknown(reported) == set()


def test_a_table_drifting_from_os_traits_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    # As if os-traits no longer had VMXNET3: the VMware driver refuses to report
    # instead of dropping the name.
    monkeypatch.setattr(vocabulary, "KNOWN", vocabulary.KNOWN - {"COMPUTE_NET_VIF_MODEL_VMXNET3"})
    with pytest.raises(vocabulary.UnknownTrait, match="COMPUTE_NET_VIF_MODEL_VMXNET3"):
        all_reports()


def test_capability_reports_follow_the_table_and_the_exclusions_each_call() -> None:
    # Made once per table (an agent asks at every sync), yet each call answers for
    # the table and exclusion list it is given.
    table = {"supports_image_type_raw": True, "supports_image_type_vhd": False}
    raw = "COMPUTE_IMAGE_TYPE_RAW"

    def supported(excluded: tuple[str, ...] = ()) -> dict[str, bool]:
        return {r.trait: r.supported for r in capability_reports(table, excluded)}

    assert supported() == {raw: True, "COMPUTE_IMAGE_TYPE_VHD": False}
    assert supported((" RAW ",))[raw] is False
    assert [r.source for r in capability_reports(table, ["raw"]) if r.trait == raw] == [
        Source.CONFIGURATION]
    assert supported()[raw] is True
    table["supports_image_type_raw"] = False  # the same dict, changed
    assert supported()[raw] is False
    with pytest.raises(UnknownCapability, match="supports_teleport"):
        capability_reports({"supports_teleport": True})
