"""The real ``openstack`` CLI (python-openstackclient, the compat venv's) drives a Moorage
cloud through a real Keystone and its catalog, as an operator and a user would: an
image uploaded with ``openstack image create --file`` boots on a real QEMU guest
(``openstack server create --wait`` reaches ACTIVE and the guest's console shows the
boot sector's marker), then is stopped, started, rebooted and deleted; the reads an
operator makes (limits, quotas, zones, hypervisors, services, usage) answer.

The cloud: placement and the compute API as processes behind keystonemiddleware
(``tests.keystone_cloud``), one libvirt compute agent in this process on libvirt's
embedded QEMU driver (TCG guests), Keystone's catalog naming compute, image and
placement. Without the keystone venv, the compat venv or libvirt these tests fail,
they do not skip. The tests share one cloud and run in order: the lifecycle's server
is what the usage read counts.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.functional.servers.test_libvirt import KVM, domain_exists
from tests.image_standin import BOOT_MARKER, boot_disk
from tests.keystone_cloud import QemuCloud, openstack_tool, qemu_cloud
from tests.keystone_fixtures import Keystone

SERVICE_TOKEN = "openstack-cli-service-token"


@pytest.fixture(scope="module")
def cloud(keystone: Keystone, libvirt_embed_uri: str,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[QemuCloud]:
    openstack_tool()  # before any service starts
    with qemu_cloud(keystone, libvirt_embed_uri, tmp_path_factory.mktemp("openstack-cli"),
                    service_token=SERVICE_TOKEN) as cloud:
        yield cloud


def test_a_freshly_uploaded_image_boots_active_on_qemu_and_lives_its_life(
        cloud: QemuCloud) -> None:
    admin, member = cloud.admin, cloud.member
    image = cloud.cli(admin, "image", "create", "cirros", "--disk-format", "raw",
                      "--container-format", "bare", "--file", str(cloud.disk), "--public")
    assert (image["status"], image["size"]) == ("active", len(boot_disk())), image
    assert image["visibility"] == "public"
    flavor = cloud.cli(admin, "flavor", "create", "m1.tiny", "--ram", "128", "--disk", "1",
                       "--vcpus", "1")
    assert (flavor["name"], flavor["ram"], flavor["disk"], flavor["vcpus"]) == (
        "m1.tiny", 128, 1, 1)
    # Without --public-key the CLI prints the private key the API generated, not a table.
    private = cloud.run(member, "keypair", "create", "k1")
    assert private.startswith("-----BEGIN OPENSSH PRIVATE KEY-----"), private[:80]
    keypair = cloud.cli(member, "keypair", "show", "k1")
    assert keypair["name"] == "k1" and keypair["fingerprint"], keypair

    server = cloud.cli(member, "server", "create", "--image", "cirros", "--flavor",
                       "m1.tiny", "--key-name", "k1", "--no-network", "--wait", "vm1")
    assert server["status"] == "ACTIVE", server
    assert server["key_name"] == "k1"
    assert cloud.agent.host == KVM

    deadline, console = time.monotonic() + 60, ""
    while BOOT_MARKER.decode() not in console and time.monotonic() < deadline:
        time.sleep(0.5)
        console = cloud.run(member, "console", "log", "show", "vm1")
    assert BOOT_MARKER.decode() in console, console[-500:]

    cloud.run(member, "server", "stop", "vm1")
    cloud.wait_status("vm1", "SHUTOFF")
    cloud.run(member, "server", "start", "vm1")
    cloud.wait_status("vm1", "ACTIVE")
    cloud.run(member, "server", "reboot", "--hard", "--wait", "vm1")
    assert cloud.status("vm1") == "ACTIVE"

    events = cloud.cli(member, "server", "event", "list", "vm1")
    assert sorted(e["Action"] for e in events) == ["create", "reboot", "start", "stop"]
    assert {e["Server ID"] for e in events} == {server["id"]}

    cloud.run(member, "server", "delete", "--wait", "vm1")
    assert cloud.cli(member, "server", "list") == []
    # Undefined from libvirt, not just stopped.
    assert not domain_exists(cloud.libvirt_uri, server["id"])


def test_an_operators_reads_answer(cloud: QemuCloud) -> None:
    """After the lifecycle above: its image is listed, its server is in the usage."""
    admin, member = cloud.admin, cloud.member
    limits = {row["Name"]: row["Value"]
              for row in cloud.cli(member, "limits", "show", "--absolute")}
    assert (limits["max_total_instances"], limits["total_instances_used"]) == (10, 0), limits
    assert (limits["max_total_cores"], limits["max_total_ram_size"]) == (20, 51200), limits
    quota = {row["Resource"]: row["Limit"] for row in cloud.cli(member, "quota", "show")}
    assert (quota["instances"], quota["cores"], quota["key-pairs"]) == (10, 20, 100), quota
    zones = cloud.cli(member, "availability", "zone", "list", "--compute")
    assert [(z["Zone Name"], z["Zone Status"]) for z in zones] == [("nova", "available")]

    hypervisors = cloud.cli(admin, "hypervisor", "list")
    assert [(h["Hypervisor Hostname"], h["State"]) for h in hypervisors] == [(KVM, "up")]
    hypervisor = cloud.cli(admin, "hypervisor", "show", KVM)
    assert (hypervisor["id"], hypervisor["status"]) == (hypervisors[0]["ID"], "enabled")
    services = cloud.cli(admin, "compute", "service", "list")
    assert [(s["Host"], s["Zone"], s["Status"], s["State"]) for s in services] == [
        (KVM, "nova", "enabled", "up")], services

    group = cloud.cli(member, "server", "group", "create", "--policy", "anti-affinity", "g1")
    assert (group["name"], group["policy"], group["members"]) == ("g1", "anti-affinity", [])
    assert [g["Name"] for g in cloud.cli(member, "server", "group", "list")] == ["g1"]
    images = cloud.cli(member, "image", "list")
    assert [(i["Name"], i["Status"]) for i in images] == [("cirros", "active")]
    usage = cloud.cli(admin, "usage", "list")
    assert [u["Project"] for u in usage] in ([member.project.name], [member.project.id])
    # openstacksdk asks for detailed=True, which nova (and Moorage) read as not "1": no
    # server list, so the CLI's Servers column is empty against nova too.
    assert usage[0]["RAM MB-Hours"] > 0 and usage[0]["CPU Hours"] > 0, usage
