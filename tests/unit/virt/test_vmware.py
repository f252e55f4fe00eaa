"""The VMware driver on its simulated vCenter: node, inventories, traits, late checks."""

from __future__ import annotations

import json
from pathlib import Path

import os_traits
import pytest

from moorage.model.inventory import Inventory
from moorage.virt.driver import GuestNotFound, HypervisorUnavailable, UnsupportedHardware
from moorage.virt.loader import load_driver
from moorage.virt.report import Source
from moorage.virt.switches import FlavorImageConflict
from moorage.virt.vmware.driver import VMwareDriver
from moorage.virt.vmware.simulator import (
    SimulatedDatastore,
    SimulatedEsxHost,
    VCenterSimulator,
)
from tests.unit.virt.builders import by_trait, config, guest

VCENTER = "6f1c0f4e-6a43-4a1f-9b8e-2d7f3c9a5e10"
NODE = f"domain-c8.{VCENTER}"


def cluster(**kwargs: object) -> VCenterSimulator:
    """The default simulated cluster (two 32-thread 128 GiB hosts, one 2 TiB datastore)."""
    return VCenterSimulator(vcenter_uuid=VCENTER, **kwargs)  # type: ignore[arg-type]


def driver(simulator: VCenterSimulator | None = None, **options: object) -> VMwareDriver:
    return VMwareDriver(config(**options), simulator or cluster())


def test_loader_builds_the_driver_on_the_default_simulation() -> None:
    for spelling in ("vmware", "vmwareapi.VMwareVCDriver"):
        loaded = load_driver(config(DEFAULT__compute_driver=spelling,
                                    vmware__cluster_name="prod"))
        assert isinstance(loaded, VMwareDriver)
        assert loaded.cluster == "prod"
        loaded.init_host()
        assert loaded.nodes() == [f"domain-c8.{loaded.simulator.vcenter_uuid}"]


def test_inventories_sum_the_usable_hosts_and_datastores() -> None:
    [provider] = driver().provider_tree(NODE)
    assert provider.name == NODE and provider.parent is None
    assert dict(provider.inventories) == {
        "VCPU": Inventory.of(64, max_unit=32, allocation_ratio=4.0),
        "MEMORY_MB": Inventory.of(262144, reserved=512, max_unit=131072),
        "DISK_GB": Inventory.of(2048, max_unit=2048),
    }


def test_hosts_and_datastores_that_cannot_be_used_do_not_count() -> None:
    simulator = cluster(
        hosts=[SimulatedEsxHost("big", 64, 262144, in_maintenance=True),
               SimulatedEsxHost("lost", 48, 196608, connected=False),
               SimulatedEsxHost("a", 16, 65536), SimulatedEsxHost("b", 24, 32768)],
        datastores=[SimulatedDatastore("ds-vmfs", 1000, 100),
                    SimulatedDatastore("ds-nfs", 500, 400, type="NFS"),
                    SimulatedDatastore("ds-gone", 9000, 9000, accessible=False),
                    SimulatedDatastore("ds-maint", 9000, 9000, in_maintenance=True),
                    SimulatedDatastore("ds-cifs", 9000, 9000, type="CIFS")])
    inventories = driver(simulator, DEFAULT__reserved_host_disk_mb=2049,
                         DEFAULT__reserved_host_cpus=2).provider_tree(NODE)[0].inventories
    assert inventories["VCPU"] == Inventory.of(40, reserved=2, max_unit=24, allocation_ratio=4.0)
    assert inventories["MEMORY_MB"] == Inventory.of(98304, reserved=512, max_unit=65536)
    # max_unit: the most free space on one datastore; reserved MB rounded up to GB
    assert inventories["DISK_GB"] == Inventory.of(1500, reserved=3, max_unit=400)


@pytest.mark.parametrize(("regex", "total", "max_unit"), [
    ("", 1500, 400),
    ("ds-vm", 1000, 100),
    ("^ds-(vmfs|nfs)$", 1500, 400),
])
def test_datastore_regex_chooses_the_datastores(regex: str, total: int, max_unit: int) -> None:
    simulator = cluster(datastores=[SimulatedDatastore("ds-vmfs", 1000, 100),
                                    SimulatedDatastore("ds-nfs", 500, 400, type="NFS")])
    disk = driver(simulator, vmware__datastore_regex=regex).provider_tree(NODE)[0].inventories
    assert disk["DISK_GB"] == Inventory.of(total, max_unit=max_unit)


