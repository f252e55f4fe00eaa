"""The hosts a cloud description starts: one ``HostPlan`` per host of its groups,
named ``GROUP-1``, ``GROUP-2``..., for the embedded cloud to start.

Fake hosts are options of the fake driver; VMware and Ironic hosts each get the
simulation file of their vCenter cluster or their node; libvirt hosts are planned by
``moorage.run.libvirt_hosts``. The simulations' uuids are derived from the cloud's and
the host's names, so the same file plans the same hosts.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
import uuid
from pathlib import Path

from moorage.embedded import HostPlan
from moorage.run.description import (
    FAKE_ARCHITECTURE,
    CloudDescription,
    HostGroup,
    backend_image_types,
)
from moorage.run.libvirt_hosts import libvirt_plan
from moorage.virt.libvirt import recorded

# Ironic nodes of a group that names no resource class.
DEFAULT_RESOURCE_CLASS = "baremetal"
# Stable uuids for the simulated vCenters and Ironic nodes of a cloud.
_UUID_NAMESPACE = uuid.UUID("5b0e7a52-7d0f-4d7e-9a57-6d6f6f726167")


def host_plans(desc: CloudDescription, libvirt_real: bool, *,
               workdir: Path | None = None) -> list[tuple[HostGroup, HostPlan]]:
    """One ``HostPlan`` per host, in the file's order. VMware and Ironic hosts get a
    simulation file (their simulated vCenter cluster, their Ironic node) written under
    ``workdir`` (default: a temporary directory removed when the process exits);
    libvirt hosts are planned by ``moorage.run.libvirt_hosts`` (on real QEMU when
    ``libvirt_real``)."""
    plans: list[tuple[HostGroup, HostPlan]] = []
    simulations: Path | None = None
    for group in desc.host_groups:
        for name in group.host_names():
            if group.driver == "fake":
                plan = fake_plan(group, name)
            elif group.driver == "libvirt":
                plan = libvirt_plan(group, name, libvirt_real, workdir=workdir)
            else:
                if simulations is None:
                    simulations = _simulation_dir(desc, workdir)
                maker = vmware_plan if group.driver == "vmware" else ironic_plan
                plan = maker(group, name, desc, simulations)
            plans.append((group, plan))
    return plans


def _simulation_dir(desc: CloudDescription, workdir: Path | None) -> Path:
    if workdir is None:
        scratch = tempfile.mkdtemp(prefix=f"moorage-{desc.name}-")
        atexit.register(shutil.rmtree, scratch, True)
        return Path(scratch)
    path = workdir / "simulations"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _described(group: HostGroup, fallback: str) -> str:
    return group.description or fallback


def fake_plan(group: HostGroup, name: str) -> HostPlan:
    """A fake host of the group's architecture reporting the group's traits and image
    types, refusing at spawn what it reports unsupported and guests of another
    architecture."""
    return HostPlan(name, "fake", fake_options(group),
                    _described(group, f"fake host of group {group.name}"))


def fake_options(group: HostGroup) -> dict[tuple[str, str], object]:
    """The ``[fake_driver]`` options of a fake group's hosts. A group standing in for a
    libvirt machine type reports, beyond its own traits, what the libvirt driver
    reports of that machine type's device models and buses on the recorded QEMU
    (the description has checked that its own traits do not contradict it)."""
    arch = group.architecture or FAKE_ARCHITECTURE
    traits, unsupported = list(group.traits), list(group.unsupported_traits)
    if group.machine_type is not None:
        listed = {*traits, *unsupported}
        for trait, report in sorted(recorded.machine_type_reports(arch,
                                                                  group.machine_type).items()):
            if trait not in listed:
                (traits if report.supported else unsupported).append(trait)
    options: dict[tuple[str, str], object] = {
        ("fake_driver", "architecture"): arch,
        ("fake_driver", "vcpus"): group.capacity.vcpus,
        ("fake_driver", "memory_mb"): group.capacity.memory_mb,
        ("fake_driver", "disk_gb"): group.capacity.disk_gb,
        ("fake_driver", "traits"): traits,
        ("fake_driver", "unsupported_traits"): unsupported,
    }
    types = (list(group.image_types) if group.image_types is not None
             else backend_image_types(group.image_backend) if group.image_backend
             else None)
    if types is not None:
        options[("fake_driver", "supported_image_types")] = types
    return options


def vmware_plan(group: HostGroup, name: str, desc: CloudDescription,
                simulations: Path) -> HostPlan:
    """A VMware compute service managing its own simulated cluster (named after the
    host): one ESXi host and one datastore of the group's capacity."""
    simulation = vmware_simulation(group, name, desc)
    path = simulations / f"{name}.vcenter.json"
    path.write_text(json.dumps(simulation, indent=2))
    return HostPlan(name, "vmware", {("vmware", "cluster_name"): name,
                                     ("vmware", "simulation_file"): str(path)},
                    _described(group, f"simulated VMware cluster of group {group.name}"))


def vmware_simulation(group: HostGroup, name: str, cloud: CloudDescription | str
                      ) -> dict[str, object]:
    """The simulated vCenter of one VMware host of ``group`` (``[vmware]
    simulation_file``'s content)."""
    cloud = cloud if isinstance(cloud, str) else cloud.name
    return {
        "vcenter_uuid": str(uuid.uuid5(_UUID_NAMESPACE, f"{cloud}/{name}/vcenter")),
        "hosts": [{"name": f"{name}-esx-1", "cpu_threads": group.capacity.vcpus,
                   "memory_mb": group.capacity.memory_mb}],
        "datastores": [{"name": f"{name}-datastore1", "capacity_gb": group.capacity.disk_gb,
                        "free_gb": group.capacity.disk_gb}],
    }


def ironic_plan(group: HostGroup, name: str, desc: CloudDescription,
                simulations: Path) -> HostPlan:
    """An Ironic compute service managing one simulated node, available, with the
    group's resource class, traits and capacity as its properties."""
    node = ironic_node(group, name, desc)
    path = simulations / f"{name}.ironic.json"
    path.write_text(json.dumps([node], indent=2))
    return HostPlan(name, "ironic", {("ironic", "simulation_file"): str(path)},
                    _described(group, f"simulated Ironic node of group {group.name}"))


def ironic_node(group: HostGroup, name: str, cloud: CloudDescription | str
                ) -> dict[str, object]:
    """The simulated Ironic node record of one host of an Ironic ``group``."""
    cloud = cloud if isinstance(cloud, str) else cloud.name
    return {
        "uuid": str(uuid.uuid5(_UUID_NAMESPACE, f"{cloud}/{name}/node")),
        "name": name,
        "resource_class": group.resource_class or DEFAULT_RESOURCE_CLASS,
        "traits": list(group.traits),
        "properties": {"cpus": group.capacity.vcpus, "memory_mb": group.capacity.memory_mb,
                       "local_gb": group.capacity.disk_gb, "cpu_arch": "x86_64"},
    }
