"""The one vocabulary: its readers, table by table, and the rule that keeps it at the
bottom of the house (it imports nothing of Moorage but ``model``)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from moorage.conf.libvirt import VIRT_TYPES
from moorage.model import vocabulary
from moorage.model.image import Image, ImageProperties
from moorage.model.vocabulary import Prefilter

MODEL = Path(vocabulary.__file__).parent


def test_model_imports_nothing_of_moorage_but_model() -> None:
    for path in sorted(MODEL.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith("moorage") or name.startswith("moorage.model"), (
                    f"{path.name} imports {name}")


# -- the image property table --------------------------------------------------------------
@pytest.mark.parametrize(("prop", "prefix"), [
    ("disk_format", "COMPUTE_IMAGE_TYPE"),
    ("hw_cdrom_bus", "COMPUTE_STORAGE_BUS"),
    ("hw_disk_bus", "COMPUTE_STORAGE_BUS"),
    ("hw_video_model", "COMPUTE_GRAPHICS_MODEL"),
    ("hw_vif_model", "COMPUTE_NET_VIF_MODEL"),
    ("hw_architecture", "HW_ARCH"),
    ("hw_emulation_architecture", "COMPUTE_ARCH"),
    ("hw_viommu_model", "COMPUTE_VIOMMU_MODEL"),  # os-traits' real prefix
    ("hw_sound_model", "COMPUTE_SOUND_MODEL"),
])
def test_property_family(prop: str, prefix: str) -> None:
    named = vocabulary.property_family(prop)
    assert named.prefix == prefix
    assert vocabulary.family(prefix), "an os-traits family"


@pytest.mark.parametrize("prop", ["hw_firmware_type", "hw_tpm_model", "hw_machine_type",
                                  "trait:CUSTOM_X"])
def test_a_property_that_names_no_family(prop: str) -> None:
    with pytest.raises(KeyError):
        vocabulary.property_family(prop)


def test_every_property_is_one_an_image_has() -> None:
    fields = {f.name for f in dataclasses.fields(ImageProperties)}
    for named in vocabulary.PROPERTY_FAMILIES:
        assert named.name in fields or named.name in {f.name for f in dataclasses.fields(Image)}
        assert named.values, named.name


@pytest.mark.parametrize(("prefilter", "properties"), [
    (Prefilter.IMAGE_TYPE, ("disk_format",)),
    # upstream's order of the image metadata prefilter
    (Prefilter.IMAGE_METADATA, ("hw_cdrom_bus", "hw_disk_bus", "hw_video_model",
                                "hw_vif_model", "hw_architecture",
                                "hw_emulation_architecture", "hw_viommu_model")),
])
def test_prefiltered(prefilter: Prefilter, properties: tuple[str, ...]) -> None:
    assert tuple(named.name for named in vocabulary.prefiltered(prefilter)) == properties


def test_device_models_every_driver_refuses() -> None:
    refused = {named.name for named in vocabulary.PROPERTY_FAMILIES if named.device_model}
    assert refused == {"hw_vif_model", "hw_disk_bus", "hw_cdrom_bus", "hw_video_model",
                       "hw_sound_model", "hw_viommu_model"}


@pytest.mark.parametrize(("prop", "value", "trait"), [
    ("hw_vif_model", "spapr-vlan", "COMPUTE_NET_VIF_MODEL_SPAPR_VLAN"),
    ("hw_disk_bus", "sata", "COMPUTE_STORAGE_BUS_SATA"),
    ("disk_format", "qcow2", "COMPUTE_IMAGE_TYPE_QCOW2"),
    ("hw_architecture", "armv7l", "HW_ARCH_ARMV7L"),  # unchecked: os-traits lacks it
])
def test_a_value_names_its_trait(prop: str, value: str, trait: str) -> None:
    assert vocabulary.property_family(prop).trait(value) == trait


@pytest.mark.parametrize(("trait", "value"), [
    ("COMPUTE_NET_VIF_MODEL_SPAPR_VLAN", "spapr-vlan"),  # the property's spelling
    ("COMPUTE_NET_VIF_MODEL_NE2K_PCI", "ne2k_pci"),
    ("COMPUTE_STORAGE_BUS_IDE", "ide"),
    ("COMPUTE_IMAGE_TYPE_QCOW2", "qcow2"),
    ("COMPUTE_SOUND_MODEL_ICH9", "ich9"),
    ("HW_ARCH_ARMV7", None),  # os-traits names it, hw_architecture does not
    ("COMPUTE_SECURITY_TPM_2_0", None),
    ("CUSTOM_GPU", None),
])
def test_naming_value(trait: str, value: str | None) -> None:
    assert vocabulary.naming_value(trait) == value


@pytest.mark.parametrize(("prefix", "named"), [
    ("COMPUTE_NET_VIF_MODEL", True),
    ("COMPUTE_IMAGE_TYPE", True),
    ("COMPUTE_FIRMWARE", False),
    ("HW_CPU", False),
])
def test_named_by_property(prefix: str, named: bool) -> None:
    assert vocabulary.named_by_property(prefix) is named


# -- trait names ---------------------------------------------------------------------------
@pytest.mark.parametrize(("prefix", "value", "trait"), [
    ("COMPUTE_NET_VIF_MODEL", "spapr-vlan", "COMPUTE_NET_VIF_MODEL_SPAPR_VLAN"),
    ("COMPUTE_STORAGE_BUS", "virtio", "COMPUTE_STORAGE_BUS_VIRTIO"),
])
def test_device_trait(prefix: str, value: str, trait: str) -> None:
    assert vocabulary.device_trait(prefix, value) == trait


def test_device_trait_os_traits_lacks_is_an_error() -> None:
    with pytest.raises(vocabulary.UnknownTrait, match="HW_ARCH_ARMV7L"):
        vocabulary.device_trait(vocabulary.HW_ARCH, "armv7l")


# -- custom names --------------------------------------------------------------------------
LONGEST = "CUSTOM_" + "A" * 248  # 255 characters, placement's limit


@pytest.mark.parametrize(("name", "custom", "trait_name", "reportable"), [
    ("CUSTOM_RAID5", True, True, True),
    ("CUSTOM_raid", True, False, False),
    ("CUSTOM_", True, False, False),
    (LONGEST, True, True, True),
    (LONGEST + "A", True, True, False),  # a name, but longer than placement keeps
    ("HW_CPU_X86_AVX2", False, True, True),
    ("HW_CPU_X86_NOPE", False, False, False),
    ("custom_raid", False, False, False),
])
def test_custom_names(name: str, custom: bool, trait_name: bool, reportable: bool) -> None:
    assert vocabulary.is_custom(name) is custom
    assert vocabulary.is_trait_name(name) is trait_name
    if reportable:
        assert vocabulary.reportable(name) == name
    else:
        with pytest.raises(vocabulary.UnknownTrait):
            vocabulary.reportable(name)


@pytest.mark.parametrize(("name", "valid"), [
    ("VCPU", True), ("DISK_GB", True), ("CUSTOM_BAREMETAL_GOLD", True),
    ("CUSTOM_gold", False), ("GOLD", False),
])
def test_resource_class_names(name: str, valid: bool) -> None:
    assert vocabulary.is_resource_class_name(name) is valid


def test_qemu_virt_types_are_libvirt_options() -> None:
    assert set(vocabulary.QEMU_VIRT_TYPES) == {"kvm", "qemu"} <= set(VIRT_TYPES)
