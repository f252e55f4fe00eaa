"""The benchmark workload: providers, their traits, and the queries timed against them.

It reproduces the upstream baseline in shared/reference/placement-api.md section 6:
N root compute nodes with VCPU=64, MEMORY_MB=262144, DISK_GB=2000 (max_unit=total,
allocation_ratio 1.0), each with COMPUTE_NODE plus each of 14 os-traits with p=0.5 from
a generator seeded with 42. Per provider the generator draws the uuid (128 bits) and then
one number per trait in ``TRAIT_POOL`` order; with that order the result counts match the
reference's (AVX2 and QCOW2: 269 of 1000 and 1260 of 5000 providers).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import os_resource_classes as orc
import os_traits

SEED = 42
MICROVERSION = "1.39"

# Every compute node has the same inventory: one request fits anywhere until it is full.
INVENTORY: dict[str, int] = {orc.VCPU: 64, orc.MEMORY_MB: 262144, orc.DISK_GB: 2000}

# The traits drawn with p=0.5, in draw order (the order fixes which provider gets which).
TRAIT_POOL: tuple[str, ...] = (
    os_traits.COMPUTE_NET_VIF_MODEL_E1000,
    os_traits.COMPUTE_NET_VIF_MODEL_VIRTIO,
    os_traits.COMPUTE_IMAGE_TYPE_RAW,
    os_traits.COMPUTE_IMAGE_TYPE_ISO,
    os_traits.COMPUTE_IMAGE_TYPE_QCOW2,
    os_traits.HW_CPU_X86_AVX,
    os_traits.HW_CPU_X86_AVX2,
    os_traits.HW_CPU_X86_SSE42,
    os_traits.HW_CPU_X86_AVX512F,
    os_traits.HW_CPU_X86_AESNI,
    os_traits.HW_NIC_SRIOV,
    os_traits.COMPUTE_VOLUME_MULTI_ATTACH,
    os_traits.STORAGE_DISK_SSD,
    os_traits.COMPUTE_TRUSTED_CERTS,
)
TRAIT_PROBABILITY = 0.5

# One flavor's worth of resources, as every scheduler query below asks for.
FLAVOR: dict[str, int] = {orc.VCPU: 2, orc.MEMORY_MB: 4096, orc.DISK_GB: 20}
RESOURCES = ",".join(f"{rc}:{amount}" for rc, amount in FLAVOR.items())
# A resize of that flavor, for the "replace an allocation" claim.
BIGGER_FLAVOR: dict[str, int] = {orc.VCPU: 4, orc.MEMORY_MB: 8192, orc.DISK_GB: 40}

AVX2 = os_traits.HW_CPU_X86_AVX2
QCOW2 = os_traits.COMPUTE_IMAGE_TYPE_QCOW2
SSD = os_traits.STORAGE_DISK_SSD
E1000 = os_traits.COMPUTE_NET_VIF_MODEL_E1000
VIRTIO = os_traits.COMPUTE_NET_VIF_MODEL_VIRTIO
FOUR_TRAITS: tuple[str, ...] = (AVX2, QCOW2, os_traits.HW_CPU_X86_AESNI, VIRTIO)


@dataclass(frozen=True)
class ProviderSpec:
    """One compute node to create."""

    uuid: str
    name: str
    traits: frozenset[str]


def providers(count: int) -> list[ProviderSpec]:
    """The first ``count`` compute nodes of the seeded workload (a prefix is stable)."""
    rng = random.Random(SEED)
    specs: list[ProviderSpec] = []
    for i in range(count):
        rp_uuid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        drawn = [t for t in TRAIT_POOL if rng.random() < TRAIT_PROBABILITY]
        specs.append(
            ProviderSpec(rp_uuid, f"cn-{i:06d}", frozenset((os_traits.COMPUTE_NODE, *drawn)))
        )
    return specs


def inventory_record(total: int) -> dict[str, int | float]:
    """One inventory as the API takes it and the database stores it."""
    return {
        "total": total,
        "reserved": 0,
        "min_unit": 1,
        "max_unit": total,
        "step_size": 1,
        "allocation_ratio": 1.0,
    }


@dataclass(frozen=True)
class ReadQuery:
    """A GET timed against the loaded providers, with the count it must return."""

    key: str
    label: str
    path: str
    # The list in the response body whose length is the result count.
    collection: str
    matches: Callable[[frozenset[str]], bool]
    limit: int | None = None

    def expected(self, specs: Sequence[ProviderSpec]) -> int:
        found = sum(1 for spec in specs if self.matches(spec.traits))
        return found if self.limit is None else min(found, self.limit)


def _all(*required: str) -> Callable[[frozenset[str]], bool]:
    return lambda traits: all(t in traits for t in required)


def _avx2_no_ssd_e1000_or_virtio(traits: frozenset[str]) -> bool:
    return AVX2 in traits and SSD not in traits and (E1000 in traits or VIRTIO in traits)


_AC = f"/allocation_candidates?resources={RESOURCES}"

READ_QUERIES: tuple[ReadQuery, ...] = (
    ReadQuery("ac_resources", "a/c resources only, no limit", _AC,
              "allocation_requests", _all()),
    ReadQuery("ac_resources_limit", "a/c resources, limit=1000", f"{_AC}&limit=1000",
              "allocation_requests", _all(), 1000),
    ReadQuery("ac_required", "a/c + required=AVX2,QCOW2", f"{_AC}&required={AVX2},{QCOW2}",
              "allocation_requests", _all(AVX2, QCOW2)),
    ReadQuery("ac_required_limit", "a/c + required=AVX2,QCOW2, limit=1000",
              f"{_AC}&required={AVX2},{QCOW2}&limit=1000",
              "allocation_requests", _all(AVX2, QCOW2), 1000),
    ReadQuery("ac_forbidden_any_of",
              "a/c + required=AVX2,!SSD & required=in:E1000,VIRTIO, limit=1000 (1.39)",
              f"{_AC}&required={AVX2},!{SSD}&required=in:{E1000},{VIRTIO}&limit=1000",
              "allocation_requests", _avx2_no_ssd_e1000_or_virtio, 1000),
    ReadQuery("ac_four_traits", "a/c + 4 required traits, limit=10",
              f"{_AC}&required={','.join(FOUR_TRAITS)}&limit=10",
              "allocation_requests", _all(*FOUR_TRAITS), 10),
    ReadQuery("rp_required", "GET /resource_providers?resources=..&required=AVX2",
              f"/resource_providers?resources={RESOURCES}&required={AVX2}",
              "resource_providers", _all(AVX2)),
)

# The query a scheduler sends before claiming (the schedule+claim cycle).
SCHEDULE_PATH = f"{_AC}&required={AVX2}&limit=10"

# The row whose p50 the targets are about.
TARGET_QUERY = "ac_required_limit"