def test_a_cluster_with_nothing_usable_offers_nothing_rather_than_zero() -> None:
    simulator = cluster(hosts=[SimulatedEsxHost("a", 16, 65536, in_maintenance=True)],
                        datastores=[SimulatedDatastore("full", 100, 0)])
    inventories = driver(simulator).provider_tree(NODE)[0].inventories
    # a full datastore still has capacity; max_unit cannot go below 1 in placement
    assert dict(inventories) == {"DISK_GB": Inventory.of(100, max_unit=1)}


def test_bad_datastore_regex_names_the_option() -> None:
    with pytest.raises(ValueError, match=r"\[vmware\] datastore_regex"):
        driver(vmware__datastore_regex="(")


VIF_ON = {os_traits.COMPUTE_NET_VIF_MODEL_E1000, os_traits.COMPUTE_NET_VIF_MODEL_E1000E,
          os_traits.COMPUTE_NET_VIF_MODEL_PCNET, os_traits.COMPUTE_NET_VIF_MODEL_SRIOV,
          os_traits.COMPUTE_NET_VIF_MODEL_VMXNET, os_traits.COMPUTE_NET_VIF_MODEL_VMXNET3}


def test_trait_reports_of_the_default_cluster() -> None:
    reports = by_trait(driver().trait_reports(NODE))
    on = {t for t, r in reports.items() if r.supported}
    assert {t for t in on if t.startswith("COMPUTE_IMAGE_TYPE_")} == {
        os_traits.COMPUTE_IMAGE_TYPE_ISO, os_traits.COMPUTE_IMAGE_TYPE_VMDK}
    # every image type is mentioned: upstream's table has all eleven
    assert len([t for t in reports if t.startswith("COMPUTE_IMAGE_TYPE_")]) == 11
    assert {t for t in on if t.startswith("COMPUTE_NET_VIF_MODEL_")} == VIF_ON
    assert {t for t in on if t.startswith("COMPUTE_STORAGE_BUS_")} == {
        os_traits.COMPUTE_STORAGE_BUS_IDE, os_traits.COMPUTE_STORAGE_BUS_SCSI}
    assert os_traits.HW_ARCH_X86_64 in on
    assert os_traits.COMPUTE_NET_ATTACH_INTERFACE in on
    assert not reports[os_traits.COMPUTE_VOLUME_MULTI_ATTACH].supported
    # every NIC model and disk bus an image can name is reported, on or off
    assert {t for t in reports if t.startswith("COMPUTE_NET_VIF_MODEL_")} == set(
        os_traits.get_traits("COMPUTE_NET_VIF_MODEL_"))
    assert {t for t in reports if t.startswith("COMPUTE_STORAGE_BUS_")} == set(
        os_traits.get_traits("COMPUTE_STORAGE_BUS_"))


@pytest.mark.parametrize(("trait", "supported", "source", "detail"), [
    (os_traits.COMPUTE_NET_VIF_MODEL_VMXNET3, True, Source.HYPERVISOR,
     "cluster cluster1: VirtualVmxnet3"),
    # a model vSphere has, but the simulated cluster does not offer
    (os_traits.COMPUTE_NET_VIF_MODEL_SRIOV, False, Source.HYPERVISOR,
     "cluster cluster1 does not offer it"),
    # a model vSphere never has (libvirt's)
    (os_traits.COMPUTE_NET_VIF_MODEL_VIRTIO, False, Source.DRIVER_TABLE,
     "vSphere has no virtio NIC"),
    (os_traits.COMPUTE_STORAGE_BUS_SATA, True, Source.HYPERVISOR,
     "cluster cluster1: VirtualAHCIController"),
    (os_traits.COMPUTE_STORAGE_BUS_IDE, False, Source.HYPERVISOR,
     "cluster cluster1 does not offer it"),
    (os_traits.COMPUTE_STORAGE_BUS_VIRTIO, False, Source.DRIVER_TABLE,
     "vSphere has no virtio disk bus"),
    (os_traits.HW_ARCH_X86_64, True, Source.DRIVER_TABLE, "ESXi hosts are x86_64"),
    (os_traits.COMPUTE_IMAGE_TYPE_VMDK, True, Source.DRIVER_TABLE, "supports_image_type_vmdk"),
])
def test_reports_say_where_they_come_from(trait: str, supported: bool, source: Source,
                                          detail: str) -> None:
    simulator = cluster(nic_devices=("VirtualE1000", "VirtualVmxnet3"),
                        disk_controllers=("ParaVirtualSCSIController", "VirtualAHCIController"))
    report = by_trait(driver(simulator).trait_reports(NODE))[trait]
    assert (report.supported, report.source, report.detail) == (supported, source, detail)


