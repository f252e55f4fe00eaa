"""The late check every driver shares: the device models an image asks for, read from
the vocabulary, and the one a host reported unsupported refused by name."""

from __future__ import annotations

import pytest

from moorage.virt.driver import UnsupportedHardware, check_reported_support, device_model_traits
from moorage.virt.report import Source, TraitReport
from tests.unit.virt.builders import guest

NODE = "n1"


@pytest.mark.parametrize(("properties", "expected"), [
    ({}, {}),
    ({"hw_vif_model": "e1000"}, {"COMPUTE_NET_VIF_MODEL_E1000": "hw_vif_model=e1000"}),
    ({"hw_video_model": "qxl", "hw_disk_bus": "sata"},
     {"COMPUTE_GRAPHICS_MODEL_QXL": "hw_video_model=qxl",
      "COMPUTE_STORAGE_BUS_SATA": "hw_disk_bus=sata"}),
    # one trait named twice: the first property in the vocabulary's order
    ({"hw_disk_bus": "ide", "hw_cdrom_bus": "ide"},
     {"COMPUTE_STORAGE_BUS_IDE": "hw_cdrom_bus=ide"}),
    ({"hw_viommu_model": "intel", "hw_sound_model": "ich9"},
     {"COMPUTE_VIOMMU_MODEL_INTEL": "hw_viommu_model=intel",
      "COMPUTE_SOUND_MODEL_ICH9": "hw_sound_model=ich9"}),
    # the firmware, TPM and secure boot properties name their traits too
    ({"hw_firmware_type": "uefi", "os_secure_boot": "required", "hw_tpm_version": "2.0",
      "hw_tpm_model": "tpm-crb"},
     {"COMPUTE_FIRMWARE_UEFI": "hw_firmware_type=uefi",
      "COMPUTE_SECURITY_UEFI_SECURE_BOOT": "os_secure_boot=required",
      "COMPUTE_SECURITY_TPM_2_0": "hw_tpm_version=2.0",
      "COMPUTE_SECURITY_TPM_CRB": "hw_tpm_model=tpm-crb"}),
    # an architecture is no device: the drivers check it against their own
    ({"hw_architecture": "x86_64", "os_secure_boot": "optional"}, {}),
])
def test_device_model_traits(properties: dict[str, str], expected: dict[str, str]) -> None:
    assert device_model_traits(guest(NODE, "raw", properties).image) == expected


def test_a_device_model_reported_unsupported_is_refused_by_name() -> None:
    reports = [TraitReport("COMPUTE_IMAGE_TYPE_RAW", True, Source.DRIVER_TABLE, ""),
               TraitReport("COMPUTE_NET_VIF_MODEL_E1000", False, Source.HYPERVISOR, "no")]
    check_reported_support(guest(NODE, "raw", {"hw_vif_model": "virtio"}), reports)
    with pytest.raises(UnsupportedHardware, match="hw_vif_model=e1000"):
        check_reported_support(guest(NODE, "raw", {"hw_vif_model": "e1000"}), reports)
