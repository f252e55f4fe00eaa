"""Every name in every libvirt table is an os-traits name, and every capability key the
driver declares is one of upstream's."""

from __future__ import annotations

import os_traits as ot
import pytest

from moorage.model import image, vocabulary
from moorage.virt.capabilities import CAPABILITY_TRAITS, NON_TRAIT_CAPABILITIES
from moorage.virt.libvirt import discovery, models, tables

# (trait prefix, every value a table or universe holds)
DEVICE_TABLES = {
    "DEVICE_BUSES": (vocabulary.STORAGE_BUS,
                     {bus for buses in tables.DEVICE_BUSES.values() for bus in buses}),
    "VIF_MODELS": (vocabulary.VIF_MODEL,
                   {model for nics in tables.VIF_MODELS.values() for model in nics}),
    "NIC_MODELS": (vocabulary.VIF_MODEL, set(models.NIC_MODELS)),
    "SOUND_DEVICES": (vocabulary.SOUND_MODEL, set(models.SOUND_MODELS)),
    "VIOMMU_DEVICES": (vocabulary.VIOMMU_MODEL, {*models.VIOMMU_MODELS, "auto"}),
    "VIDEO_MODELS": (vocabulary.GRAPHICS_MODEL, set(image.VIDEO_MODELS)),
    "VIOMMU_MODELS": (vocabulary.VIOMMU_MODEL, set(image.VIOMMU_MODELS)),
    "SOUND_MODELS": (vocabulary.SOUND_MODEL, set(image.SOUND_MODELS)),
}


@pytest.mark.parametrize("table", sorted(DEVICE_TABLES))
def test_device_tables_name_os_traits(table: str) -> None:
    prefix, values = DEVICE_TABLES[table]
    for value in values:
        vocabulary.device_trait(prefix, value)  # UnknownTrait if os-traits lacks it


def test_every_family_name_is_decided() -> None:
    """Every os-traits name of every device family the driver owns has a decision: a
    new os-traits name fails here until the driver decides it."""
    for prefix, table in [(vocabulary.STORAGE_BUS, "DEVICE_BUSES"),
                          (vocabulary.GRAPHICS_MODEL, "VIDEO_MODELS"),
                          (vocabulary.VIF_MODEL, "NIC_MODELS"),
                          (vocabulary.SOUND_MODEL, "SOUND_DEVICES"),
                          (vocabulary.VIOMMU_MODEL, "VIOMMU_DEVICES")]:
        names = {vocabulary.trait_name(prefix, v) for v in DEVICE_TABLES[table][1]}
        assert names == set(ot.get_traits(prefix + "_")), table
    # and the image properties take exactly the models the driver decides
    assert set(image.VIF_MODELS) == set(models.NIC_MODELS)
    assert set(image.SOUND_MODELS) == set(models.SOUND_MODELS)
    assert set(image.VIOMMU_MODELS) == {*models.VIOMMU_MODELS, "auto"}


def test_named_traits_are_os_traits() -> None:
    named = [*tables.TPM_MODEL_TRAITS.values(), *tables.TPM_VERSION_TRAITS.values(),
             *tables.FIRMWARE_TRAITS.values()]
    assert [vocabulary.checked(name) for name in named] == named
    assert set(tables.TPM_MODEL_TRAITS) == set(image.TPM_MODELS)
    assert set(tables.TPM_VERSION_TRAITS) == set(image.TPM_VERSIONS)


def test_every_virt_type_has_its_tables() -> None:
    from moorage.conf.libvirt import VIRT_TYPES

    assert set(VIRT_TYPES) <= set(tables.DEVICE_BUSES)
    # QEMU's NIC models come from its device list; the others' from the table
    assert set(VIRT_TYPES) - set(vocabulary.QEMU_VIRT_TYPES) == set(tables.VIF_MODELS)


def test_capability_keys_are_upstreams() -> None:
    keys = set(discovery.static_capabilities("kvm", "default", True))
    keys |= set(tables.HOST_CAPABILITY_GATES) | {"supports_secure_boot", "supports_vtpm"}
    assert keys - set(CAPABILITY_TRAITS) - NON_TRAIT_CAPABILITIES == set()
    # libvirt never speaks of the image types it cannot read
    assert not {f"supports_image_type_{f}" for f in ("vdi", "vhd", "vhdx", "vmdk")} & keys


def test_a_drifting_table_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vocabulary, "KNOWN", vocabulary.KNOWN - {ot.COMPUTE_NET_VIF_MODEL_LAN9118})
    with pytest.raises(vocabulary.UnknownTrait, match="COMPUTE_NET_VIF_MODEL_LAN9118"):
        test_device_tables_name_os_traits("NIC_MODELS")
