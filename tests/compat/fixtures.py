"""Upstream placement's gabbi data fixtures, rebuilt through the HTTP API.

Every YAML file of upstream's gabbi suite names one fixture. Most only configure
the service; eight pre-populate it with providers, inventories, traits,
aggregates, consumers and allocations, and export ``$ENVIRON`` names for what
they made. Upstream writes those rows with its object layer. Here each topology
is built on a *running* Moorage server through its public API, so the YAML files
run unchanged against us.

``FIXTURES`` maps every fixture name the suite uses to a function taking the
server URL and returning the environment variables the YAML expects.

Where upstream's direct writes differ from what the API does, the closest API
call is used and the difference is noted where it happens:

* Upstream stores its allocations' consumers with no consumer type (shown as
  "unknown" from 1.38): we write them at microversion 1.37, which stores none.
* Upstream joins aggregates without bumping provider generations: we use the
  list form of ``PUT .../aggregates`` (microversion 1.18), which does the same.
* Upstream creates user and project rows before any allocation names them; the
  API creates them with the first allocation. Every user and project the
  fixtures create owns allocations, so the stored rows end up the same.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import requests

Environment = dict[str, str]
FixtureFunction = Callable[[str], Environment]

LATEST = "latest"
# The list body of PUT .../aggregates (1.1-1.18) leaves the generation alone.
AGGREGATES_WITHOUT_GENERATION_BUMP = "1.18"
# Before 1.38 an allocation carries no consumer type and none is stored.
ALLOCATIONS_WITHOUT_CONSUMER_TYPE = "1.37"

# The environment of upstream's APIFixture: fresh uuids the YAML files use as
# provider uuids and names, project, user and consumer ids.
BASIC_UUID_NAMES = (
    "RP_UUID", "RP_NAME", "RP_UUID1", "RP_NAME1", "RP_UUID2", "RP_NAME2",
    "PROJECT_ID", "ADMIN_PROJECT_ID", "SERVICE_PROJECT_ID", "USER_ID",
    "PROJECT_ID_ALT", "USER_ID_ALT", "INSTANCE_UUID", "MIGRATION_UUID",
    "CONSUMER_UUID", "PARENT_PROVIDER_UUID", "ALT_PARENT_PROVIDER_UUID",
)
BASIC_RESOURCE_CLASSES = {
    "CUSTOM_RES_CLASS": "CUSTOM_IRON_NFV",
    "CUSTOM_RES_CLASS1": "CUSTOM_IRON_NFV1",
    "CUSTOM_RES_CLASS2": "CUSTOM_IRON_NFV2",
}

SHARES = "MISC_SHARES_VIA_AGGREGATE"
GIB_IN_MB = 1024


def new_uuid() -> str:
    return str(uuid.uuid4())


class FixtureError(RuntimeError):
    """The server refused a request a fixture needs (carries the response)."""


@dataclass(frozen=True)
class Owner:
    """The user and project that a consumer belongs to."""

    user_id: str
    project_id: str


class PlacementWriter:
    """Builds placement data on one server over HTTP, as admin.

    Every write is one API call doing what one step of upstream's fixture
    helpers does, so provider and consumer generations end where upstream's do.
    """

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.session = requests.Session()
        self.session.headers.update({"x-auth-token": "admin", "accept": "application/json"})

    def call(self, method: str, path: str, body: Any = None, *, version: str = LATEST,
             expect: tuple[int, ...] = (200,)) -> Any:
        """One request; the decoded body, or FixtureError on an unexpected status."""
        response = self.session.request(
            method, self.url + path, json=body, timeout=60,
            headers={"openstack-api-version": f"placement {version}"})
        if response.status_code not in expect:
            raise FixtureError(f"{method} {path} (placement {version}) -> "
                               f"{response.status_code}: {response.text}")
        return response.json() if response.content else None

    def provider(self, name: str, *, rp_uuid: str | None = None, parent: str | None = None,
                 aggregates: Iterable[str] = ()) -> str:
        """Create a provider, optionally under a parent and in aggregates; its uuid."""
        body: dict[str, str] = {"name": name, "uuid": rp_uuid or new_uuid()}
        if parent is not None:
            body["parent_provider_uuid"] = parent
        created = self.call("POST", "/resource_providers", body)
        aggregates = list(aggregates)
        if aggregates:
            self.set_aggregates(created["uuid"], aggregates)
        return str(created["uuid"])

    def generation(self, rp_uuid: str) -> int:
        return int(self.call("GET", f"/resource_providers/{rp_uuid}")["generation"])

    def set_aggregates(self, rp_uuid: str, aggregates: Iterable[str]) -> None:
        """Replace a provider's aggregates without touching its generation."""
        self.call("PUT", f"/resource_providers/{rp_uuid}/aggregates", list(aggregates),
                  version=AGGREGATES_WITHOUT_GENERATION_BUMP)

    def add_inventory(self, rp_uuid: str, resource_class: str, total: int, *,
                      reserved: int = 0, min_unit: int = 1, max_unit: int | None = None,
                      step_size: int = 1, allocation_ratio: float = 1.0) -> None:
        """Add one inventory record (one generation bump).

        max_unit defaults to the total, as in upstream's fixtures; the API's own
        default would be unlimited.
        """
        self.ensure_resource_class(resource_class)
        body = {
            "resource_class": resource_class, "total": total, "reserved": reserved,
            "min_unit": min_unit, "max_unit": total if max_unit is None else max_unit,
            "step_size": step_size, "allocation_ratio": allocation_ratio,
            "resource_provider_generation": self.generation(rp_uuid),
        }
        self.call("POST", f"/resource_providers/{rp_uuid}/inventories", body, expect=(201,))

    def add_inventories(self, rp_uuid: str, totals: Mapping[str, int]) -> None:
        """Add plain inventories ({class: total}), one record (and bump) each."""
        for resource_class, total in totals.items():
            self.add_inventory(rp_uuid, resource_class, total)

    def set_traits(self, rp_uuid: str, *traits: str) -> None:
        """Replace a provider's traits, creating custom ones (one generation bump)."""
        for trait in traits:
            self.ensure_trait(trait)
        body = {"traits": list(traits), "resource_provider_generation": self.generation(rp_uuid)}
        self.call("PUT", f"/resource_providers/{rp_uuid}/traits", body)

    def allocate(self, consumer: str, owner: Owner, rp_uuid: str,
                 resources: Mapping[str, int]) -> None:
        """Give a new consumer allocations against one provider.

        Written before 1.38, so the consumer is stored without a consumer type,
        as upstream's fixtures store theirs.
        """
        body = {
            "allocations": {rp_uuid: {"resources": dict(resources)}},
            "consumer_generation": None,
            "project_id": owner.project_id,
            "user_id": owner.user_id,
        }
        self.call("PUT", f"/allocations/{consumer}", body,
                  version=ALLOCATIONS_WITHOUT_CONSUMER_TYPE, expect=(204,))

    def ensure_resource_class(self, name: str) -> None:
        if name.startswith("CUSTOM_"):
            self.call("PUT", f"/resource_classes/{name}", expect=(201, 204))

    def ensure_trait(self, name: str) -> None:
        if name.startswith("CUSTOM_"):
            self.call("PUT", f"/traits/{name}", expect=(201, 204))