def test_exclude_list_turns_an_image_type_off_from_configuration() -> None:
    reports = by_trait(driver(compute__image_type_exclude_list=["iso"]).trait_reports(NODE))
    iso = reports[os_traits.COMPUTE_IMAGE_TYPE_ISO]
    assert (iso.supported, iso.source) == (False, Source.CONFIGURATION)
    assert reports[os_traits.COMPUTE_IMAGE_TYPE_VMDK].supported


@pytest.mark.parametrize(("disk_format", "properties", "nic", "controller"), [
    # upstream's defaults: e1000 on an LSI Logic SCSI controller
    ("vmdk", {}, "VirtualE1000", "VirtualLsiLogicController"),
    ("vmdk", {"hw_vif_model": "vmxnet3", "hw_disk_bus": "ide"},
     "VirtualVmxnet3", "VirtualIDEController"),
    # vSphere's own names for NIC models are accepted
    ("vmdk", {"hw_vif_model": "VirtualE1000e"}, "VirtualE1000e", "VirtualLsiLogicController"),
    ("vmdk", {"hw_disk_bus": "scsi", "hw_scsi_model": "vmpvscsi"},
     "VirtualE1000", "ParaVirtualSCSIController"),
    ("vmdk", {"hw_scsi_model": "lsisas1068"}, "VirtualE1000", "VirtualLsiLogicSASController"),
    ("iso", {"hw_cdrom_bus": "ide"}, "VirtualE1000", "VirtualLsiLogicController"),
    ("vmdk", {"hw_architecture": "i386"}, "VirtualE1000", "VirtualLsiLogicController"),
    # a NIC model trait the flavor or image requires is the adapter
    ("vmdk", {"trait:COMPUTE_NET_VIF_MODEL_VMXNET3": "required"}, "VirtualVmxnet3",
     "VirtualLsiLogicController"),
    ("vmdk", {"trait:COMPUTE_NET_VIF_MODEL_PCNET": "required", "hw_vif_model": "pcnet"},
     "VirtualPCNet32", "VirtualLsiLogicController"),
    # the one video model and firmware vSphere builds, asked for
    ("vmdk", {"hw_video_model": "vmvga", "hw_firmware_type": "bios"}, "VirtualE1000",
     "VirtualLsiLogicController"),
])
def test_spawn_creates_the_vm_with_the_devices_asked(disk_format: str,
                                                     properties: dict[str, str], nic: str,
                                                     controller: str) -> None:
    simulator = cluster(datastores=[SimulatedDatastore("small", 100, 10),
                                    SimulatedDatastore("roomy", 500, 300)])
    vmware = driver(simulator)
    server = guest(NODE, disk_format, properties)
    vmware.spawn(server)
    assert vmware.guests() == [server.uuid]
    vm = simulator.vms[server.uuid]
    assert (vm.nic_device, vm.disk_controller, vm.datastore) == (nic, controller, "roomy")
    assert (vm.vcpus, vm.memory_mb, vm.disk_gb, vm.power_state) == (1, 512, 1, "poweredOn")
    # the inventory is placement's business: nothing else changes
    assert simulator.datastores[1].free_gb == 300


