"""The scheduler against a real placement server: hosts are providers with traits and
inventories, written through the PlacementClient as compute agents write them; the
compute API's tables are stood in for by a FakeCatalog."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable

import pytest

from moorage.model.flavor import Flavor
from moorage.model.inventory import Inventory
from moorage.placement.client import PlacementClient
from moorage.placement.provider_names import provider_uuid
from moorage.scheduler import NoValidHost, Scheduler
from moorage.scheduler.types import Aggregate, RequestSpec
from tests.conftest import PlacementClient as HttpPlacement
from tests.unit.scheduler.fakes import FakeCatalog, conf, spec

LIBVIRT_TRAITS = ("COMPUTE_NET_VIF_MODEL_E1000", "COMPUTE_NET_VIF_MODEL_VIRTIO",
                  "COMPUTE_IMAGE_TYPE_QCOW2", "COMPUTE_IMAGE_TYPE_RAW", "HW_ARCH_X86_64")
VMWARE_TRAITS = ("COMPUTE_IMAGE_TYPE_VMDK", "COMPUTE_IMAGE_TYPE_ISO", "HW_ARCH_X86_64")


class Cloud:
    """Hosts in placement and in the catalog, and a scheduler over them."""

    def __init__(self, placement: PlacementClient) -> None:
        self.placement = placement
        self.catalog = FakeCatalog()

    def host(self, name: str, traits: Iterable[str] = (), *, vcpus: int = 8,
             memory_mb: int = 4096, disk_gb: int = 100, enabled: bool = True,
             up: bool = True, supported: tuple[tuple[str, str, str], ...] = ()) -> str:
        rp = provider_uuid(name)
        provider = self.placement.create_provider(name, rp)
        generation = self.placement.set_inventories(rp, provider.generation, {
            "VCPU": Inventory.of(vcpus), "MEMORY_MB": Inventory.of(memory_mb),
            "DISK_GB": Inventory.of(disk_gb)})
        traits = set(traits) | {"COMPUTE_NODE"}
        if not enabled:
            traits.add("COMPUTE_STATUS_DISABLED")
        for trait in traits:
            if trait.startswith("CUSTOM_"):
                self.placement.ensure_trait(trait)
        self.placement.set_traits(rp, generation, traits)
        self.catalog.add_host(name, enabled=enabled, up=up, supported_instances=supported)
        return rp

    def scheduler(self, seed: int = 0, **options: object) -> Scheduler:
        return Scheduler(conf(**options), self.placement, self.catalog, random.Random(seed))


@pytest.fixture
def cloud(placement: HttpPlacement) -> Cloud:
    return Cloud(PlacementClient(placement.url, "admin"))


def new_spec(flavor: Flavor | None = None, **kwargs: object) -> RequestSpec:
    """A spec for a new instance (its own consumer uuid)."""
    s = spec(flavor, **kwargs)  # type: ignore[arg-type]
    s.instance_uuid = str(uuid.uuid4())
    return s


def test_prefilter_sends_e1000_only_to_hosts_that_have_it(cloud: Cloud) -> None:
    cloud.host("libvirt1", LIBVIRT_TRAITS)
    cloud.host("vmware1", VMWARE_TRAITS, memory_mb=65536)  # the weighers prefer it
    cloud.host("fake1", ("COMPUTE_IMAGE_TYPE_RAW",), memory_mb=65536)
    scheduler = cloud.scheduler(scheduler__image_metadata_prefilter=True)
    s = new_spec(properties={"hw_vif_model": "e1000"})
    selection = scheduler.select_destinations(s)
    assert selection.destination.host == "libvirt1"
    assert selection.alternates == []
    assert selection.candidates == 1
    held, generation = cloud.placement.allocations(s.instance_uuid)
    assert held == {provider_uuid("libvirt1"): {"VCPU": 2, "MEMORY_MB": 512, "DISK_GB": 1}}
    assert generation is not None
    record = next(r for r in s.filter_records if r.name == "transform_image_metadata")
    assert [(a.names, a.origin.setting) for a in record.added] == [
        (("COMPUTE_NET_VIF_MODEL_E1000",), "hw_vif_model=e1000")]


def test_without_prefilter_any_host_and_alternates(cloud: Cloud) -> None:
    for name in ("h1", "h2", "h3", "h4"):
        cloud.host(name)
    scheduler = cloud.scheduler()
    s = new_spec(properties={"hw_vif_model": "e1000"})
    selection = scheduler.select_destinations(s)
    assert len(selection.alternates) == 2  # max_attempts 3 - 1
    hosts = [selection.destination.host, *(a.host for a in selection.alternates)]
    assert len(set(hosts)) == 3
    # alternates are not claimed
    for alternate in selection.alternates:
        assert cloud.placement.usages(alternate.provider_uuid) == {
            "VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}
    five = cloud.scheduler(scheduler__max_attempts=5).select_destinations(new_spec())
    assert len(five.alternates) == 3  # only 4 hosts


def test_image_type_prefilter(cloud: Cloud) -> None:
    cloud.host("libvirt1", LIBVIRT_TRAITS, memory_mb=65536)
    cloud.host("ceph1", ("COMPUTE_IMAGE_TYPE_RAW",), memory_mb=65536)  # raw-only
    cloud.host("vmware1", VMWARE_TRAITS)
    scheduler = cloud.scheduler(scheduler__query_placement_for_image_type_support=True)
    vmdk = scheduler.select_destinations(new_spec(disk_format="vmdk"))
    assert vmdk.destination.host == "vmware1" and vmdk.alternates == []
    qcow2 = scheduler.select_destinations(new_spec(disk_format="qcow2"))
    assert qcow2.destination.host == "libvirt1" and qcow2.alternates == []
    # volume-backed: the image format does not matter
    bfv = scheduler.select_destinations(new_spec(disk_format="vmdk", is_bfv=True))
    assert bfv.candidates == 3


def test_flavor_required_and_forbidden_traits(cloud: Cloud) -> None:
    cloud.host("gold", ("CUSTOM_GOLD",))
    cloud.host("gold-slow", ("CUSTOM_GOLD", "CUSTOM_SLOW"))
    cloud.host("plain")
    scheduler = cloud.scheduler(scheduler__max_attempts=5)
    s = new_spec(extra_specs={"trait:CUSTOM_GOLD": "required", "trait:CUSTOM_SLOW": "forbidden"})
    selection = scheduler.select_destinations(s)
    assert selection.destination.host == "gold" and selection.alternates == []
    image = new_spec(properties={"trait:CUSTOM_SLOW": "required"})
    assert scheduler.select_destinations(image).destination.host == "gold-slow"


def test_disabled_hosts_are_never_chosen(cloud: Cloud) -> None:
    cloud.host("on")
    cloud.host("off", enabled=False, memory_mb=65536)
    selection = cloud.scheduler().select_destinations(new_spec())
    assert selection.destination.host == "on" and selection.alternates == []


def test_no_candidates_names_the_trait_and_where_it_came_from(cloud: Cloud) -> None:
    cloud.host("vmware1", VMWARE_TRAITS)
    scheduler = cloud.scheduler(scheduler__image_metadata_prefilter=True)
    s = new_spec(properties={"hw_vif_model": "e1000"})
    with pytest.raises(NoValidHost) as caught:
        scheduler.select_destinations(s)
    reason = caught.value.reason
    assert reason.startswith("placement returned no allocation candidates for: "
                             "resources VCPU=2,MEMORY_MB=512,DISK_GB=1")
    assert ("required host traits COMPUTE_NET_VIF_MODEL_E1000 "
            "(from image property hw_vif_model=e1000)") in reason
    assert ("required host trait COMPUTE_NET_VIF_MODEL_E1000 (from image property "
            "hw_vif_model=e1000): excludes the only host (no host satisfies it)") in reason
    decisions = caught.value.decisions.to_json()
    assert caught.value.deciding == "COMPUTE_NET_VIF_MODEL_E1000"
    e1000 = next(e for e in decisions["exclusions"]
                 if e["key"] == "COMPUTE_NET_VIF_MODEL_E1000")
    assert (e1000["stage"], e1000["excluded"], e1000["of"], e1000["hosts"]) == (
        "placement", 1, 1, ["vmware1"])
    assert decisions["relaxed"]["hosts"] == 1
    # Constraints every host satisfies are not stored (they excluded nothing).
    assert all(e["excluded"] for e in decisions["exclusions"])
    assert cloud.placement.allocations(s.instance_uuid) == ({}, None)


def test_no_candidates_for_resources(cloud: Cloud) -> None:
    cloud.host("tiny", vcpus=1)
    with pytest.raises(NoValidHost) as caught:
        cloud.scheduler().select_destinations(new_spec())
    assert ("resources VCPU=2 (from flavor small): excludes the only host (no host "
            "satisfies it)") in caught.value.reason
    assert "smallest change: without resources VCPU=2 (from flavor small), 1 host " \
        "satisfies every other constraint" in caught.value.reason
    assert caught.value.deciding == "VCPU"


def test_unknown_custom_trait_is_a_no_valid_host(cloud: Cloud) -> None:
    cloud.host("h1")
    s = new_spec(extra_specs={"trait:CUSTOM_NOBODY": "required"})
    with pytest.raises(NoValidHost, match="CUSTOM_NOBODY"):
        cloud.scheduler().select_destinations(s)


def test_all_hosts_rejected_by_compute_filter(cloud: Cloud) -> None:
    cloud.host("h1", up=False)
    cloud.host("h2", up=False)
    with pytest.raises(NoValidHost) as caught:
        cloud.scheduler().select_destinations(new_spec())
    assert caught.value.reason == ("all 2 candidate hosts were rejected: "
                                   "ComputeFilter rejected 2 (2 down)")
    assert caught.value.deciding == "ComputeFilter"
    [compute] = [e for e in caught.value.decisions.to_json()["exclusions"]
                 if e["stage"] == "host filter"]
    assert (compute["key"], compute["excluded"], compute["of"], compute["hosts"],
            compute["reasons"]) == ("ComputeFilter", 2, 2, ["h1", "h2"], {"down": 2})


def test_a_record_of_many_rejections_stays_small(cloud: Cloud) -> None:
    """60 hosts down: the fault counts them by reason; its decisions name the first 20
    and say how many more."""
    for n in range(60):
        cloud.host(f"h{n:02d}", up=False)
    with pytest.raises(NoValidHost) as caught:
        cloud.scheduler().select_destinations(new_spec())
    assert caught.value.reason == (
        "all 60 candidate hosts were rejected: ComputeFilter rejected 60 (60 down)")
    [compute] = [e for e in caught.value.decisions.to_json()["exclusions"]
                 if e["stage"] == "host filter"]
    assert len(compute["hosts"]) == 20 and compute["hosts_omitted"] == 40
    assert compute["excluded"] == 60 and compute["reasons"] == {"down": 60}


def test_image_properties_filter_as_the_legacy_alternative(cloud: Cloud) -> None:
    cloud.host("x86", supported=(("x86_64", "qemu", "hvm"),))
    cloud.host("arm", supported=(("aarch64", "qemu", "hvm"),), memory_mb=65536)
    scheduler = cloud.scheduler()
    s = new_spec(properties={"hw_architecture": "x86_64"})
    assert scheduler.select_destinations(s).destination.host == "x86"
    without = cloud.scheduler(filter_scheduler__enabled_filters=["ComputeFilter"])
    assert without.select_destinations(new_spec(
        properties={"hw_architecture": "x86_64"})).destination.host == "arm"


def test_ignore_hosts_and_requested_host(cloud: Cloud) -> None:
    for name in ("h1", "h2", "h3"):
        cloud.host(name)
    scheduler = cloud.scheduler()
    s = new_spec(ignore_hosts=frozenset({"h1", "h2"}))
    selection = scheduler.select_destinations(s)
    assert selection.destination.host == "h3" and selection.alternates == []
    target = scheduler.select_destinations(new_spec(requested_host="h2"))
    assert target.destination.host == "h2" and target.alternates == []
    with pytest.raises(NoValidHost, match=r"ignore_hosts rejected 1 \(1 excluded by the "
                       "request") as caught:
        scheduler.select_destinations(new_spec(requested_host="h1",
                                               ignore_hosts=frozenset({"h1"})))
    [ignored] = [e for e in caught.value.decisions.to_json()["exclusions"]
                 if e["stage"] == "request"]
    assert ignored["key"] == "ignore_hosts" and ignored["hosts"] == ["h1"]
    with pytest.raises(NoValidHost, match="nowhere is not a known compute host"):
        scheduler.select_destinations(new_spec(requested_host="nowhere"))


def test_availability_zone_and_tenant_aggregates(cloud: Cloud) -> None:
    cloud.host("h1")
    rp2 = cloud.host("h2")
    az = str(uuid.uuid4())
    generation = cloud.placement.provider(rp2).generation
    cloud.placement.set_aggregates(rp2, generation, [az])
    cloud.catalog.aggregate_list.append(Aggregate(az, "az", frozenset({"h2"}), {}, "az1"))
    scheduler = cloud.scheduler()
    selection = scheduler.select_destinations(new_spec(availability_zone="az1"))
    assert selection.destination.host == "h2" and selection.alternates == []
    # the tenant aggregate is the same one: only project-b may use it
    cloud.catalog.aggregate_list[0] = Aggregate(az, "az", frozenset({"h2"}),
                                                {"filter_tenant_id": "project-b"}, None)
    tenant = cloud.scheduler(scheduler__limit_tenants_to_placement_aggregate=True)
    s = new_spec()
    s.project_id = "project-b"
    assert tenant.select_destinations(s).destination.host == "h2"


def test_isolated_aggregates(cloud: Cloud) -> None:
    cloud.host("plain")
    rp = cloud.host("gpu", ("CUSTOM_GPU",), memory_mb=65536)
    gpu_agg = str(uuid.uuid4())
    cloud.placement.set_aggregates(rp, cloud.placement.provider(rp).generation, [gpu_agg])
    cloud.catalog.aggregate_list.append(
        Aggregate(gpu_agg, "gpus", frozenset({"gpu"}), {"trait:CUSTOM_GPU": "required"}))
    scheduler = cloud.scheduler(scheduler__enable_isolated_aggregate_filtering=True)
    assert scheduler.select_destinations(new_spec()).destination.host == "plain"
    gpu = new_spec(extra_specs={"trait:CUSTOM_GPU": "required"})
    assert scheduler.select_destinations(gpu).destination.host == "gpu"


def test_claim_false_when_full_and_release(cloud: Cloud) -> None:
    cloud.host("h1", vcpus=2)
    cloud.host("h2", vcpus=2)
    scheduler = cloud.scheduler()
    first = new_spec()
    selection = scheduler.select_destinations(first)
    alternate = selection.alternates[0]
    # someone else takes the alternate meanwhile
    assert scheduler.claim(new_spec(), alternate)
    assert not scheduler.claim(first, alternate)
    scheduler.placement.delete_allocations(first.instance_uuid)
    assert cloud.placement.allocations(first.instance_uuid) == ({}, None)
    scheduler.placement.delete_allocations(first.instance_uuid)  # nothing held: fine
    # the freed host can be claimed again, by consumer generation
    assert scheduler.claim(first, selection.destination)


def test_claim_race_moves_to_the_next_host(cloud: Cloud) -> None:
    rp1 = cloud.host("h1", vcpus=2, memory_mb=65536)
    cloud.host("h2", vcpus=2)

    class RacingScheduler(Scheduler):
        """Another claim lands on h1 between the candidates and our claim."""

        def claim(self, spec: RequestSpec, destination, confirm=None):  # type: ignore[no-untyped-def]
            if destination.host == "h1":
                self.placement.claim(str(uuid.uuid4()), {rp1: {"VCPU": 2}}, "p", "u", None)
            return super().claim(spec, destination, confirm)

    scheduler = RacingScheduler(conf(), cloud.placement, cloud.catalog, random.Random(0))
    s = new_spec()
    selection = scheduler.select_destinations(s)
    assert selection.destination.host == "h2"


def test_move_allocations(cloud: Cloud) -> None:
    cloud.host("h1")
    scheduler = cloud.scheduler()
    s = new_spec()
    scheduler.select_destinations(s)
    held, _ = cloud.placement.allocations(s.instance_uuid)
    migration = str(uuid.uuid4())
    assert cloud.placement.move_allocations(s.instance_uuid, migration, "project-a", "user-a")
    assert cloud.placement.allocations(s.instance_uuid) == ({}, None)
    assert cloud.placement.allocations(migration)[0] == held


def test_verify_rebuild(cloud: Cloud) -> None:
    cloud.host("h1", (*LIBVIRT_TRAITS, "CUSTOM_GOLD"), supported=(("x86_64", "qemu", "hvm"),))
    cloud.placement.ensure_trait("CUSTOM_SLOW")
    scheduler = cloud.scheduler(scheduler__image_metadata_prefilter=True)
    s = new_spec(Flavor("f", 1, 256, extra_specs={"trait:CUSTOM_SLOW": "forbidden"}))
    scheduler.select_destinations(s)
    usage_before = cloud.placement.usages(provider_uuid("h1"))

    def rebuild(**properties: str) -> RequestSpec:
        r = new_spec(s.flavor, properties=properties, rebuild=True)
        r.instance_uuid = s.instance_uuid
        return r

    scheduler.verify_rebuild(rebuild(**{"trait:CUSTOM_GOLD": "required"}), "h1")
    scheduler.verify_rebuild(rebuild(hw_vif_model="e1000"), "h1")
    with pytest.raises(NoValidHost, match=r"^No valid host was found\. Image traits are part of "
                                          r"forbidden traits in flavor"):
        scheduler.verify_rebuild(rebuild(**{"trait:CUSTOM_SLOW": "required"}), "h1")
    with pytest.raises(NoValidHost, match="Image traits cannot be satisfied by the current "
                                          "resource providers") as caught:
        scheduler.verify_rebuild(rebuild(**{"trait:CUSTOM_SILVER": "required"}), "h1")
    assert caught.value.why.missing_traits == ("CUSTOM_SILVER",)
    with pytest.raises(NoValidHost, match=r"COMPUTE_GRAPHICS_MODEL_QXL \(from image property "
                                          r"hw_video_model=qxl\)"):
        scheduler.verify_rebuild(rebuild(hw_video_model="qxl"), "h1")
    with pytest.raises(NoValidHost, match="ImagePropertiesFilter rejected 1"):
        scheduler.verify_rebuild(rebuild(img_hv_type="vmware"), "h1")
    # the same-host rebuild path of select_destinations: checks only, no new claim
    same = rebuild(hw_vif_model="e1000")
    same.requested_host = "h1"
    selection = scheduler.select_destinations(same)
    assert selection.destination.host == "h1" and selection.candidates == 0
    assert cloud.placement.usages(provider_uuid("h1")) == usage_before


def test_a_host_with_several_nodes(cloud: Cloud) -> None:
    """Bare-metal: one compute service, a provider per node; each node is a choice."""
    for node in ("node-a", "node-b", "node-c"):
        cloud.host(node)
    cloud.catalog.host_infos.clear()
    cloud.catalog.add_host("ironic", driver="ironic", nodes=["node-a", "node-b", "node-c"])
    cloud.catalog.add_host("down", up=False, nodes=[])
    s = new_spec()
    selection = cloud.scheduler().select_destinations(s)
    chosen = [selection.destination, *selection.alternates]
    assert {d.host for d in chosen} == {"ironic"}
    assert len({d.node for d in chosen}) == 3
    held, _ = cloud.placement.allocations(s.instance_uuid)
    assert list(held) == [provider_uuid(selection.destination.node)]
    with pytest.raises(NoValidHost, match=r"ignore_hosts rejected 3 \(3 excluded") as caught:
        cloud.scheduler().select_destinations(new_spec(ignore_hosts=frozenset({"ironic"})))
    [ignored] = [e for e in caught.value.decisions.to_json()["exclusions"]
                 if e["stage"] == "request"]
    assert sorted(ignored["hosts"]) == ["ironic/node-a", "ironic/node-b", "ironic/node-c"]


def test_a_sample_of_candidates_first_then_all_when_none_passes(cloud: Cloud) -> None:
    # Placement offers hosts in its own order (not randomized here).
    for index in range(6):
        cloud.host(f"h{index}")
    scheduler = cloud.scheduler(scheduler__placement_sample_size=4)
    sampled = scheduler.select_destinations(new_spec())
    assert sampled.candidates == 4
    # The first four go down: none of the sample passes, the widened query finds h4, h5.
    for index in range(4):
        cloud.catalog.add_host(f"h{index}", up=False)
    s = new_spec()
    widened = scheduler.select_destinations(s)
    assert widened.destination.host in ("h4", "h5")
    assert widened.candidates == 6
    # A sample placement could not fill was the whole answer: nothing to widen.
    for index in range(4, 6):
        cloud.catalog.add_host(f"h{index}", up=False)
    with pytest.raises(NoValidHost, match="ComputeFilter") as failed:
        cloud.scheduler(scheduler__placement_sample_size=10).select_destinations(new_spec())
    assert failed.value.why.widened is False
    assert failed.value.why.candidates == 6