# -- APIFixture and the fixtures that only configure the service ---------------

def basic_environment(url: str) -> Environment:
    """APIFixture: nothing stored; fresh names for the YAML to create things with."""
    del url  # the server stays empty
    env = {name: new_uuid() for name in BASIC_UUID_NAMES}
    env.update(BASIC_RESOURCE_CLASSES)
    return env


# -- AllocationFixture ---------------------------------------------------------

def allocation_fixture(url: str) -> Environment:
    """One provider whose resources three consumers of two users share.

    RP_UUID (named RP_NAME)
        DISK_GB 2048 (min_unit 10, max_unit 1000, step_size 10), VCPU 10
        CONSUMER_0       by USER_ID      DISK_GB 1000
        CONSUMER_ID      by USER_ID      VCPU 6
        ALT_CONSUMER_ID  by ALT_USER_ID  DISK_GB 20, VCPU 1

    All consumers are in PROJECT_ID and have no consumer type; the provider
    ends at generation 5 (two inventories, three allocations).
    ALT_RP_UUID and ALT_RP_NAME name a provider that does not exist.
    """
    env = basic_environment(url)
    env.update(ALT_USER_ID=new_uuid(), CONSUMER_0=new_uuid(), CONSUMER_ID=new_uuid(),
               ALT_CONSUMER_ID=new_uuid(), ALT_RP_UUID=new_uuid(), ALT_RP_NAME=new_uuid())
    user = Owner(env["USER_ID"], env["PROJECT_ID"])
    alt_user = Owner(env["ALT_USER_ID"], env["PROJECT_ID"])

    w = PlacementWriter(url)
    rp = w.provider(env["RP_NAME"], rp_uuid=env["RP_UUID"])
    w.add_inventory(rp, "DISK_GB", 2048, min_unit=10, max_unit=1000, step_size=10)
    w.add_inventory(rp, "VCPU", 10)
    w.allocate(env["CONSUMER_0"], user, rp, {"DISK_GB": 1000})
    w.allocate(env["CONSUMER_ID"], user, rp, {"VCPU": 6})
    w.allocate(env["ALT_CONSUMER_ID"], alt_user, rp, {"DISK_GB": 20, "VCPU": 1})
    return env