@pytest.mark.parametrize(("disk_format", "properties", "extra_specs", "feature"), [
    ("qcow2", {}, {}, "disk_format=qcow2"),
    ("raw", {}, {}, "disk_format=raw"),
    ("vmdk", {"hw_vif_model": "virtio"}, {}, "hw_vif_model=virtio"),
    ("vmdk", {"hw_vif_model": "igb"}, {}, "hw_vif_model=igb"),
    ("vmdk", {"hw_disk_bus": "virtio"}, {}, "hw_disk_bus=virtio"),
    ("vmdk", {"hw_disk_bus": "sata"}, {}, "hw_disk_bus=sata"),
    ("vmdk", {"hw_scsi_model": "virtio-scsi"}, {}, "hw_scsi_model=virtio-scsi"),
    ("iso", {"hw_cdrom_bus": "sata"}, {}, "hw_cdrom_bus=sata"),
    ("vmdk", {"hw_architecture": "aarch64"}, {}, "hw_architecture=aarch64"),
    # required traits the cluster reports unsupported, from flavor or image
    ("vmdk", {}, {"trait:COMPUTE_NET_VIF_MODEL_VIRTIO": "required"},
     "COMPUTE_NET_VIF_MODEL_VIRTIO"),
    ("vmdk", {"trait:COMPUTE_VOLUME_MULTI_ATTACH": "required"}, {},
     "COMPUTE_VOLUME_MULTI_ATTACH"),
    # what the driver never builds: refused, where it used to be silently dropped
    ("vmdk", {"hw_viommu_model": "intel"}, {}, "hw_viommu_model=intel"),
    ("vmdk", {"hw_sound_model": "ac97"}, {}, "hw_sound_model=ac97"),
    ("vmdk", {"hw_video_model": "qxl"}, {}, "hw_video_model=qxl"),
    ("vmdk", {"hw_firmware_type": "uefi"}, {}, "hw_firmware_type=uefi"),
    ("vmdk", {"hw_tpm_version": "2.0"}, {}, "hw_tpm_version=2.0"),
    ("vmdk", {"os_secure_boot": "required"}, {}, "os_secure_boot=required"),
    ("vmdk", {}, {"trait:COMPUTE_SOUND_MODEL_ICH9": "required"}, "COMPUTE_SOUND_MODEL_ICH9"),
    ("vmdk", {}, {"trait:COMPUTE_NET_VIRTIO_PACKED": "required"}, "COMPUTE_NET_VIRTIO_PACKED"),
])
def test_spawn_late_checks(disk_format: str, properties: dict[str, str],
                           extra_specs: dict[str, str], feature: str) -> None:
    simulator = cluster()
    vmware = driver(simulator)
    with pytest.raises(UnsupportedHardware) as caught:
        vmware.spawn(guest(NODE, disk_format, properties, extra_specs))
    assert caught.value.feature == feature
    assert feature in str(caught.value)
    assert simulator.vms == {}


def test_spawn_checks_follow_what_the_simulated_cluster_offers() -> None:
    simulator = cluster(nic_devices=("VirtualVmxnet3",),
                        disk_controllers=("VirtualIDEController", "VirtualAHCIController"))
    vmware = driver(simulator)
    # the defaults (e1000, LSI Logic) are not there: the error says they were defaults
    with pytest.raises(UnsupportedHardware, match="the default hw_vif_model=e1000"):
        vmware.spawn(guest(NODE, "vmdk"))
    with pytest.raises(UnsupportedHardware, match=r"hw_disk_bus=scsi .*offers ide, sata"):
        vmware.spawn(guest(NODE, "vmdk", {"hw_vif_model": "vmxnet3"}))
    server = guest(NODE, "vmdk", {"hw_vif_model": "vmxnet3", "hw_disk_bus": "sata"})
    vmware.spawn(server)
    assert simulator.vms[server.uuid].disk_controller == "VirtualAHCIController"


def test_a_nic_trait_and_another_nic_property_conflict() -> None:
    """Every host would refuse it alike: the build stops instead of rescheduling."""
    simulator = cluster()
    with pytest.raises(FlavorImageConflict, match=r"conflicting vif model: e1000 "
                       r"\(hw_vif_model\), vmxnet3 \(COMPUTE_NET_VIF_MODEL_VMXNET3\)"):
        driver(simulator).spawn(guest(NODE, "vmdk", {"hw_vif_model": "e1000"},
                                      {"trait:COMPUTE_NET_VIF_MODEL_VMXNET3": "required"}))
    assert simulator.vms == {}


def test_a_nic_trait_the_cluster_does_not_offer_names_the_trait() -> None:
    simulator = cluster(nic_devices=("VirtualE1000",))
    with pytest.raises(UnsupportedHardware, match=r"COMPUTE_NET_VIF_MODEL_VMXNET3: reported "
                       r"unsupported on domain-c8\.\S+ \(hypervisor: cluster cluster1 does not "
                       r"offer it\)"):
        driver(simulator).spawn(guest(NODE, "vmdk", {},
                                      {"trait:COMPUTE_NET_VIF_MODEL_VMXNET3": "required"}))


def test_an_excluded_image_type_is_refused_at_spawn() -> None:
    with pytest.raises(UnsupportedHardware, match="disk_format=iso"):
        driver(compute__image_type_exclude_list=["iso"]).spawn(guest(NODE, "iso"))


