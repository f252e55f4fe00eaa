"""The compute agent with the libvirt driver against real QEMU, writing to real placement.

Issue 3's proof: the compute node provider in placement carries exactly the
storage buses and video models QEMU offers for the configured machine type (q35
has no IDE, pc has), read here from libvirt's live domain capabilities with
XPath, independently of the driver's parser.
"""

from __future__ import annotations

import pytest
from lxml import etree

from moorage.compute.agent import ComputeAgent
from moorage.conf import load_config
from moorage.model import vocabulary
from moorage.placement.client import PlacementClient
from moorage.virt.libvirt import host
from moorage.virt.loader import load_driver
from tests.conftest import PlacementClient as TestClient


def _live(uri: str, machine: str, xpath: str) -> set[str]:
    document = host.connect(uri).getDomainCapabilities(None, "x86_64", machine, "qemu", 0)
    return {str(v) for v in etree.fromstring(document.encode()).xpath(xpath)}


def _known(prefix: str, values: set[str]) -> set[str]:
    """The traits os-traits defines for these values (QEMU lists a few it has no name for)."""
    names = {vocabulary.trait_name(prefix, v) for v in values}
    return {n for n in names if n in vocabulary.KNOWN}


@pytest.mark.parametrize("machine", ["q35", "pc"])
def test_agent_reports_exactly_the_buses_and_video_models_qemu_offers(
    placement: TestClient, libvirt_embed_uri: str, machine: str
) -> None:
    conf = load_config([], [
        ("DEFAULT", "compute_driver", "libvirt"),
        ("DEFAULT", "host", f"kvm-{machine}"),
        ("libvirt", "virt_type", "qemu"),
        ("libvirt", "connection_uri", libvirt_embed_uri),
        ("libvirt", "hw_machine_type", [f"x86_64={machine}"]),
    ])
    agent = ComputeAgent(conf, load_driver(conf), PlacementClient(placement.url, "admin"))
    result = agent.sync()
    assert result.ok, result.problem
    uuid = result.changes[0].uuid
    reported = set(placement.get(f"/resource_providers/{uuid}/traits",
                                 expect=200).json()["traits"])

    buses = _live(libvirt_embed_uri, machine, "//devices/disk/enum[@name='bus']/value/text()")
    video = _live(libvirt_embed_uri, machine,
                  "//devices/video/enum[@name='modelType']/value/text()")
    assert {t for t in reported if t.startswith(vocabulary.STORAGE_BUS + "_")} == _known(
        vocabulary.STORAGE_BUS, buses)
    assert {t for t in reported if t.startswith(vocabulary.GRAPHICS_MODEL + "_")} == _known(
        vocabulary.GRAPHICS_MODEL, video)
    assert ("COMPUTE_STORAGE_BUS_IDE" in reported) == (machine == "pc")
    # NIC models come from the qemu table; the node is a compute node with a size.
    assert {"COMPUTE_NET_VIF_MODEL_E1000", "COMPUTE_NET_VIF_MODEL_VIRTIO",
            "COMPUTE_NODE", "HW_ARCH_X86_64", "COMPUTE_IMAGE_TYPE_QCOW2"} <= reported
    inventories = placement.get(f"/resource_providers/{uuid}/inventories",
                                expect=200).json()["inventories"]
    assert {"VCPU", "MEMORY_MB", "DISK_GB"} <= set(inventories)