# -- SharedStorageFixture ------------------------------------------------------

def shared_storage_fixture(url: str) -> Environment:
    """Two compute trees and two storage providers shared with both by aggregate.

    aggregate AGG_UUID: cn1, cn2, ss, ss2

    ss, ss2    MISC_SHARES_VIA_AGGREGATE; DISK_GB 2000 (reserved 100)
    cn1        VCPU 24 (ratio 16), MEMORY_MB 128 GiB (ratio 1.5);
               HW_CPU_X86_SSE, HW_CPU_X86_SSE2
      numa1_1 - pf1_1   SRIOV_NET_VF 8
      numa1_2 - pf1_2   SRIOV_NET_VF 8
    cn2        VCPU 24 (ratio 16), MEMORY_MB 128 GiB (ratio 1.5),
               DISK_GB 2000 (reserved 100): local disk as well as shared
      numa2_1 - pf2_1   SRIOV_NET_VF 8
      numa2_2 - pf2_2   SRIOV_NET_VF 8

    The NUMA providers have no inventory. Every provider's uuid is exported as
    <NAME>_UUID (CN1_UUID, SS_UUID, NUMA1_2_UUID, PF2_1_UUID, ...).
    """
    env = basic_environment(url)
    env["AGG_UUID"] = agg = new_uuid()
    w = PlacementWriter(url)

    for name in ("cn1", "cn2", "ss", "ss2"):
        env[f"{name.upper()}_UUID"] = w.provider(name, aggregates=[agg])
    suffixes = ("1_1", "1_2", "2_1", "2_2")  # <host>_<node>
    for suffix in suffixes:
        env[f"NUMA{suffix}_UUID"] = w.provider(f"numa{suffix}",
                                               parent=env[f"CN{suffix[0]}_UUID"])
    for suffix in suffixes:
        env[f"PF{suffix}_UUID"] = w.provider(f"pf{suffix}", parent=env[f"NUMA{suffix}_UUID"])

    for cn in (env["CN1_UUID"], env["CN2_UUID"]):
        w.add_inventory(cn, "VCPU", 24, allocation_ratio=16.0)
        w.add_inventory(cn, "MEMORY_MB", 128 * GIB_IN_MB, allocation_ratio=1.5)
    w.set_traits(env["CN1_UUID"], "HW_CPU_X86_SSE", "HW_CPU_X86_SSE2")
    w.add_inventory(env["CN2_UUID"], "DISK_GB", 2000, reserved=100)
    for shared in (env["SS_UUID"], env["SS2_UUID"]):
        w.add_inventory(shared, "DISK_GB", 2000, reserved=100)
        w.set_traits(shared, SHARES)
    for suffix in suffixes:
        w.add_inventory(env[f"PF{suffix}_UUID"], "SRIOV_NET_VF", 8)
    return env


# -- NUMAAggregateFixture ------------------------------------------------------

