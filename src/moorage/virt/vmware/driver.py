"""The VMware driver: one vCenter cluster is one node, here on a simulated vCenter.

What it reports follows upstream's vmwareapi driver: its capability table (iso
and vmdk images, the other image types not), HW_ARCH_X86_64, and inventories
read from the cluster — VCPU and MEMORY_MB summed over its usable ESXi hosts
(max_unit the largest host), DISK_GB over its usable datastores (max_unit the
most free space on one). Beyond upstream, it reports the NIC models and disk
buses its hosts offer as COMPUTE_NET_VIF_MODEL_* and COMPUTE_STORAGE_BUS_*
traits, True or False for every model an image can ask for, so that a
prefiltering scheduler sends it exactly the images its late checks accept.

It owns every guest-feature family (``virt.switches``) and keeps the promise
that a trait reported True is built: a NIC model named by ``hw_vif_model`` or
by a required trait is the VM's adapter, its video device is vSphere's SVGA
(vmvga), its firmware BIOS (upstream's driver builds no UEFI). What it does not
build (the other video models, sound, vIOMMU, TPM, UEFI and secure boot,
packed virtqueues) it reports False, and its late check refuses.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from contextlib import AbstractContextManager

import os_resource_classes as orc
import os_traits
from oslo_config import cfg

from moorage.model import vocabulary
from moorage.model.image import VIF_MODEL_ALIASES
from moorage.model.inventory import Inventory
from moorage.virt.capabilities import managed_elsewhere
from moorage.virt.driver import (
    ComputeDriver,
    Guest,
    GuestNotFound,
    NodeProvider,
    UnsupportedHardware,
    check_reported_support,
)
from moorage.virt.report import Source, TraitReport
from moorage.virt.simulation import reaching
from moorage.virt.switches import (
    FIRMWARE_TRAIT,
    SECURE_BOOT,
    TPM_TRAITS,
    VIRTIO_PACKED,
    Choice,
    chosen_model,
)
from moorage.virt.vmware.simulator import (
    BIOS,
    NIC_DEVICES,
    POWERED_OFF,
    POWERED_ON,
    VIDEO_CARD,
    SimulatedDatastore,
    SimulatedVM,
    VCenterSimulator,
)

LOG = logging.getLogger(__name__)

# Upstream's vmwareapi driver table: iso and vmdk images, no other image type.
CAPABILITIES: Mapping[str, bool] = managed_elsewhere(
    has_imagecache=True, supports_migrate_to_same_host=True, image_types=("iso", "vmdk"))

# hw_vif_model -> the vSphere NIC device giving it (image.py knows vSphere's names).
NIC_DEVICE_FOR_MODEL: Mapping[str, str] = {VIF_MODEL_ALIASES[d.lower()]: d for d in NIC_DEVICES}
# vSphere disk controller -> (hw_disk_bus, hw_scsi_model) it serves.
CONTROLLER_BUS: Mapping[str, tuple[str, str | None]] = {
    "VirtualIDEController": ("ide", None),
    "VirtualLsiLogicController": ("scsi", "lsilogic"),
    "VirtualLsiLogicSASController": ("scsi", "lsisas1068"),
    "VirtualBusLogicController": ("scsi", "buslogic"),
    "ParaVirtualSCSIController": ("scsi", "vmpvscsi"),
    "VirtualAHCIController": ("sata", None),
}
VSPHERE_BUSES = frozenset(bus for bus, _ in CONTROLLER_BUS.values())
# Upstream's defaults for an image that names none.
DEFAULT_VIF_MODEL = "e1000"
DEFAULT_DISK_BUS, DEFAULT_SCSI_MODEL = "scsi", "lsilogic"
DEFAULT_CDROM_BUS = "ide"
# ESXi hosts are x86_64 (HW_ARCH_X86_64, as upstream reports); they run 32-bit guests too.
GUEST_ARCHITECTURES = ("x86_64", "i686")
# The video model of vSphere's one video device (VIDEO_CARD).
VIDEO_MODEL = "vmvga"


def _family(prop: str, built: str | None, why_not: str) -> list[TraitReport]:
    """One report per model of ``prop``'s family: ``built`` True, the others False."""
    named = vocabulary.property_family(prop)
    return [TraitReport(named.trait(model), True, Source.DRIVER_TABLE,
                        f"vSphere's {VIDEO_CARD}") if model == built else
            TraitReport(named.trait(model), False, Source.DRIVER_TABLE, why_not)
            for model in named.values]


