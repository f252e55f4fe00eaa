"""The tables of traits that switch guest features on, against os-traits and libvirt.

Every HW_CPU_X86_* trait os-traits defines is either a CPU feature (with the name
libvirt's CPU map gives it) or explicitly not one, so a trait added to os-traits
fails here until someone decides; every TPM and firmware trait is handled.
"""

from __future__ import annotations

from pathlib import Path

import os_traits as ot
import pytest
from lxml import etree

from moorage.model import vocabulary
from moorage.virt import switches as features
from moorage.virt.libvirt import switches, tables

# libvirt's x86 CPU feature names (libvirt0 ships it with the RNG schemas).
CPU_MAP = Path("/usr/share/libvirt/cpu_map/x86_features.xml")


def libvirt_cpu_features() -> set[str]:
    if not CPU_MAP.exists():
        pytest.fail(f"{CPU_MAP} is missing: libvirt0 is not installed (tools/libvirt.sh)")
    return {str(name) for name in etree.parse(str(CPU_MAP)).xpath("//feature/@name")}


def test_every_x86_cpu_trait_is_decided() -> None:
    every = set(ot.get_traits("HW_CPU_X86_"))
    decided = set(switches.CPU_FEATURES) | switches.NOT_CPU_FEATURES
    assert every - decided == set(), "os-traits has x86 CPU traits no table decides"
    assert set(switches.CPU_FEATURES).isdisjoint(switches.NOT_CPU_FEATURES)


@pytest.mark.parametrize("trait", sorted(switches.CPU_FEATURES))
def test_cpu_traits_are_os_traits_and_libvirt_features(trait: str) -> None:
    assert vocabulary.checked(trait) == trait
    assert switches.CPU_FEATURES[trait] in libvirt_cpu_features()


@pytest.mark.parametrize(("trait", "feature"), [
    (ot.HW_CPU_X86_AVX2, "avx2"),
    (ot.HW_CPU_X86_SSE42, "sse4.2"),
    (ot.HW_CPU_X86_SSE41, "sse4.1"),
    (ot.HW_CPU_X86_SSE3, "pni"),
    (ot.HW_CPU_X86_AESNI, "aes"),
    (ot.HW_CPU_X86_CLMUL, "pclmuldq"),
    (ot.HW_CPU_X86_FMA3, "fma"),
    (ot.HW_CPU_X86_INTEL_VMX, "vmx"),
    (ot.HW_CPU_X86_AMD_SVM, "svm"),
    (ot.HW_CPU_X86_AVX512VPOPCNTDQ, "avx512-vpopcntdq"),
])
def test_cpu_feature_names(trait: str, feature: str) -> None:
    assert switches.CPU_FEATURES[trait] == feature


def test_every_tpm_trait_asks_for_a_tpm() -> None:
    every = set(ot.get_traits("COMPUTE_SECURITY_TPM_"))
    assert set(features.tpm_traits(every)) == every
    # the versions and models are the ones discovery reports, the same names
    assert dict(features.TPM_VERSIONS) == {t: v for v, t in tables.TPM_VERSION_TRAITS.items()}
    assert dict(features.TPM_MODELS) == {t: m for m, t in tables.TPM_MODEL_TRAITS.items()}


def test_every_firmware_trait_selects_a_firmware() -> None:
    assert set(features.FIRMWARE) == set(ot.get_traits("COMPUTE_FIRMWARE_"))
    assert dict(features.FIRMWARE) == {t: f for f, t in tables.FIRMWARE_TRAITS.items()}
    assert vocabulary.checked(features.SECURE_BOOT) == ot.COMPUTE_SECURITY_UEFI_SECURE_BOOT


def test_switch_names_are_all_os_traits() -> None:
    for name in [*switches.NOT_CPU_FEATURES, *features.TPM_VERSIONS, *features.TPM_MODELS,
                 *features.TPM_SECRET_SECURITY, *features.FIRMWARE]:
        assert vocabulary.checked(name) == name


def test_unrelated_traits_switch_nothing() -> None:
    requested = {ot.COMPUTE_STORAGE_BUS_SATA, ot.HW_CPU_X86_AMD_SEV, "CUSTOM_GOLD",
                 ot.COMPUTE_GRAPHICS_MODEL_QXL}
    assert switches.cpu_features(requested) == {}
    assert features.tpm_traits(requested) == []
    assert features.firmware_traits(requested) == {}