def numa_aggregate_fixture(url: str) -> Environment:
    """Compute roots without inventory whose NUMA children hold the CPUs.

    aggA (AGGA_UUID): cn1, cn2, ss1
    aggB (AGGB_UUID): cn2
    aggC (AGGC_UUID): numa1_1, ss2   (a NUMA child, not a root, in the aggregate)

    ss1, ss2   MISC_SHARES_VIA_AGGREGATE; DISK_GB 2000 (reserved 100)
    cn1
      numa1_1  VCPU 24 (ratio 16)
      numa1_2  VCPU 24 (ratio 16)
    cn2
      numa2_1  VCPU 24 (ratio 16)
      numa2_2  VCPU 24 (ratio 16)
    """
    env = basic_environment(url)
    agg_a, agg_b, agg_c = new_uuid(), new_uuid(), new_uuid()
    env.update(AGGA_UUID=agg_a, AGGB_UUID=agg_b, AGGC_UUID=agg_c)
    w = PlacementWriter(url)

    env["CN1_UUID"] = w.provider("cn1", aggregates=[agg_a])
    env["CN2_UUID"] = w.provider("cn2", aggregates=[agg_a, agg_b])
    env["SS1_UUID"] = w.provider("ss1", aggregates=[agg_a])
    env["SS2_UUID"] = w.provider("ss2", aggregates=[agg_c])
    numa_aggregates = {"1_1": [agg_c], "1_2": [], "2_1": [], "2_2": []}
    for suffix, aggregates in numa_aggregates.items():
        numa = w.provider(f"numa{suffix}", parent=env[f"CN{suffix[0]}_UUID"],
                          aggregates=aggregates)
        env[f"NUMA{suffix}_UUID"] = numa
        w.add_inventory(numa, "VCPU", 24, allocation_ratio=16.0)
    for shared in (env["SS1_UUID"], env["SS2_UUID"]):
        w.add_inventory(shared, "DISK_GB", 2000, reserved=100)
        w.set_traits(shared, SHARES)
    return env


# -- NUMANetworkFixture and DeepNUMANetworkFixture -----------------------------

def numa_network_fixture(url: str) -> Environment:
    """Two compute trees: one split into NUMA nodes and agents, one flat with NICs.

    aggA (AGGA_UUID): ss1, cn1, cn2
    ss1   MISC_SHARES_VIA_AGGREGATE; DISK_GB 2000

    cn1   COMPUTE_VOLUME_MULTI_ATTACH; no inventory
      numa0        HW_NUMA_ROOT; VCPU 4 (2 used),
                   MEMORY_MB 2048 (min_unit 512, step_size 256)
        fpga0      FPGA 1
        pgpu0      VGPU 8
      numa1        HW_NUMA_ROOT, CUSTOM_FOO; VCPU 4,
                   MEMORY_MB 2048 (min_unit 256, max_unit 1024)
        fpga1_0    FPGA 1
        fpga1_1    FPGA 1
      sriov_agent  CUSTOM_VNIC_TYPE_DIRECT; no inventory
        esn1       CUSTOM_PHYSNET1; NET_BW_EGR_KILOBIT_PER_SEC 10000
        esn2       CUSTOM_PHYSNET2; NET_BW_EGR_KILOBIT_PER_SEC 20000
      ovs_agent    CUSTOM_VNIC_TYPE_NORMAL; no inventory
        br_int     CUSTOM_PHYSNET0; NET_BW_EGR_KILOBIT_PER_SEC 1000

    cn2   CUSTOM_FOO; VCPU 8 (3 used), MEMORY_MB 2048 (min_unit 1024,
          step_size 128), DISK_GB 1000
      nic1   CUSTOM_HW_NIC_ROOT
        pf1_1 CUSTOM_PHYSNET1, pf1_2 CUSTOM_PHYSNET2         CUSTOM_VF 4 each
      nic2   CUSTOM_HW_NIC_ROOT
        pf2_1 .. pf2_4 alternating CUSTOM_PHYSNET1 and 2     CUSTOM_VF 2 each
      nic3   CUSTOM_HW_NIC_ROOT
        pf3_1 CUSTOM_PHYSNET1                                CUSTOM_VF 8

    The used VCPUs belong to two consumers of user "numafx-user" in project
    "numafx-project". Every provider's uuid is exported as <NAME>_UUID.
    """
    env = basic_environment(url)
    w = PlacementWriter(url)
    _build_numa_network(w, env)
    return env