def test_destroy_removes_the_vm() -> None:
    simulator = cluster()
    vmware = driver(simulator)
    kept, removed = guest(NODE, "vmdk"), guest(NODE, "vmdk")
    vmware.spawn(kept)
    vmware.spawn(removed)
    vmware.destroy(removed.uuid)
    vmware.destroy(removed.uuid)
    assert vmware.guests() == [kept.uuid]
    assert list(simulator.vms) == [kept.uuid]


def test_an_unreachable_vcenter_reports_nothing_and_says_why() -> None:
    simulator = cluster()
    vmware = driver(simulator)
    simulator.make_unreachable("connection to vcenter.example.org:443 timed out")
    for call in (vmware.init_host,
                 lambda: vmware.provider_tree(NODE),
                 lambda: vmware.trait_reports(NODE),
                 lambda: vmware.spawn(guest(NODE, "vmdk")),
                 lambda: vmware.destroy("00000000-0000-4000-8000-000000000000"),
                 vmware.guests):
        with pytest.raises(HypervisorUnavailable, match="cluster1: connection to vcenter"):
            call()
    simulator.make_reachable()
    vmware.init_host()
    assert "VCPU" in vmware.provider_tree(NODE)[0].inventories


def test_simulation_file(tmp_path: Path) -> None:
    path = tmp_path / "vcenter.json"
    path.write_text(json.dumps({
        "vcenter_uuid": VCENTER,
        "hosts": [{"name": "esx-a", "cpu_threads": 8, "memory_mb": 16384}],
        "datastores": [{"name": "nfs-1", "capacity_gb": 300, "free_gb": 120, "type": "NFS"}],
        "nic_devices": ["VirtualVmxnet3"],
        "disk_controllers": ["VirtualIDEController"],
    }))
    loaded = VMwareDriver(config(vmware__simulation_file=str(path)))
    assert loaded.nodes() == [NODE]
    assert dict(loaded.provider_tree(NODE)[0].inventories) == {
        "VCPU": Inventory.of(8, allocation_ratio=4.0),
        "MEMORY_MB": Inventory.of(16384, reserved=512),
        "DISK_GB": Inventory.of(300, max_unit=120),
    }
    on = {r.trait for r in loaded.trait_reports(NODE) if r.supported}
    assert {t for t in on if t.startswith("COMPUTE_NET_VIF_MODEL_")} == {
        os_traits.COMPUTE_NET_VIF_MODEL_VMXNET3}


def test_simulation_file_saying_unreachable(tmp_path: Path) -> None:
    path = tmp_path / "vcenter.json"
    path.write_text(json.dumps({"unreachable": "certificate verify failed"}))
    with pytest.raises(HypervisorUnavailable, match="certificate verify failed"):
        VMwareDriver(config(vmware__simulation_file=str(path))).init_host()


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "Expecting property name"),
    ("[]", "expected a JSON object"),
    ('{"hosts": [{"name": "a"}]}', "cpu_threads"),
    ('{"clusters": []}', "unknown keys"),
    ('{"nic_devices": ["VirtualVirtio"]}', "no NIC device type"),
])
def test_bad_simulation_file_names_the_file_and_the_problem(tmp_path: Path, content: str,
                                                            message: str) -> None:
    path = tmp_path / "vcenter.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as caught:
        VMwareDriver(config(vmware__simulation_file=str(path)))
    assert str(path) in str(caught.value)


def test_unknown_node() -> None:
    with pytest.raises(LookupError, match=NODE):
        driver().provider_tree("domain-c9.elsewhere")


def test_power_actions_change_the_simulated_vms_power_state() -> None:
    simulator = cluster()
    vmware = driver(simulator)
    server = guest(NODE, "vmdk")
    vmware.spawn(server)
    vmware.power_off(server.uuid)
    assert simulator.vms[server.uuid].power_state == "poweredOff"
    assert vmware.guests() == [server.uuid]  # off, still there
    vmware.power_on(server.uuid)
    vmware.reboot(server.uuid, hard=False)  # no VMware Tools: a reset
    vm = simulator.vms[server.uuid]
    assert (vm.power_state, vm.boots) == ("poweredOn", 3)
    with pytest.raises(GuestNotFound):
        vmware.power_on("00000000-0000-4000-8000-00000000dead")
    with pytest.raises(NotImplementedError, match="console"):
        vmware.console_output(server.uuid)
    simulator.make_unreachable("vCenter is down")
    with pytest.raises(HypervisorUnavailable, match="vCenter is down"):
        vmware.power_off(server.uuid)
