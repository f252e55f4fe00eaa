"""A fleet file: host groups only, of simulated drivers; a bad group is refused before
anything starts, by line and by name; each group becomes hosts whose drivers report
what a single agent of the group would."""

from __future__ import annotations

from pathlib import Path

import pytest

from moorage.compute.fleet import Fleet, FleetError, FleetHost
from moorage.internal_access import InternalAccess
from moorage.placement.client import PlacementClient
from moorage.run.description import CloudError, HostGroup, load_fleet
from moorage.run.fleet_hosts import fleet_hosts

GOOD = """\
name: scale
host_groups:
  - name: kvm
    count: 3
    driver: fake
    traits: [HW_CPU_X86_AVX2]
    image_types: [raw]
  - name: vc
    count: 2
    driver: vmware
  - name: bm
    count: 1
    driver: ironic
    resource_class: baremetal-gold
    traits: [CUSTOM_GOLD]
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return path


def test_a_fleet_file_becomes_hosts_with_their_groups_drivers(tmp_path: Path) -> None:
    fleet = load_fleet(_write(tmp_path, GOOD))
    hosts = fleet_hosts(fleet.name, fleet.host_groups)
    assert [h.name for h in hosts] == ["kvm-1", "kvm-2", "kvm-3", "vc-1", "vc-2", "bm-1"]
    kvm = hosts[0].make_driver()
    assert kvm.nodes() == ["kvm-1"]
    reported = {r.trait: r.supported for r in kvm.trait_reports("kvm-1")}
    assert reported["HW_CPU_X86_AVX2"] and not reported["COMPUTE_IMAGE_TYPE_QCOW2"]
    # Every host has a driver of its own: guests are not shared.
    assert hosts[1].make_driver() is not kvm and hosts[0].conf is hosts[1].conf
    vmware = hosts[3].make_driver()
    assert vmware.name == "vmware" and vmware.nodes() != hosts[4].make_driver().nodes()
    ironic = hosts[5].make_driver()
    [node] = ironic.nodes()
    assert "CUSTOM_BAREMETAL_GOLD" in ironic.provider_tree(node)[0].inventories


@pytest.mark.parametrize(("change", "message"), [
    ("    driver: vmware\n", "host_groups[1] (group vc).driver: a fleet runs simulated hosts "
     "only; allowed: fake, vmware, ironic (run a libvirt host as its own agent"),
    ("    traits: [HW_CPU_X86_AVX2]\n", "host_groups[0] (group kvm).traits[0]: "
     "'HW_CPU_X86_AVX3' is not a trait"),
    ("    count: 2\n", "host_groups[1] (group vc).count"),
])
def test_one_bad_group_refuses_the_whole_fleet_naming_it(tmp_path: Path, change: str,
                                                         message: str) -> None:
    broken = {"    driver: vmware\n": "    driver: libvirt\n",
              "    traits: [HW_CPU_X86_AVX2]\n": "    traits: [HW_CPU_X86_AVX3]\n",
              "    count: 2\n": "    count: zero\n"}[change]
    with pytest.raises(CloudError) as caught:
        load_fleet(_write(tmp_path, GOOD.replace(change, broken, 1)))
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"{tmp_path / 'fleet.yaml'}:")


def test_a_fleet_refuses_a_name_twice() -> None:
    [made] = fleet_hosts("x", [HostGroup(name="g", count=1, driver="fake")])
    host = FleetHost("h", made.conf, made.make_driver)
    with pytest.raises(FleetError, match="h appear more than once"):
        Fleet([host, host], PlacementClient("http://127.0.0.1:9"), api_url=None,
              access=InternalAccess(None))