def deep_numa_network_fixture(url: str) -> Environment:
    """numa_network_fixture with both compute nodes moved two levels down one tree.

    gp1
      p1
        cn1 ... (as in numa_network_fixture)
      p2
        cn2 ... (as in numa_network_fixture)

    gp1, p1 and p2 have no inventory, traits or aggregates, and no exported name.
    """
    env = basic_environment(url)
    w = PlacementWriter(url)
    grandparent = w.provider("gp1")
    parent1 = w.provider("p1", parent=grandparent)
    parent2 = w.provider("p2", parent=grandparent)
    cn1 = w.provider("cn1", parent=parent1)
    cn2 = w.provider("cn2", parent=parent2)
    _build_numa_network(w, env, cn1=cn1, cn2=cn2)
    return env


def _build_numa_network(w: PlacementWriter, env: Environment, *, cn1: str | None = None,
                        cn2: str | None = None) -> None:
    """Build what numa_network_fixture shows, around cn1 and cn2 if they exist.

    Providers are created in upstream's order, so listings ordered by creation
    come out the same.
    """
    env["AGGA_UUID"] = agg_a = new_uuid()
    owner = Owner(user_id="numafx-user", project_id="numafx-project")

    env["SS1_UUID"] = ss1 = w.provider("ss1", aggregates=[agg_a])
    w.set_traits(ss1, SHARES)
    w.add_inventory(ss1, "DISK_GB", 2000)

    env["CN1_UUID"] = cn1 = cn1 or w.provider("cn1")
    w.set_aggregates(cn1, [agg_a])
    w.set_traits(cn1, "COMPUTE_VOLUME_MULTI_ATTACH")
    numa0 = _numa_node(w, env, 0, cn1, "HW_NUMA_ROOT")
    numa1 = _numa_node(w, env, 1, cn1, "HW_NUMA_ROOT", "CUSTOM_FOO")
    w.add_inventory(numa0, "MEMORY_MB", 2048, min_unit=512, step_size=256)
    w.add_inventory(numa1, "MEMORY_MB", 2048, min_unit=256, max_unit=1024)
    w.allocate(new_uuid(), owner, numa0, {"VCPU": 2})
    _device(w, env, "fpga0", numa0, {"FPGA": 1})
    _device(w, env, "pgpu0", numa0, {"VGPU": 8})
    _device(w, env, "fpga1_0", numa1, {"FPGA": 1})
    _device(w, env, "fpga1_1", numa1, {"FPGA": 1})

    sriov_agent = _device(w, env, "sriov_agent", cn1, {}, "CUSTOM_VNIC_TYPE_DIRECT")
    for i in (1, 2):
        _device(w, env, f"esn{i}", sriov_agent, {"NET_BW_EGR_KILOBIT_PER_SEC": 10000 * i},
                f"CUSTOM_PHYSNET{i}")
    ovs_agent = _device(w, env, "ovs_agent", cn1, {}, "CUSTOM_VNIC_TYPE_NORMAL")
    _device(w, env, "br_int", ovs_agent, {"NET_BW_EGR_KILOBIT_PER_SEC": 1000},
            "CUSTOM_PHYSNET0")

    env["CN2_UUID"] = cn2 = cn2 or w.provider("cn2")
    w.set_aggregates(cn2, [agg_a])
    w.add_inventory(cn2, "VCPU", 8)
    w.allocate(new_uuid(), owner, cn2, {"VCPU": 3})
    w.add_inventory(cn2, "MEMORY_MB", 2048, min_unit=1024, step_size=128)
    w.add_inventory(cn2, "DISK_GB", 1000)
    w.set_traits(cn2, "CUSTOM_FOO")
    # {nic number: (number of PFs, CUSTOM_VF per PF)}; PF physnets alternate 1, 2, 1, ...
    nic_pfs = {1: (2, 4), 2: (4, 2), 3: (1, 8)}
    nics = {number: _device(w, env, f"nic{number}", cn2, {}, "CUSTOM_HW_NIC_ROOT")
            for number in nic_pfs}
    for number, (pf_count, vfs) in nic_pfs.items():
        for pf_number in range(1, pf_count + 1):
            physnet = f"CUSTOM_PHYSNET{2 - pf_number % 2}"
            _device(w, env, f"pf{number}_{pf_number}", nics[number], {"CUSTOM_VF": vfs},
                    physnet)


