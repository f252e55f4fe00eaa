"""The cloud description file: the bundled example, every class of bad input (named by
file and line), the order of boots, and the host plans of each simulated driver."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from moorage.embedded import EmbeddedCloud
from moorage.placement.client import PlacementClient
from moorage.run.description import (
    BUNDLED_EXAMPLE,
    EXAMPLES,
    CloudDescription,
    CloudError,
    backend_image_types,
    boots,
    flavor_json,
    image_json,
    load_cloud,
    with_seed,
)
from moorage.run.host_plans import host_plans

# A valid small cloud; the bad-input cases below each change one line of it.
GOOD = """\
name: tiny
seed: 7
host_groups:
  - name: kvm
    count: 2
    driver: fake
    image_backend: qcow2
    traits: [COMPUTE_NET_VIF_MODEL_VIRTIO, CUSTOM_GOLD]
    unsupported_traits: [COMPUTE_STORAGE_BUS_IDE]
  - name: ceph
    count: 1
    driver: fake
    image_backend: rbd
  - name: vc
    count: 1
    driver: vmware
    capacity: {vcpus: 16, memory_mb: 65536, disk_gb: 500}
  - name: bm
    count: 2
    driver: ironic
    resource_class: baremetal-gold
    traits: [CUSTOM_RAID10]
images:
  - name: cirros
    disk_format: qcow2
    properties: {hw_vif_model: virtio, "trait:CUSTOM_GOLD": required}
  - name: win
    disk_format: vmdk
flavors:
  - name: small
    vcpus: 1
    ram: 512
    extra_specs: {"trait:CUSTOM_GOLD": required}
workload:
  order: shuffled
  boots:
    - {image: cirros, flavor: small, count: 3}
    - {image: win, flavor: small, count: 2}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cloud.yaml"
    path.write_text(text)
    return path


