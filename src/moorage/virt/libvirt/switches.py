"""The CPU features a required trait switches on, for the libvirt driver.

A required ``HW_CPU_X86_AVX2`` gives the guest's CPU AVX2 (the decision recorded
in the HPET discussion: a required trait is the switch for the feature it
names). The other guest features every driver shares (models, TPM, firmware,
secure boot) are ``moorage.virt.switches``; traits in neither (storage buses,
``COMPUTE_*`` capabilities, custom traits) only constrain where the guest lands.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import os_traits

# HW_CPU_X86_<NAME> -> the CPU feature as libvirt and QEMU name it (libvirt's
# cpu_map/x86_features.xml). Most are the lower-cased suffix; these are not:
# SSE3 is "pni", SSE4.1/4.2 keep their dot, CLMUL is "pclmuldq", FMA3 is "fma",
# AESNI is "aes", SHA is "sha-ni", BMI is "bmi1", the AVX512 extensions that
# Intel named separately (GFNI, VAES, VPCLMULQDQ) drop the prefix, TSX is its
# restricted-transactional-memory half "rtm", and the vendor-prefixed traits
# drop the vendor (AMD_SVM is "svm", INTEL_VMX is "vmx").
CPU_FEATURES: Mapping[str, str] = {
    os_traits.HW_CPU_X86_3DNOW: "3dnow",
    os_traits.HW_CPU_X86_ABM: "abm",
    os_traits.HW_CPU_X86_AESNI: "aes",
    os_traits.HW_CPU_X86_AMD_IBPB: "ibpb",
    os_traits.HW_CPU_X86_AMD_NO_SSB: "amd-no-ssb",
    os_traits.HW_CPU_X86_AMD_SSBD: "amd-ssbd",
    os_traits.HW_CPU_X86_AMD_SVM: "svm",
    os_traits.HW_CPU_X86_AMD_VIRT_SSBD: "virt-ssbd",
    os_traits.HW_CPU_X86_AMXBF16: "amx-bf16",
    os_traits.HW_CPU_X86_AMXINT8: "amx-int8",
    os_traits.HW_CPU_X86_AMXTILE: "amx-tile",
    os_traits.HW_CPU_X86_AVX: "avx",
    os_traits.HW_CPU_X86_AVX2: "avx2",
    os_traits.HW_CPU_X86_AVX512BITALG: "avx512bitalg",
    os_traits.HW_CPU_X86_AVX512BW: "avx512bw",
    os_traits.HW_CPU_X86_AVX512CD: "avx512cd",
    os_traits.HW_CPU_X86_AVX512DQ: "avx512dq",
    os_traits.HW_CPU_X86_AVX512ER: "avx512er",
    os_traits.HW_CPU_X86_AVX512F: "avx512f",
    os_traits.HW_CPU_X86_AVX512GFNI: "gfni",
    os_traits.HW_CPU_X86_AVX512IFMA: "avx512ifma",
    os_traits.HW_CPU_X86_AVX512PF: "avx512pf",
    os_traits.HW_CPU_X86_AVX512VAES: "vaes",
    os_traits.HW_CPU_X86_AVX512VBMI: "avx512vbmi",
    os_traits.HW_CPU_X86_AVX512VBMI2: "avx512vbmi2",
    os_traits.HW_CPU_X86_AVX512VL: "avx512vl",
    os_traits.HW_CPU_X86_AVX512VNNI: "avx512vnni",
    os_traits.HW_CPU_X86_AVX512VPCLMULQDQ: "vpclmulqdq",
    os_traits.HW_CPU_X86_AVX512VPOPCNTDQ: "avx512-vpopcntdq",
    os_traits.HW_CPU_X86_BMI: "bmi1",
    os_traits.HW_CPU_X86_BMI2: "bmi2",
    os_traits.HW_CPU_X86_CLMUL: "pclmuldq",
    os_traits.HW_CPU_X86_F16C: "f16c",
    os_traits.HW_CPU_X86_FMA3: "fma",
    os_traits.HW_CPU_X86_FMA4: "fma4",
    os_traits.HW_CPU_X86_INTEL_MD_CLEAR: "md-clear",
    os_traits.HW_CPU_X86_INTEL_PCID: "pcid",
    os_traits.HW_CPU_X86_INTEL_SPEC_CTRL: "spec-ctrl",
    os_traits.HW_CPU_X86_INTEL_SSBD: "ssbd",
    os_traits.HW_CPU_X86_INTEL_VMX: "vmx",
    os_traits.HW_CPU_X86_MMX: "mmx",
    os_traits.HW_CPU_X86_MPX: "mpx",
    os_traits.HW_CPU_X86_PDPE1GB: "pdpe1gb",
    os_traits.HW_CPU_X86_SGX: "sgx",
    os_traits.HW_CPU_X86_SHA: "sha-ni",
    os_traits.HW_CPU_X86_SSE: "sse",
    os_traits.HW_CPU_X86_SSE2: "sse2",
    os_traits.HW_CPU_X86_SSE3: "pni",
    os_traits.HW_CPU_X86_SSE41: "sse4.1",
    os_traits.HW_CPU_X86_SSE42: "sse4.2",
    os_traits.HW_CPU_X86_SSE4A: "sse4a",
    os_traits.HW_CPU_X86_SSSE3: "ssse3",
    os_traits.HW_CPU_X86_STIBP: "stibp",
    os_traits.HW_CPU_X86_SVM: "svm",
    os_traits.HW_CPU_X86_TBM: "tbm",
    os_traits.HW_CPU_X86_TSX: "rtm",
    os_traits.HW_CPU_X86_VMX: "vmx",
    os_traits.HW_CPU_X86_XOP: "xop",
}

# HW_CPU_AARCH64_<NAME> -> libvirt's name. os-traits' AArch64 names are Linux hwcaps
# (fp, asimd, aes...); libvirt's ARM CPU map names few of them, SVE only.
AARCH64_CPU_FEATURES: Mapping[str, str] = {
    os_traits.HW_CPU_AARCH64_SVE: "sve",
}
# Which CPU family each trait is of, and the guest architectures of each family.
CPU_FAMILY_ARCHS: Mapping[str, frozenset[str]] = {
    "x86": frozenset({"i686", "x86_64"}),
    "AArch64": frozenset({"aarch64"}),
}
CPU_FEATURE_FAMILY: Mapping[str, str] = {
    **dict.fromkeys(CPU_FEATURES, "x86"),
    **dict.fromkeys(AARCH64_CPU_FEATURES, "AArch64"),
}
CPU_FEATURE_ARCHS: Mapping[str, frozenset[str]] = {
    trait: CPU_FAMILY_ARCHS[family] for trait, family in CPU_FEATURE_FAMILY.items()}
ALL_CPU_FEATURES: Mapping[str, str] = {**CPU_FEATURES, **AARCH64_CPU_FEATURES}


def cpu_feature_traits(arch: str) -> dict[str, str]:
    """Trait -> libvirt feature name of every CPU feature trait a guest of ``arch`` can
    be given (the family the driver reports for a host of that architecture)."""
    return {trait: name for trait, name in ALL_CPU_FEATURES.items()
            if arch in CPU_FEATURE_ARCHS[trait]}


# HW_CPU_X86_* traits that are no CPUID flag a guest CPU can be given: SEV and
# TDX are launch-security modes of the whole guest, ASF a platform management
# feature. Requiring them constrains the host only.
NOT_CPU_FEATURES = frozenset({
    os_traits.HW_CPU_X86_AMD_SEV,
    os_traits.HW_CPU_X86_AMD_SEV_ES,
    os_traits.HW_CPU_X86_AMD_SEV_SNP,
    os_traits.HW_CPU_X86_INTEL_TDX,
    os_traits.HW_CPU_X86_ASF,
})


def cpu_features(requested: Iterable[str]) -> dict[str, str]:
    """The requested traits that are CPU features, trait -> feature name, sorted."""
    return {trait: ALL_CPU_FEATURES[trait] for trait in sorted(requested)
            if trait in ALL_CPU_FEATURES}