def _numa_node(w: PlacementWriter, env: Environment, number: int, parent: str,
               *traits: str) -> str:
    """A NUMA node provider with 4 VCPUs, exported as NUMA<number>_UUID."""
    numa = w.provider(f"numa{number}", parent=parent)
    env[f"NUMA{number}_UUID"] = numa
    w.set_traits(numa, *traits)
    w.add_inventory(numa, "VCPU", 4)
    return numa


def _device(w: PlacementWriter, env: Environment, name: str, parent: str,
            totals: Mapping[str, int], *traits: str) -> str:
    """A child provider with plain inventories and traits, exported as <NAME>_UUID."""
    rp = w.provider(name, parent=parent)
    env[f"{name.upper()}_UUID"] = rp
    if traits:
        w.set_traits(rp, *traits)
    w.add_inventories(rp, totals)
    return rp


# -- NonSharedStorageFixture ---------------------------------------------------

def non_shared_storage_fixture(url: str) -> Environment:
    """Three flat compute nodes with local disk and nothing shared.

    cn1, cn2, cn3   VCPU 24, MEMORY_MB 128 GiB, DISK_GB 2000

    AGGA_UUID, AGGB_UUID and AGGC_UUID name aggregates no provider is in yet:
    the YAML associates them itself.
    """
    env = basic_environment(url)
    env.update(AGGA_UUID=new_uuid(), AGGB_UUID=new_uuid(), AGGC_UUID=new_uuid())
    w = PlacementWriter(url)
    for number in (1, 2, 3):
        env[f"CN{number}_UUID"] = cn = w.provider(f"cn{number}")
        w.add_inventories(cn, {"VCPU": 24, "MEMORY_MB": 128 * GIB_IN_MB, "DISK_GB": 2000})
    return env


# -- GranularFixture -----------------------------------------------------------

def granular_fixture(url: str) -> Environment:
    """Three flat compute nodes and three sharing providers, for granular requests.

    AGGA: cn_left, cn_middle, shr_disk_1, shr_disk_2
    AGGB: cn_middle, cn_right, shr_disk_2
    AGGC: cn_right, shr_net

    CN_LEFT     cn_left     VCPU 8, MEMORY_MB 4096, DISK_GB 500, VGPU 8,
                            SRIOV_NET_VF 8, CUSTOM_NET_MBPS 4000;
                            HW_CPU_X86_AVX, HW_CPU_X86_AVX2, HW_GPU_API_DXVA,
                            HW_NIC_DCB_PFC, CUSTOM_FOO
    CN_MIDDLE   cn_middle   VCPU 8, MEMORY_MB 4096, SRIOV_NET_VF 8,
                            CUSTOM_NET_MBPS 4000; HW_CPU_X86_AVX,
                            HW_CPU_X86_AVX2, HW_CPU_X86_SSE, HW_NIC_ACCEL_TLS
    CN_RIGHT    cn_right    VCPU 8, MEMORY_MB 4096, DISK_GB 500,
                            VGPU 8 (max_unit 2); HW_CPU_X86_MMX,
                            HW_GPU_API_DXVA, CUSTOM_DISK_SSD
    SHR_DISK_1  shr_disk_1  DISK_GB 1000; sharing, CUSTOM_DISK_SSD
    SHR_DISK_2  shr_disk_2  DISK_GB 1000; sharing
    SHR_NET     shr_net     SRIOV_NET_VF 16, CUSTOM_NET_MBPS 40000; sharing
    """
    env = basic_environment(url)
    agg_a, agg_b, agg_c = new_uuid(), new_uuid(), new_uuid()
    env.update(AGGA=agg_a, AGGB=agg_b, AGGC=agg_c)
    w = PlacementWriter(url)
    w.ensure_resource_class("CUSTOM_NET_MBPS")

    env["CN_LEFT"] = cn_left = w.provider("cn_left", aggregates=[agg_a])
    w.add_inventories(cn_left, {"VCPU": 8, "MEMORY_MB": 4096, "DISK_GB": 500, "VGPU": 8,
                                "SRIOV_NET_VF": 8, "CUSTOM_NET_MBPS": 4000})
    w.set_traits(cn_left, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_GPU_API_DXVA",
                 "HW_NIC_DCB_PFC", "CUSTOM_FOO")

    env["CN_MIDDLE"] = cn_middle = w.provider("cn_middle", aggregates=[agg_a, agg_b])
    w.add_inventories(cn_middle, {"VCPU": 8, "MEMORY_MB": 4096, "SRIOV_NET_VF": 8,
                                  "CUSTOM_NET_MBPS": 4000})
    w.set_traits(cn_middle, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE",
                 "HW_NIC_ACCEL_TLS")

    env["CN_RIGHT"] = cn_right = w.provider("cn_right", aggregates=[agg_b, agg_c])
    w.add_inventories(cn_right, {"VCPU": 8, "MEMORY_MB": 4096, "DISK_GB": 500})
    w.add_inventory(cn_right, "VGPU", 8, max_unit=2)
    w.set_traits(cn_right, "HW_CPU_X86_MMX", "HW_GPU_API_DXVA", "CUSTOM_DISK_SSD")

    env["SHR_DISK_1"] = shr_disk_1 = w.provider("shr_disk_1", aggregates=[agg_a])
    w.add_inventory(shr_disk_1, "DISK_GB", 1000)
    w.set_traits(shr_disk_1, SHARES, "CUSTOM_DISK_SSD")

    env["SHR_DISK_2"] = shr_disk_2 = w.provider("shr_disk_2", aggregates=[agg_a, agg_b])
    w.add_inventory(shr_disk_2, "DISK_GB", 1000)
    w.set_traits(shr_disk_2, SHARES)

    env["SHR_NET"] = shr_net = w.provider("shr_net", aggregates=[agg_c])
    w.add_inventories(shr_net, {"SRIOV_NET_VF": 16, "CUSTOM_NET_MBPS": 40000})
    w.set_traits(shr_net, SHARES)
    return env