# The guest features that do not depend on the cluster: what vSphere builds, and what
# the driver does not (its late check refuses them from these reports).
FEATURE_REPORTS: tuple[TraitReport, ...] = (
    *_family("hw_video_model", VIDEO_MODEL,
             f"vSphere's only video device is its SVGA ({VIDEO_CARD}, {VIDEO_MODEL})"),
    *_family("hw_sound_model", None, "the VMware driver adds no sound device"),
    *_family("hw_viommu_model", None, "the VMware driver adds no vIOMMU"),
    *(TraitReport(t, False, Source.DRIVER_TABLE, "the VMware driver adds no vTPM")
      for t in sorted(TPM_TRAITS)),
    TraitReport(FIRMWARE_TRAIT["bios"], True, Source.DRIVER_TABLE,
                "VMs boot BIOS firmware, as upstream's driver builds them"),
    TraitReport(FIRMWARE_TRAIT["uefi"], False, Source.DRIVER_TABLE,
                "the VMware driver builds BIOS VMs only, as upstream's"),
    TraitReport(SECURE_BOOT, False, Source.DRIVER_TABLE,
                "secure boot needs UEFI, which the VMware driver does not build"),
    TraitReport(VIRTIO_PACKED, False, Source.DRIVER_TABLE, "vSphere has no virtio NIC"),
)


def built_traits(vm: SimulatedVM) -> frozenset[str]:
    """The guest-feature traits a VM was built with: its NIC model, disk bus, video
    model and firmware, read back from what vCenter holds."""
    bus, _ = CONTROLLER_BUS[vm.disk_controller]
    return frozenset({
        vocabulary.property_family("hw_vif_model").trait(VIF_MODEL_ALIASES[vm.nic_device.lower()]),
        vocabulary.property_family("hw_disk_bus").trait(bus),
        *([vocabulary.property_family("hw_video_model").trait(VIDEO_MODEL)]
          if vm.video_card == VIDEO_CARD else []),
        *([FIRMWARE_TRAIT["bios"]] if vm.firmware == BIOS else []),
    })