def line_of(text: str, fragment: str) -> int:
    """The 1-based line of the first line of ``text`` containing ``fragment``."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if fragment in line)


def test_bundled_example_loads() -> None:
    cloud = load_cloud(BUNDLED_EXAMPLE)
    assert isinstance(cloud, CloudDescription)
    assert {g.driver for g in cloud.host_groups} >= {"fake", "vmware", "ironic"}
    assert 40 <= cloud.workload.total <= 60
    assert len(boots(cloud)) == cloud.workload.total
    images = {i.name: i for i in cloud.images}
    assert images["dos-ide"].properties == {"hw_disk_bus": "ide"}
    assert {i.disk_format for i in cloud.images} >= {"qcow2", "raw", "vmdk"}


def test_large_example_loads_as_a_burst_on_simulated_hosts() -> None:
    cloud = load_cloud(EXAMPLES["large"])
    assert sum(g.count for g in cloud.host_groups) == 2000
    assert {g.driver for g in cloud.host_groups} == {"fake", "vmware", "ironic"}
    assert cloud.workload.total == len(boots(cloud)) == 10000
    assert cloud.workload.concurrency == 64
    assert EXAMPLES["small"] == BUNDLED_EXAMPLE
    assert load_cloud(BUNDLED_EXAMPLE).workload.concurrency == 1


def test_concurrency_out_of_range_is_refused(tmp_path: Path) -> None:
    text = GOOD.replace("workload:\n", "workload:\n  concurrency: 0\n", 1)
    assert text != GOOD
    with pytest.raises(CloudError, match="concurrency"):
        load_cloud(write(tmp_path, text))


def test_good_file_loads(tmp_path: Path) -> None:
    cloud = load_cloud(write(tmp_path, GOOD))
    assert cloud.name == "tiny" and cloud.seed == 7
    assert cloud.source == str(tmp_path / "cloud.yaml")
    kvm, ceph, vc, bm = cloud.host_groups
    assert kvm.traits == ("COMPUTE_NET_VIF_MODEL_VIRTIO", "CUSTOM_GOLD")
    assert ceph.image_backend == "rbd"
    assert vc.capacity.vcpus == 16
    assert bm.resource_class == "baremetal-gold"
    assert cloud.flavors[0].extra_specs == {"trait:CUSTOM_GOLD": "required"}
    assert cloud.workload.total == 5


# (what the case changes: old -> new text, the fragment of the line named, the message)
BAD = [
    ("driver: vmware", "driver: xen", "driver: xen",
     r"host_groups\[2\] \(group vc\)\.driver: unknown driver 'xen'; allowed: fake, vmware, ironic, "
     r"libvirt$"),
    ("hw_vif_model: virtio", "hw_vif_model: virtio9", "hw_vif_model",
     r"images\[0\]\.properties\.hw_vif_model: hw_vif_model: 'virtio9' is not valid; "
     r"allowed: virtio, ne2k_pci"),
    ("traits: [CUSTOM_RAID10]", "traits: [RAID10]", "traits: [RAID10]",
     r"host_groups\[3\] \(group bm\)\."
     r"traits\[0\]: 'RAID10' is not a trait; allowed: an os-traits name "
     r"or CUSTOM_"),
    ('"trait:CUSTOM_GOLD": required}\n  - name: win',
     '"trait:gold": required}\n  - name: win', "trait:gold",
     r"images\[0\]\.properties\[\"trait:gold\"\]: 'gold' is not a trait; allowed:"),
    ('"trait:CUSTOM_GOLD": required}\n  - name: win',
     '"trait:CUSTOM_GOLD": preferred}\n  - name: win', "preferred",
     r"'preferred' is not valid; allowed: required"),
    ('extra_specs: {"trait:CUSTOM_GOLD": required}',
     'extra_specs: {"trait:COMPUTE_NOPE": required}', "COMPUTE_NOPE",
     r"flavors\[0\]\.extra_specs\[\"trait:COMPUTE_NOPE\"\]: trait:COMPUTE_NOPE: "
     r"'COMPUTE_NOPE' is not a trait; allowed:"),
    ('extra_specs: {"trait:CUSTOM_GOLD": required}',
     'extra_specs: {"hw:cpu_policy": eager}', "cpu_policy",
     r"hw:cpu_policy: 'eager' is not valid; allowed: shared, dedicated, mixed"),
    ("{image: win, flavor: small", "{image: ubuntu, flavor: small", "image: ubuntu",
     r"workload\.boots\[1\]\.image: unknown image 'ubuntu'; allowed: cirros, win"),
    ("{image: win, flavor: small", "{image: win, flavor: huge", "flavor: huge",
     r"workload\.boots\[1\]\.flavor: unknown flavor 'huge'; allowed: small"),
    ("    count: 1\n    driver: vmware", "    count: 1\n    colour: red\n    driver: vmware",
     "colour", r"host_groups\[2\] \(group vc\)\."
               r"colour: unknown key 'colour'; allowed: name, count, "
     r"driver"),
    ("seed: 7", "seed: 7\nseeds: 8", "seeds", r"seeds: unknown key 'seeds'; allowed: name,"),
    ("    count: 2\n    driver: fake", "    count: 0\n    driver: fake", "count: 0",
     r"host_groups\[0\] \(group kvm\)\.count: 0 is not valid; allowed: an integer of 1 or more"),
    ("seed: 7", "seed: seven", "seed", r"seed: 'seven' is not valid; allowed: an integer"),
    ("  - name: vc\n    count: 1", "  - name: kvm  # again\n    count: 1", "# again",
     r"host_groups\[2\] \(group kvm\)\.name: 'kvm' is already the name of "
     r"host_groups\[0\] \(line 4\)"),
    ("    driver: vmware\n", "    driver: vmware\n    image_types: [vmdk]\n", "image_types",
     r"a vmware group has no image_types; allowed: image_types in fake groups"),
    ("    driver: vmware\n", "    driver: vmware\n    traits: [CUSTOM_A]\n", "CUSTOM_A",
     r"host_groups\[2\] \(group vc\)\."
     r"traits: a vmware group has no traits; allowed: traits in fake and "
     r"ironic groups"),
    ("    image_backend: rbd\n", "    image_backend: rbd\n    image_types: [qcow2]\n",
     "image_types: [qcow2]", r"image_backend rbd cannot take qcow2; allowed: aki, ami, ari, "
     r"iso, raw"),
    ("unsupported_traits: [COMPUTE_STORAGE_BUS_IDE]",
     "unsupported_traits: [CUSTOM_GOLD]", "unsupported_traits",
     r"CUSTOM_GOLD also in traits"),
    ("  order: shuffled\n", "  order: random\n", "order: random",
     r"workload\.order: 'random' is not valid; allowed: sequential, shuffled"),
    ("  order: shuffled\n", "  order: shuffled\n  mix: {total: 3, weights: "
     "[{image: win, flavor: small, weight: 1}]}\n", "workload:",
     r"workload: both boots and mix are given; allowed: exactly one"),
    ("    disk_format: vmdk", "    disk_format: vmdkx", "vmdkx",
     r"images\[1\]\.disk_format: 'vmdkx' is not valid; allowed: ami, ari"),
    ("    vcpus: 1\n", "", "  - name: small",
     r"flavors\[0\]: the key 'vcpus' is missing; required: name, vcpus, ram"),
    ("    count: 2\n    driver: fake", "    count: 2\n    count: 3\n    driver: fake",
     "count: 3", r"host_groups\[0\]\.count: the key 'count' is given twice \(first on "
     r"line 5\)"),
    ("  - name: win\n", "  - name: win\n   disk: [\n", "disk: [",
     r"not valid YAML"),
]


@pytest.mark.parametrize(("old", "new", "fragment", "message"), BAD,
                         ids=[case[1].strip()[:40] for case in BAD])
def test_bad_input_names_file_line_and_what_is_allowed(
        tmp_path: Path, old: str, new: str, fragment: str, message: str) -> None:
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    path = write(tmp_path, text)
    with pytest.raises(CloudError) as caught:
        load_cloud(path)
    first = str(caught.value).splitlines()[0]
    prefix = f"{path}:{line_of(text, fragment)}: "
    assert first.startswith(prefix), first
    assert re.search(message, first[len(prefix):]), first


def test_every_problem_is_reported_in_file_order(tmp_path: Path) -> None:
    text = GOOD.replace("driver: vmware", "driver: xen").replace("seed: 7", "seed: x")
    path = write(tmp_path, text)
    with pytest.raises(CloudError) as caught:
        load_cloud(path)
    assert [p.line for p in caught.value.problems] == [line_of(text, "seed: x"),
                                                       line_of(text, "driver: xen")]


def test_empty_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(CloudError, match=r":1: the file is empty; allowed: a mapping"):
        load_cloud(write(tmp_path, "# nothing\n"))
    with pytest.raises(CloudError, match=r":1: cannot read the cloud file"):
        load_cloud(tmp_path / "missing.yaml")
    with pytest.raises(CloudError, match=r":1: the file: a list is not valid; allowed: a "
                                         r"mapping with keys name"):
        load_cloud(write(tmp_path, "- 1\n"))
    with pytest.raises(CloudError) as caught:
        load_cloud(write(tmp_path, "name: x\nseed: 1\n"))
    assert [p.message.split(";")[0] for p in caught.value.problems] == [
        f"the file: the key {key!r} is missing"
        for key in ("host_groups", "images", "flavors", "workload")]


def test_api_bodies_and_another_seed(tmp_path: Path) -> None:
    cloud = load_cloud(write(tmp_path, GOOD))
    assert flavor_json(cloud.flavors[0]) == {
        "name": "small", "vcpus": 1, "ram": 512, "disk": 0,
        "extra_specs": {"trait:CUSTOM_GOLD": "required"}}
    assert image_json(cloud.images[0]) == {
        "name": "cirros", "disk_format": "qcow2", "container_format": "bare",
        "properties": {"hw_vif_model": "virtio", "trait:CUSTOM_GOLD": "required"}}
    reseeded = with_seed(cloud, 8)
    assert reseeded.seed == 8 and reseeded.host_groups == cloud.host_groups


def test_mix_is_apportioned_by_weight(tmp_path: Path) -> None:
    text = GOOD.replace(
        "  boots:\n    - {image: cirros, flavor: small, count: 3}\n"
        "    - {image: win, flavor: small, count: 2}\n",
        "  mix:\n    total: 10\n    weights:\n"
        "      - {image: cirros, flavor: small, weight: 2}\n"
        "      - {image: win, flavor: small, weight: 1}\n")
    cloud = load_cloud(write(tmp_path, text))
    assert [(i.image, i.count) for i in cloud.workload.items] == [("cirros", 7), ("win", 3)]


def test_boots_are_deterministic_for_the_seed(tmp_path: Path) -> None:
    cloud = load_cloud(BUNDLED_EXAMPLE)
    first, again = boots(cloud), boots(load_cloud(BUNDLED_EXAMPLE))
    assert first == again
    assert [b.index for b in first] == list(range(cloud.workload.total))
    listed = [(i.image, i.flavor) for i in cloud.workload.items for _ in range(i.count)]
    played = [(b.image, b.flavor) for b in first]
    assert sorted(played) == sorted(listed) and played != listed   # shuffled
    other = load_cloud(write(tmp_path, BUNDLED_EXAMPLE.read_text().replace(
        f"seed: {cloud.seed}", f"seed: {cloud.seed + 1}")))
    assert [(b.image, b.flavor) for b in boots(other)] != played
    sequential = load_cloud(write(tmp_path, GOOD.replace("order: shuffled",
                                                         "order: sequential")))
    assert [b.image for b in boots(sequential)] == ["cirros"] * 3 + ["win"] * 2


def test_host_plans_of_fake_vmware_and_ironic(tmp_path: Path) -> None:
    cloud = load_cloud(write(tmp_path, GOOD))
    plans = host_plans(cloud, libvirt_real=False, workdir=tmp_path / "run")
    names = [plan.name for _, plan in plans]
    assert names == ["kvm-1", "kvm-2", "ceph-1", "vc-1", "bm-1", "bm-2"]
    by_name = {plan.name: (group, plan) for group, plan in plans}
    kvm = by_name["kvm-1"][1].options
    assert kvm[("fake_driver", "traits")] == ["COMPUTE_NET_VIF_MODEL_VIRTIO", "CUSTOM_GOLD"]
    assert kvm[("fake_driver", "unsupported_traits")] == ["COMPUTE_STORAGE_BUS_IDE"]
    assert "qcow2" in kvm[("fake_driver", "supported_image_types")]  # type: ignore[operator]
    ceph = by_name["ceph-1"][1].options
    assert ceph[("fake_driver", "supported_image_types")] == backend_image_types("rbd")
    assert "qcow2" not in backend_image_types("rbd")
    vc_group, vc = by_name["vc-1"]
    assert vc_group.name == "vc" and vc.driver == "vmware"
    simulation = json.loads(Path(str(vc.options[("vmware", "simulation_file")])).read_text())
    assert simulation["hosts"][0]["cpu_threads"] == 16
    nodes = [json.loads(Path(str(by_name[n][1].options[("ironic", "simulation_file")]))
                        .read_text())[0] for n in ("bm-1", "bm-2")]
    assert nodes[0]["uuid"] != nodes[1]["uuid"]
    assert nodes[0]["resource_class"] == "baremetal-gold"
    again = host_plans(cloud, libvirt_real=False, workdir=tmp_path / "again")
    assert json.loads(Path(str(again[4][1].options[("ironic", "simulation_file")]))
                      .read_text())[0]["uuid"] == nodes[0]["uuid"]


def test_host_plans_start_agents_that_report_what_the_file_says(tmp_path: Path) -> None:
    """The plans' options are real: the agents start and placement holds their
    inventories and traits."""
    cloud = load_cloud(write(tmp_path, GOOD))
    plans = [plan for _, plan in host_plans(cloud, libvirt_real=False,
                                            workdir=tmp_path / "run")]
    embedded = EmbeddedCloud(tmp_path / "cloud", plans, api_port=0, placement_port=0).start()
    try:
        placement = PlacementClient(embedded.placement_url, "admin")
        providers = {p.name: p.uuid for p in placement.providers()}

        def traits(name: str) -> set[str]:
            return set(placement.traits(providers[name]))

        def inventory(name: str) -> dict[str, int]:
            return {rc: inv.total for rc, inv in placement.inventories(providers[name]).items()}

        assert {"CUSTOM_GOLD", "COMPUTE_IMAGE_TYPE_QCOW2"} <= traits("kvm-1")
        assert "COMPUTE_STORAGE_BUS_IDE" not in traits("kvm-1")
        assert "COMPUTE_IMAGE_TYPE_RAW" in traits("ceph-1")
        assert "COMPUTE_IMAGE_TYPE_QCOW2" not in traits("ceph-1")
        vmware = [n for n in providers if n.startswith("domain-c8.")]
        assert len(vmware) == 1 and "COMPUTE_IMAGE_TYPE_VMDK" in traits(vmware[0])
        assert inventory(vmware[0])["VCPU"] == 16
        metal = [n for n in providers if n not in ("kvm-1", "kvm-2", "ceph-1", vmware[0])]
        assert len(metal) == 2
        assert all(inventory(n) == {"CUSTOM_BAREMETAL_GOLD": 1} for n in metal)
        assert all("CUSTOM_RAID10" in traits(n) for n in metal)
    finally:
        embedded.stop()


def test_documentation_names_every_key() -> None:
    """docs/cloud-file.md documents each key the schema allows."""
    from moorage.run.schema import CLOUD_SCHEMA, FLAVOR, HOST_GROUP, IMAGE, MIX, WORKLOAD
    doc = (Path(__file__).parents[3] / "docs" / "cloud-file.md").read_text()
    for schema in (CLOUD_SCHEMA, HOST_GROUP, IMAGE, FLAVOR, WORKLOAD, MIX):
        for key in schema["properties"]:
            assert f"`{key}`" in doc, key
    assert BUNDLED_EXAMPLE.read_text() in doc, "the doc shows the bundled example as it is"


# Architecture of fake groups: each case changes one line of GOOD, as BAD does.
BAD_ARCHITECTURE = [
    ("    image_backend: rbd\n", "    image_backend: rbd\n    architecture: arm64\n",
     "arm64", r"host_groups\[1\] \(group ceph\)\."
              r"architecture: 'arm64' is not valid; allowed: alpha, "
     r"armv6, .*aarch64"),
    ("    driver: vmware\n", "    driver: vmware\n    architecture: aarch64\n",
     "architecture", r"host_groups\[2\] \(group vc\)\."
                     r"architecture: a vmware group has no architecture; "
     r"allowed: architecture in fake groups"),
    # a fake host reports HW_ARCH_<its architecture> itself: its traits may not disagree
    ("traits: [COMPUTE_NET_VIF_MODEL_VIRTIO, CUSTOM_GOLD]",
     "traits: [COMPUTE_NET_VIF_MODEL_VIRTIO, HW_ARCH_AARCH64]", "HW_ARCH_AARCH64",
     r"host_groups\[0\] \(group kvm\)\."
     r"traits\[1\]: HW_ARCH_AARCH64 contradicts architecture x86_64; "
     r"allowed: HW_ARCH_X86_64 or none \(the host reports it itself\)"),
    ("unsupported_traits: [COMPUTE_STORAGE_BUS_IDE]",
     "unsupported_traits: [HW_ARCH_X86_64]", "HW_ARCH_X86_64",
     r"host_groups\[0\] \(group kvm\)\."
     r"unsupported_traits\[0\]: HW_ARCH_X86_64 contradicts architecture "
     r"x86_64; allowed: another HW_ARCH_\* trait or none"),
    ("    image_backend: rbd\n", "    image_backend: rbd\n    architecture: armv7l\n"
     "    traits: [HW_ARCH_ARMV7]\n", "HW_ARCH_ARMV7",
     r"HW_ARCH_ARMV7 contradicts architecture armv7l; allowed: none \(os-traits has no "
     r"trait for armv7l\)"),
]


@pytest.mark.parametrize(("old", "new", "fragment", "message"), BAD_ARCHITECTURE,
                         ids=[case[1].strip()[:40] for case in BAD_ARCHITECTURE])
def test_bad_architecture_names_file_line_and_what_is_allowed(
        tmp_path: Path, old: str, new: str, fragment: str, message: str) -> None:
    test_bad_input_names_file_line_and_what_is_allowed(tmp_path, old, new, fragment, message)


def test_fake_groups_plan_their_architecture(tmp_path: Path) -> None:
    text = GOOD.replace("    image_backend: rbd\n",
                        "    image_backend: rbd\n    architecture: aarch64\n"
                        "    traits: [HW_ARCH_AARCH64]\n")
    cloud = load_cloud(write(tmp_path, text))
    assert [g.architecture for g in cloud.host_groups] == [None, "aarch64", None, None]
    plans = {plan.name: plan.options
             for _, plan in host_plans(cloud, libvirt_real=False, workdir=tmp_path / "run")}
    assert plans["kvm-1"][("fake_driver", "architecture")] == "x86_64"
    assert plans["ceph-1"][("fake_driver", "architecture")] == "aarch64"
    assert ("fake_driver", "architecture") not in plans["vc-1"]


def test_bundled_example_has_hosts_and_images_of_other_architectures() -> None:
    """The example shows what the architecture checks do: aarch64 hosts and images,
    and an s390x image no host runs."""
    cloud = load_cloud(BUNDLED_EXAMPLE)
    hosts = {g.architecture or "x86_64" for g in cloud.host_groups if g.driver == "fake"}
    images = {i.properties.get("hw_architecture") for i in cloud.images}
    assert {"x86_64", "aarch64"} <= hosts
    assert {"aarch64", "s390x"} <= images and "s390x" not in hosts


# A fake group standing in for a libvirt machine type may not contradict the libvirt
# driver's report of that machine type on the recorded QEMU.
BAD_STAND_IN = [
    ("    traits: [COMPUTE_NET_VIF_MODEL_VIRTIO, CUSTOM_GOLD]\n"
     "    unsupported_traits: [COMPUTE_STORAGE_BUS_IDE]\n",
     "    machine_type: q35\n    traits: [COMPUTE_NET_VIF_MODEL_VIRTIO, CUSTOM_GOLD]\n"
     "    unsupported_traits: [COMPUTE_STORAGE_BUS_IDE, COMPUTE_NET_VIF_MODEL_E1000]\n",
     "unsupported_traits",
     r"host_groups\[0\] \(group kvm\)\.unsupported_traits\[1\]: the libvirt driver reports "
     r"COMPUTE_NET_VIF_MODEL_E1000 supported on x86_64 q35 \(x86_64 q35 domain capabilities: "
     r"e1000 \(PCI\) in qemu-system-x86_64 7\.2\.22\); allowed: what it reports, or nothing"),
    ("    traits: [COMPUTE_NET_VIF_MODEL_VIRTIO, CUSTOM_GOLD]\n",
     "    machine_type: q35\n    traits: [COMPUTE_STORAGE_BUS_IDE, CUSTOM_GOLD]\n",
     "traits: [COMPUTE_STORAGE_BUS_IDE",
     r"\.traits\[0\]: the libvirt driver reports COMPUTE_STORAGE_BUS_IDE unsupported on "
     r"x86_64 q35"),
    ("    image_backend: rbd\n", "    image_backend: rbd\n    machine_type: virt\n",
     "machine_type: virt",
     r"host_groups\[1\] \(group ceph\)\.machine_type: no libvirt host of x86_64 virt is "
     r"recorded to check a fake group against; allowed: pc, pc-i440fx-7.2, pc-q35-7.2, q35"),
    ("    image_backend: rbd\n",
     "    image_backend: rbd\n    architecture: aarch64\n    machine_type: virt\n",
     "machine_type: virt",
     r"machine_type: no libvirt host of aarch64 virt is recorded to check a fake group "
     r"against; allowed: none for a fake aarch64 group"),
]


@pytest.mark.parametrize(("old", "new", "fragment", "message"), BAD_STAND_IN,
                         ids=[case[2] for case in BAD_STAND_IN])
def test_a_stand_in_that_contradicts_libvirt_is_refused(
        tmp_path: Path, old: str, new: str, fragment: str, message: str) -> None:
    test_bad_input_names_file_line_and_what_is_allowed(tmp_path, old, new, fragment, message)


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_bundled_stand_ins_report_what_libvirt_reports(example: str, tmp_path: Path) -> None:
    """Every x86_64 fake group of the bundled examples names the machine type it stands
    in for, and its hosts report, of the families a machine type decides, exactly what
    the libvirt driver reports for that machine type (so an example cannot invent a
    limitation: the large example's q35 hosts once refused e1000)."""
    from moorage.conf import load_config
    from moorage.virt.fake import FakeHost
    from moorage.virt.libvirt import recorded

    cloud = load_cloud(EXAMPLES[example])
    stand_ins = [g for g in cloud.host_groups
                 if g.driver == "fake" and (g.architecture or "x86_64") == "x86_64"]
    assert stand_ins and all(g.machine_type for g in stand_ins)
    plans = {plan.name: plan.options
             for _, plan in host_plans(cloud, libvirt_real=False, workdir=tmp_path / "run")}
    for group in stand_ins:
        assert group.machine_type is not None
        options = plans[group.host_names()[0]]
        conf = load_config(overrides=[(g, k, v) for (g, k), v in options.items()])
        host = FakeHost.from_config(conf)
        libvirt = recorded.machine_type_reports("x86_64", group.machine_type)
        reported = {t: on for t, on in host.traits.items() if t.startswith(
            recorded.MACHINE_TYPE_FAMILIES)}
        assert reported == {t: r.supported for t, r in libvirt.items()}, group.name
    if example == "large":
        q35 = next(g for g in stand_ins if g.name == "kvm-q35")
        assert q35.machine_type == "q35"
        traits = plans["kvm-q35-1"][("fake_driver", "traits")]
        assert isinstance(traits, list) and "COMPUTE_NET_VIF_MODEL_E1000" in traits