# -- NeutronQoSMultiSegmentFixture ---------------------------------------------

VNIC_NORMAL = "CUSTOM_VNIC_TYPE_NORMAL"
VNIC_SRIOV = ("CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL",
              "CUSTOM_VNIC_TYPE_MACVTAP")
BANDWIDTH_CLASSES = ("NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC")


@dataclass(frozen=True)
class NetworkDevice:
    """An OVS bridge or an SR-IOV PF: bandwidth on one physical network."""

    device: str      # the name Neutron gives it, last part of the provider name
    key: str         # how the environment names it: compute<N>:<key>
    physnet: str     # the trait saying which network segment it reaches
    bandwidth: int   # kbit/s in each direction


@dataclass(frozen=True)
class NeutronCompute:
    """A compute node with an OVS agent over bridges and an SR-IOV agent over PFs."""

    name: str
    bridges: tuple[NetworkDevice, ...]
    pfs: tuple[NetworkDevice, ...]


def _single_segment_compute(name: str, physnet: str) -> NeutronCompute:
    return NeutronCompute(
        name,
        bridges=(NetworkDevice("br-ex", "br_ex", physnet, 5000),),
        pfs=(NetworkDevice("enp129s0f0", "pf0", physnet, 10000),),
    )


# compute0 cannot reach the multi-segment network; compute1 and compute2 reach
# one segment each; compute3 reaches both segments, with less bandwidth.
NEUTRON_COMPUTES = (
    _single_segment_compute("compute0", "CUSTOM_PHYSNET_OTHER"),
    _single_segment_compute("compute1", "CUSTOM_PHYSNET_MSN_S1"),
    _single_segment_compute("compute2", "CUSTOM_PHYSNET_MSN_S2"),
    NeutronCompute(
        "compute3",
        bridges=(NetworkDevice("br-ex", "br_ex", "CUSTOM_PHYSNET_MSN_S1", 1000),
                 NetworkDevice("br-ex2", "br_ex2", "CUSTOM_PHYSNET_MSN_S2", 1000)),
        pfs=(NetworkDevice("enp129s0f0", "pf0", "CUSTOM_PHYSNET_MSN_S1", 1000),
             NetworkDevice("enp129s0f1", "pf1", "CUSTOM_PHYSNET_MSN_S2", 1000)),
    ),
)