class VMwareDriver(ComputeDriver):
    """A ComputeDriver over one (simulated) vCenter cluster."""

    name = "vmware"
    capabilities = CAPABILITIES

    def __init__(self, conf: cfg.ConfigOpts, simulator: VCenterSimulator | None = None) -> None:
        super().__init__(conf)
        opts = conf.vmware
        if simulator is None:
            simulator = (VCenterSimulator.from_file(opts.simulation_file, opts.cluster_name)
                         if opts.simulation_file else VCenterSimulator(opts.cluster_name))
        self.simulator = simulator
        try:
            self._datastore_regex = re.compile(opts.datastore_regex) if (
                opts.datastore_regex) else None
        except re.error as exc:
            raise ValueError(f"[vmware] datastore_regex = {opts.datastore_regex!r}: "
                             f"{exc}") from None

    @property
    def cluster(self) -> str:
        return self.simulator.cluster_name

    def _vcenter(self) -> AbstractContextManager[None]:
        return reaching(f"simulated vCenter of cluster {self.cluster}")

    def init_host(self) -> None:
        with self._vcenter():
            self.simulator.login()

    def nodes(self) -> list[str]:
        # Upstream's node name: the cluster's managed object id and the vCenter's uuid,
        # unique across vCenters.
        return [f"{self.simulator.cluster_moid}.{self.simulator.vcenter_uuid}"]

    def _known(self, node: str) -> str:
        if node not in self.nodes():
            raise LookupError(f"{node!r} is not the node of vCenter cluster {self.cluster} "
                              f"({self.nodes()[0]})")
        return node

    def _datastores(self) -> list[SimulatedDatastore]:
        regex = self._datastore_regex
        with self._vcenter():
            stores = self.simulator.cluster_datastores()
        return [ds for ds in stores if ds.usable and (regex is None or regex.match(ds.name))]

    def provider_tree(self, node: str) -> list[NodeProvider]:
        self._known(node)
        with self._vcenter():
            hosts = [h for h in self.simulator.cluster_hosts() if h.usable]
        stores = self._datastores()
        conf = self.conf
        amounts = (
            (orc.VCPU, sum(h.cpu_threads for h in hosts),
             max((h.cpu_threads for h in hosts), default=0), conf.reserved_host_cpus,
             conf.cpu_allocation_ratio),
            (orc.MEMORY_MB, sum(h.memory_mb for h in hosts),
             max((h.memory_mb for h in hosts), default=0), conf.reserved_host_memory_mb,
             conf.ram_allocation_ratio),
            (orc.DISK_GB, sum(ds.capacity_gb for ds in stores),
             max((ds.free_gb for ds in stores), default=0),
             math.ceil(conf.reserved_host_disk_mb / 1024), conf.disk_allocation_ratio),
        )
        inventories: dict[str, Inventory] = {}
        for rc, total, largest, reserved, ratio in amounts:
            if total <= 0:
                # No usable host or datastore: placement refuses a total of 0.
                LOG.warning("cluster %s has no usable %s; not offered", self.cluster, rc)
                continue
            # max_unit 0 (every datastore full) is refused too: one unit is the least.
            inventories[rc] = Inventory.of(total, reserved=min(reserved, total),
                                           max_unit=max(largest, 1), allocation_ratio=ratio)
        return [NodeProvider(node, inventories)]

    # -- device models ---------------------------------------------------------------
    def _offered(self) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        """What the cluster offers: NIC model, disk bus and SCSI model -> vSphere device."""
        with self._vcenter():
            nic_devices, controllers = self.simulator.offered_devices()
        nics = {m: d for m, d in NIC_DEVICE_FOR_MODEL.items() if d in nic_devices}
        buses: dict[str, str] = {}
        scsi_models: dict[str, str] = {}
        for controller in controllers:
            bus, scsi_model = CONTROLLER_BUS[controller]
            buses.setdefault(bus, controller)
            if scsi_model is not None:
                scsi_models[scsi_model] = controller
        return nics, buses, scsi_models

    def device_reports(self, node: str) -> list[TraitReport]:
        self._known(node)
        nics, buses, _ = self._offered()
        reports = [TraitReport(os_traits.HW_ARCH_X86_64, True, Source.DRIVER_TABLE,
                               "ESXi hosts are x86_64")]
        for prop, offered, known, kind in (
                ("hw_vif_model", nics, NIC_DEVICE_FOR_MODEL, "NIC"),
                ("hw_disk_bus", buses, VSPHERE_BUSES, "disk bus")):
            named = vocabulary.property_family(prop)
            for model in named.values:
                trait = vocabulary.device_trait(named.prefix, model)
                if model in offered:
                    reports.append(TraitReport(trait, True, Source.HYPERVISOR,
                                               f"cluster {self.cluster}: {offered[model]}"))
                elif model in known:
                    reports.append(TraitReport(trait, False, Source.HYPERVISOR,
                                               f"cluster {self.cluster} does not offer it"))
                else:
                    reports.append(TraitReport(trait, False, Source.DRIVER_TABLE,
                                               f"vSphere has no {model} {kind}"))
        reports += FEATURE_REPORTS
        return reports

    # -- guests ---------------------------------------------------------------------------
    def spawn(self, guest: Guest) -> None:
        check_reported_support(guest, self.trait_reports(self._known(guest.node)))
        nic, controller = self._devices(guest)
        stores = self._datastores()
        if not stores:
            raise UnsupportedHardware("datastore",
                                      f"vCenter cluster {self.cluster} has no usable datastore")
        flavor = guest.flavor
        vm = SimulatedVM(
            uuid=guest.uuid, name=guest.name, vcpus=flavor.vcpus, memory_mb=flavor.memory_mb,
            disk_gb=flavor.root_gb + flavor.ephemeral_gb,
            datastore=max(stores, key=lambda ds: ds.free_gb).name,
            nic_device=nic, disk_controller=controller,
        )
        with self._vcenter():
            self.simulator.create_vm(vm)

    def _devices(self, guest: Guest) -> tuple[str, str]:
        """The late device checks: the NIC and disk controller the guest gets, or
        UnsupportedHardware naming the image property or trait the cluster cannot
        honour. A NIC model trait the guest requires is its adapter when the image
        names none (FlavorImageConflict when they differ). The features the driver
        never builds were refused from its reports already (FEATURE_REPORTS)."""
        nics, buses, scsi_models = self._offered()
        props = guest.image.properties

        def offered(prop: str, asked: Choice | None, default: str,
                    devices: Mapping[str, str]) -> str:
            chosen = asked or Choice(default, prop)
            if chosen.value not in devices:
                why = "" if chosen.source == prop else f" ({chosen.source})"
                raise UnsupportedHardware(
                    f"{prop}={chosen.value}",
                    f"{'the default ' if asked is None else ''}{prop}={chosen.value}{why} "
                    f"is not offered by vCenter cluster {self.cluster}; it offers "
                    f"{', '.join(sorted(devices)) or 'none'}")
            return devices[chosen.value]

        def named(prop: str, value: str | None) -> Choice | None:
            return Choice(value, prop) if value else None

        if props.hw_architecture not in (None, *GUEST_ARCHITECTURES):
            raise UnsupportedHardware(f"hw_architecture={props.hw_architecture}",
                                      f"ESXi runs {' and '.join(GUEST_ARCHITECTURES)} "
                                      "guests only")
        vif = chosen_model("hw_vif_model", props.hw_vif_model, guest.requested_traits)
        nic = offered("hw_vif_model", vif, DEFAULT_VIF_MODEL, nics)
        controller = offered("hw_disk_bus", named("hw_disk_bus", props.hw_disk_bus),
                             DEFAULT_DISK_BUS, buses)
        if (props.hw_disk_bus or DEFAULT_DISK_BUS) == "scsi":
            controller = offered("hw_scsi_model", named("hw_scsi_model", props.hw_scsi_model),
                                 DEFAULT_SCSI_MODEL, scsi_models)
        if props.hw_cdrom_bus or guest.image.disk_format == "iso":
            offered("hw_cdrom_bus", named("hw_cdrom_bus", props.hw_cdrom_bus),
                    DEFAULT_CDROM_BUS, buses)
        return nic, controller

    def destroy(self, instance_uuid: str) -> None:
        with self._vcenter():
            self.simulator.destroy_vm(instance_uuid)

    # The simulated VMs have no VMware Tools: a clean shutdown or a guest reboot
    # (which need them) is, as upstream falls back to, a power-off or a reset.
    def power_off(self, instance_uuid: str) -> None:
        self._power(instance_uuid, POWERED_OFF)

    def power_on(self, instance_uuid: str) -> None:
        self._power(instance_uuid, POWERED_ON)

    def reboot(self, instance_uuid: str, hard: bool) -> None:
        with self._vcenter():
            try:
                self.simulator.reset_vm(instance_uuid)
            except LookupError:
                raise GuestNotFound(instance_uuid, f"vCenter cluster {self.cluster}") from None

    def _power(self, instance_uuid: str, power_state: str) -> None:
        with self._vcenter():
            try:
                self.simulator.set_power_state(instance_uuid, power_state)
            except LookupError:
                raise GuestNotFound(instance_uuid, f"vCenter cluster {self.cluster}") from None

    def supported_instances(self) -> list[tuple[str, str, str]]:
        return [(arch, "vmware", "hvm") for arch in GUEST_ARCHITECTURES]

    # hypervisor_version: the simulated vCenter has no version to tell (None).

    def guests(self) -> list[str]:
        with self._vcenter():
            return [vm.uuid for vm in self.simulator.list_vms()]
