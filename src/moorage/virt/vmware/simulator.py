"""A simulated vCenter cluster: what the VMware driver would read from vSphere.

There is no vCenter on this machine, so this stands in for one, and says so:
every object here is a simulation. It holds what the driver reads — the
cluster's ESXi hosts (CPU threads, memory, maintenance mode), its datastores
(capacity, free space, type, accessibility), the virtual NIC and disk
controller device types its hosts offer, by their vSphere names — and the VMs
the driver creates. Like a vCenter behind a broken network it can be made
unreachable (``simulation.Reachability``).
"""

from __future__ import annotations

import copy
import json
import threading
import uuid as uuidlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from moorage.virt.simulation import Reachability

R = TypeVar("R")

# The virtual NICs vSphere offers (VirtualEthernetCard subtypes).
NIC_DEVICES = ("VirtualE1000", "VirtualE1000e", "VirtualPCNet32", "VirtualSriovEthernetCard",
               "VirtualVmxnet", "VirtualVmxnet3")
# The disk controllers vSphere offers (NVMe left out). A simulated cluster offers
# AHCI (SATA) only when told to: upstream's driver attaches disks to IDE or SCSI only.
DISK_CONTROLLERS = ("VirtualIDEController", "VirtualLsiLogicController",
                    "VirtualLsiLogicSASController", "VirtualBusLogicController",
                    "ParaVirtualSCSIController", "VirtualAHCIController")
DEFAULT_DISK_CONTROLLERS = DISK_CONTROLLERS[:5]
# Every VM has one video device, VMware's SVGA (QEMU emulates it as vmvga).
VIDEO_CARD = "VirtualMachineVideoCard"
# VirtualMachine.config.firmware values.
BIOS, EFI = "bios", "efi"
# Datastore types a VM can be placed on (upstream's ds_util ALL_SUPPORTED_DS_TYPES).
USABLE_DATASTORE_TYPES = ("VMFS", "NFS", "NFS41", "vsan", "VVOL")


@dataclass
class SimulatedEsxHost:
    """One ESXi host of the cluster. Disconnected or in maintenance, it offers nothing."""

    name: str
    cpu_threads: int
    memory_mb: int
    connected: bool = True
    in_maintenance: bool = False

    @property
    def usable(self) -> bool:
        return self.connected and not self.in_maintenance


@dataclass
class SimulatedDatastore:
    """One datastore the cluster's hosts mount."""

    name: str
    capacity_gb: int
    free_gb: int
    type: str = "VMFS"
    accessible: bool = True
    in_maintenance: bool = False

    @property
    def usable(self) -> bool:
        return (self.accessible and not self.in_maintenance
                and self.type in USABLE_DATASTORE_TYPES)


POWERED_ON, POWERED_OFF = "poweredOn", "poweredOff"
POWER_STATES = (POWERED_ON, POWERED_OFF)


@dataclass
class SimulatedVM:
    """A VM the driver created: what it asked vCenter for."""

    uuid: str
    name: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    datastore: str
    nic_device: str
    disk_controller: str
    video_card: str = VIDEO_CARD
    firmware: str = BIOS
    power_state: str = "poweredOn"
    # How many times it was powered on (created running: 1).
    boots: int = 1


