"""Host groups of a cloud or fleet file as hosts of a ``Fleet``: one configuration per
group (the group's ``[fake_driver]``, ``[vmware]`` or ``[ironic]`` options), and per
host a driver of its own over its own in-memory simulation, exactly what a single
agent of that group would run, without a configuration object and a simulation file
per host."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence

from oslo_config import cfg

from moorage.compute.fleet import FLEET_DRIVERS, FleetError, FleetHost
from moorage.conf import load_config
from moorage.run.description import HostGroup
from moorage.run.host_plans import fake_options, ironic_node, vmware_simulation
from moorage.virt.driver import ComputeDriver
from moorage.virt.fake import FakeDriver, FakeHost
from moorage.virt.ironic.driver import IronicDriver
from moorage.virt.ironic.simulator import IronicSimulator
from moorage.virt.vmware.driver import VMwareDriver
from moorage.virt.vmware.simulator import VCenterSimulator

Override = tuple[str, str, object]


def group_config(group: HostGroup, *, config_files: Sequence[str] = (),
                 overrides: Iterable[Override] = ()) -> cfg.ConfigOpts:
    """The configuration every host of ``group`` shares."""
    options: list[Override] = [("DEFAULT", "compute_driver", group.driver),
                               ("DEFAULT", "host", group.name)]
    if group.driver == "fake":
        options += [(g, o, v) for (g, o), v in fake_options(group).items()]
    return load_config(list(config_files), [*options, *overrides])


def fleet_hosts(cloud: str, groups: Sequence[HostGroup], *,
                config_files: Sequence[str] = (),
                overrides: Iterable[Override] = ()) -> list[FleetHost]:
    """One FleetHost per host of ``groups`` (named ``GROUP-1``, ``GROUP-2``, ...);
    FleetError naming the group a driver cannot be made for."""
    overrides = list(overrides)
    hosts: list[FleetHost] = []
    for group in groups:
        if group.driver not in FLEET_DRIVERS:
            raise FleetError(f"host group {group.name}: a fleet runs simulated hosts only "
                             f"({', '.join(FLEET_DRIVERS)}), not {group.driver}")
        conf = group_config(group, config_files=config_files, overrides=overrides)
        try:
            maker = _driver_maker(cloud, group, conf)
        except ValueError as exc:
            raise FleetError(f"host group {group.name}: {exc}") from None
        hosts.extend(FleetHost(name, conf, functools.partial(maker, name))
                     for name in group.host_names())
    return hosts


def _driver_maker(cloud: str, group: HostGroup, conf: cfg.ConfigOpts
                  ) -> Callable[[str], ComputeDriver]:
    """host name -> a new driver of ``group``'s kind for that host."""
    if group.driver == "fake":
        template = FakeHost.from_config(conf)

        def fake(name: str) -> ComputeDriver:
            return FakeDriver(conf, dataclasses.replace(template, nodes=(name,)))

        return fake
    if group.driver == "vmware":
        def vmware(name: str) -> ComputeDriver:
            return VMwareDriver(conf, VCenterSimulator.from_description(
                vmware_simulation(group, name, cloud), cluster_name=name))

        return vmware

    def ironic(name: str) -> ComputeDriver:
        return IronicDriver(conf, IronicSimulator.from_description(
            [ironic_node(group, name, cloud)]))

    return ironic