def neutron_qos_multi_segment_fixture(url: str) -> Environment:
    """Four compute trees as Neutron's QoS (min bandwidth and packet rate) builds them.

    compute<N>                      VCPU 8, MEMORY_MB 4096, DISK_GB 500
      compute<N>:Open vSwitch agent   CUSTOM_VNIC_TYPE_NORMAL;
                                      NET_PACKET_RATE_KILOPACKET_PER_SEC 1000
        ...:Open vSwitch agent:br-ex    CUSTOM_VNIC_TYPE_NORMAL, <physnet>;
                                        NET_BW_EGR/IGR_KILOBIT_PER_SEC <bw>
      compute<N>:NIC Switch agent     CUSTOM_VNIC_TYPE_DIRECT, _DIRECT_PHYSICAL,
                                      _MACVTAP; no inventory
        ...:NIC Switch agent:enp129s0f0 the agent's traits, <physnet>;
                                        NET_BW_EGR/IGR_KILOBIT_PER_SEC <bw>

    NEUTRON_COMPUTES says which physnets and bandwidths each compute has.
    Provider uuids are exported as compute<N>, compute<N>:ovs_agent,
    compute<N>:br_ex (br_ex2), compute<N>:sriov_agent, compute<N>:pf0 (pf1).
    """
    env = basic_environment(url)
    w = PlacementWriter(url)
    for compute in NEUTRON_COMPUTES:
        env.update(_neutron_compute(w, compute))
    return env


def _neutron_compute(w: PlacementWriter, compute: NeutronCompute) -> Environment:
    """Build one compute tree; the environment names of its providers.

    (Upstream exports compute3:sriov_agent as compute2's agent by a slip; no
    YAML file reads it, so the right uuid is exported here.)
    """
    name = compute.name
    env = {name: w.provider(name)}
    w.add_inventories(env[name], {"VCPU": 8, "MEMORY_MB": 4096, "DISK_GB": 500})

    ovs_name = f"{name}:Open vSwitch agent"
    env[f"{name}:ovs_agent"] = ovs_agent = w.provider(ovs_name, parent=env[name])
    w.add_inventory(ovs_agent, "NET_PACKET_RATE_KILOPACKET_PER_SEC", 1000)
    w.set_traits(ovs_agent, VNIC_NORMAL)
    for bridge in compute.bridges:
        env[f"{name}:{bridge.key}"] = _network_device(
            w, f"{ovs_name}:{bridge.device}", ovs_agent, bridge, (VNIC_NORMAL,))

    sriov_name = f"{name}:NIC Switch agent"
    env[f"{name}:sriov_agent"] = sriov_agent = w.provider(sriov_name, parent=env[name])
    w.set_traits(sriov_agent, *VNIC_SRIOV)
    for pf in compute.pfs:
        env[f"{name}:{pf.key}"] = _network_device(
            w, f"{sriov_name}:{pf.device}", sriov_agent, pf, VNIC_SRIOV)
    return env


def _network_device(w: PlacementWriter, provider_name: str, parent: str,
                    device: NetworkDevice, vnic_traits: tuple[str, ...]) -> str:
    rp = w.provider(provider_name, parent=parent)
    w.add_inventories(rp, dict.fromkeys(BANDWIDTH_CLASSES, device.bandwidth))
    w.set_traits(rp, *vnic_traits, device.physnet)
    return rp


# -- the suite's fixture names -------------------------------------------------

FIXTURES: dict[str, FixtureFunction] = {
    # Only configuration differs for these; the data is APIFixture's.
    "APIFixture": basic_environment,
    "OpenPolicyFixture": basic_environment,
    "SecureRBACPolicyFixture": basic_environment,
    "LegacyRBACPolicyFixture": basic_environment,
    "CORSFixture": basic_environment,
    # Data fixtures.
    "AllocationFixture": allocation_fixture,
    "SharedStorageFixture": shared_storage_fixture,
    "NUMAAggregateFixture": numa_aggregate_fixture,
    "NUMANetworkFixture": numa_network_fixture,
    "DeepNUMANetworkFixture": deep_numa_network_fixture,
    "NonSharedStorageFixture": non_shared_storage_fixture,
    "GranularFixture": granular_fixture,
    "NeutronQoSMultiSegmentFixture": neutron_qos_multi_segment_fixture,
}