@dataclass
class VCenterSimulator(Reachability):
    """A simulated vCenter holding one cluster."""

    cluster_name: str = "cluster1"
    hosts: list[SimulatedEsxHost] = field(default_factory=lambda: [
        SimulatedEsxHost("esx-1", cpu_threads=32, memory_mb=131072),
        SimulatedEsxHost("esx-2", cpu_threads=32, memory_mb=131072),
    ])
    datastores: list[SimulatedDatastore] = field(default_factory=lambda: [
        SimulatedDatastore("datastore1", capacity_gb=2048, free_gb=2048),
    ])
    nic_devices: tuple[str, ...] = NIC_DEVICES
    disk_controllers: tuple[str, ...] = DEFAULT_DISK_CONTROLLERS
    vcenter_uuid: str = field(default_factory=lambda: str(uuidlib.uuid4()))
    cluster_moid: str = "domain-c8"
    unreachable: str | None = None
    vms: dict[str, SimulatedVM] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        for kind, offered, known in (("NIC", self.nic_devices, NIC_DEVICES),
                                     ("disk controller", self.disk_controllers,
                                      DISK_CONTROLLERS)):
            unknown = set(offered) - set(known)
            if unknown:
                raise ValueError(f"vSphere has no {kind} device type {sorted(unknown)}; "
                                 f"known: {', '.join(known)}")

    # -- what the driver reads ------------------------------------------------------
    def login(self) -> str:
        """A session, as the driver opens one on start; the vCenter's uuid."""
        self.answer()
        return self.vcenter_uuid

    def cluster_hosts(self) -> list[SimulatedEsxHost]:
        self.answer()
        return copy.deepcopy(self.hosts)

    def cluster_datastores(self) -> list[SimulatedDatastore]:
        self.answer()
        return copy.deepcopy(self.datastores)

    def offered_devices(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The NIC and disk controller device types the cluster's hosts offer."""
        self.answer()
        return self.nic_devices, self.disk_controllers

    # -- VMs -------------------------------------------------------------------------
    def create_vm(self, vm: SimulatedVM) -> None:
        self.answer()
        with self._lock:
            if vm.uuid in self.vms:
                raise ValueError(f"a VM with uuid {vm.uuid} already exists")
            self.vms[vm.uuid] = copy.copy(vm)

    def destroy_vm(self, vm_uuid: str) -> None:
        self.answer()
        with self._lock:
            self.vms.pop(vm_uuid, None)

    def set_power_state(self, vm_uuid: str, power_state: str) -> None:
        """PowerOnVM_Task, PowerOffVM_Task (``poweredOn``, ``poweredOff``); LookupError
        for a VM it does not hold."""
        self.answer()
        if power_state not in POWER_STATES:
            raise ValueError(f"power state {power_state!r} is not one of "
                             f"{', '.join(POWER_STATES)}")
        with self._lock:
            vm = self.vms.get(vm_uuid)
            if vm is None:
                raise LookupError(f"no VM with uuid {vm_uuid}")
            vm.power_state = power_state
            vm.boots += power_state == POWERED_ON

    def reset_vm(self, vm_uuid: str) -> None:
        """ResetVM_Task: power-cycled, on again."""
        self.answer()
        with self._lock:
            vm = self.vms.get(vm_uuid)
            if vm is None:
                raise LookupError(f"no VM with uuid {vm_uuid}")
            vm.power_state = POWERED_ON
            vm.boots += 1

    def list_vms(self) -> list[SimulatedVM]:
        self.answer()
        with self._lock:
            return [copy.copy(vm) for vm in self.vms.values()]

    # -- describing one -----------------------------------------------------------------
    @classmethod
    def from_description(cls, description: Mapping[str, Any],
                         cluster_name: str = "cluster1") -> VCenterSimulator:
        """A simulator from a JSON-like description (see ``[vmware] simulation_file``)."""
        known = {"hosts", "datastores", "nic_devices", "disk_controllers", "vcenter_uuid",
                 "unreachable"}
        unknown = set(description) - known
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)} in the vCenter simulation; "
                             f"known: {', '.join(sorted(known))}")
        given: _Given = {"cluster_name": cluster_name}
        if "hosts" in description:
            given["hosts"] = _records(SimulatedEsxHost, description["hosts"])
        if "datastores" in description:
            given["datastores"] = _records(SimulatedDatastore, description["datastores"])
        if "nic_devices" in description:
            given["nic_devices"] = tuple(description["nic_devices"])
        if "disk_controllers" in description:
            given["disk_controllers"] = tuple(description["disk_controllers"])
        if "vcenter_uuid" in description:
            given["vcenter_uuid"] = str(description["vcenter_uuid"])
        if "unreachable" in description:
            given["unreachable"] = str(description["unreachable"])
        return cls(**given)

    @classmethod
    def from_file(cls, path: str | Path, cluster_name: str = "cluster1") -> VCenterSimulator:
        try:
            description = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"vCenter simulation {path}: {exc}") from None
        if not isinstance(description, dict):
            raise ValueError(f"vCenter simulation {path}: expected a JSON object")
        try:
            return cls.from_description(description, cluster_name)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"vCenter simulation {path}: {exc}") from None


class _Given(TypedDict, total=False):
    """What a description sets of a ``VCenterSimulator`` (the rest keeps its default)."""

    cluster_name: str
    hosts: list[SimulatedEsxHost]
    datastores: list[SimulatedDatastore]
    nic_devices: tuple[str, ...]
    disk_controllers: tuple[str, ...]
    vcenter_uuid: str
    unreachable: str


def _records(kind: Callable[..., R], items: Iterable[Mapping[str, Any]]) -> list[R]:
    """One ``kind`` per item of a description, its fields by keyword (TypeError for an
    unknown one)."""
    return [kind(**item) for item in items]
