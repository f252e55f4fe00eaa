"""novaclient and openstacksdk, the compat venv's, drive a Moorage cloud through a real
Keystone, as a project's member and an operator would.

novaclient (``nova``) at ``--os-compute-api-version 2.latest`` (2.96, the newest it
knows; Moorage's maximum is higher) boots an uploaded image on a real QEMU guest
(``boot --poll`` reaches ACTIVE, ``console-log`` shows the boot sector's marker),
stops, starts, hard-reboots and deletes it, and reads what a project and an operator
read; one test runs the operator's reads and actions at 2.1, where the shapes and
the routes differ (integer ids, ``hypervisor-stats``, services named by host).

openstacksdk runs in a process of its own (``sdk_session.py``, the compat venv's
python) that the tests send calls to: its cloud layer (``create_server``,
``list_servers``, ``delete_server(wait=True)``...) and its proxy layer
(``compute.*``, ``image.*``). Every assertion reads what the client printed or
answered, and where it matters the state through Moorage's own API.

The cloud (``tests.keystone_cloud.qemu_cloud``): Keystone, placement and the compute
API behind keystonemiddleware, one libvirt host on libvirt's embedded QEMU driver,
the image ``cirros`` (``tests.image_standin.boot_disk``) uploaded to Moorage's image
service and the flavor ``m1.tiny``. Without the keystone venv, the compat venv or
libvirt these tests fail, they do not skip. Each test leaves the cloud as it found it.
"""

from __future__ import annotations

import hashlib
import json
import select
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from moorage.api import microversion
from tests.functional.servers.test_libvirt import KVM, domain_exists
from tests.image_standin import BOOT_MARKER, boot_disk
from tests.keys import ED25519, ED25519_FINGERPRINT
from tests.keystone_cloud import (
    QemuCloud,
    client_command,
    client_environment,
    client_tool,
    qemu_cloud,
)
from tests.keystone_fixtures import Keystone, User

SERVICE_TOKEN = "compute-clients-service-token"
LATEST = "2.latest"
SDK_SCRIPT = Path(__file__).with_name("sdk_session.py")
MARKER = BOOT_MARKER.decode()
PORT = "5b0d5e8e-3f37-4f2c-9a51-0e7f1f6c2d44"  # a port (or volume) no service knows


# -- novaclient's tables ---------------------------------------------------------------
@dataclass(frozen=True)
class Table:
    """One table novaclient printed (prettytable): its headings and its rows."""

    columns: list[str]
    rows: list[dict[str, str]]

    def column(self, name: str) -> list[str]:
        return [row[name] for row in self.rows]


def tables(output: str) -> list[Table]:
    """Every table in ``output``, in order. A table is a border, a heading row, a
    border, its rows and a closing border; a cell holding ``|`` is not supported."""
    found: list[Table] = []
    columns: list[str] | None = None
    rows: list[dict[str, str]] = []
    borders = 0
    for line in output.splitlines():
        if line.startswith("+"):
            borders += 1
            if borders == 3:
                found.append(Table(columns or [], rows))
                columns, rows, borders = None, [], 0
        elif line.startswith("|"):
            cells = [cell.strip() for cell in line.strip()[1:-1].split("|")]
            if columns is None:
                columns = cells
            else:
                rows.append(dict(zip(columns, cells, strict=True)))
    return found


def table(output: str) -> Table:
    """The one table in ``output``."""
    [only] = tables(output)
    return only


def properties(output: str) -> dict[str, str]:
    """The first table of ``output``, a ``Property | Value`` one, as a dict."""
    first = tables(output)[0]
    return {row[first.columns[0]]: row[first.columns[1]] for row in first.rows}


# -- openstacksdk in its own process ---------------------------------------------------
class SdkError(AssertionError):
    """An SDK call that raised: the exception's class, message and HTTP status."""

    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__(f"{answer['error']} ({answer['status']}): {answer['message']}")
        self.kind: str = answer["error"]
        self.message: str = answer["message"]
        self.status: int | None = answer["status"]


class Sdk:
    """openstacksdk logged in as one user (``sdk_session.py`` in the compat venv).
    ``sdk.create_server(...)`` calls the cloud layer, ``sdk("compute.servers")`` any
    attribute path; an argument ``Sdk.ask("compute.get_server", id)`` is a call whose
    result (a resource) is passed on as is."""

    def __init__(self, cloud: QemuCloud, user: User, log: Path) -> None:
        self._log = log.open("wb")
        self.process = subprocess.Popen(
            [str(client_tool("python")), str(SDK_SCRIPT)],
            env=client_environment(cloud.keystone, user), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._log, text=True)
        self.log = log
        assert self._read(120.0) == {"ready": True}

    @staticmethod
    def ask(call: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {"call": call, "args": list(args), "kwargs": kwargs}

    def __call__(self, call: str, *args: Any, timeout: float = 180.0, **kwargs: Any) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(self.ask(call, *args, **kwargs)) + "\n")
        self.process.stdin.flush()
        answer = self._read(timeout)
        if "error" in answer:
            raise SdkError(answer)
        return answer["result"]

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self(name, *args, **kwargs)

    def _read(self, timeout: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            tail = self.log.read_text(errors="replace")[-2000:]
            raise AssertionError(f"the SDK process answered nothing:\n{tail}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()


# -- the cloud -------------------------------------------------------------------------
@dataclass
class ClientsCloud:
    qemu: QemuCloud
    image_id: str
    flavor_id: str
    workdir: Path

    @property
    def admin(self) -> User:
        return self.qemu.admin

    @property
    def member(self) -> User:
        return self.qemu.member

    def nova_command(self, user: User, *args: str,
                     version: str = LATEST) -> subprocess.CompletedProcess[str]:
        return client_command("nova", self.qemu.keystone, user,
                              "--os-compute-api-version", version, *args)

    def nova(self, user: User, *args: str, version: str = LATEST) -> str:
        """``nova ARGS`` as ``user``, which must succeed; what it printed."""
        done = self.nova_command(user, *args, version=version)
        assert done.returncode == 0, f"nova {' '.join(args)}:\n{done.stderr}"
        return done.stdout

    def nova_refused(self, user: User, *args: str, version: str = LATEST) -> str:
        """``nova ARGS`` as ``user``, which must fail; its error."""
        done = self.nova_command(user, *args, version=version)
        assert done.returncode != 0, f"nova {' '.join(args)} passed:\n{done.stdout}"
        return done.stderr

    def compute(self, method: str, path: str, **body: Any) -> requests.Response:
        """Moorage's compute API as Keystone's admin, at its newest microversion."""
        return requests.request(
            method, f"{self.qemu.services.api.url}/v2.1{path}", json=body or None,
            headers={"X-Auth-Token": self.qemu.keystone.admin_token,
                     microversion.HEADER: f"compute {microversion.MAX_VERSION}"},
            timeout=60)

    def server(self, uuid: str) -> dict[str, Any] | None:
        found = self.compute("GET", f"/servers/{uuid}")
        if found.status_code == 404:
            return None
        assert found.status_code == 200, found.text
        server: dict[str, Any] = found.json()["server"]
        return server

    def wait_status(self, uuid: str, wanted: str, timeout: float = 60.0) -> dict[str, Any]:
        deadline, server = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            server = self.server(uuid)
            assert server is not None, f"{uuid} is gone, not {wanted}"
            if server["status"] == wanted and not server["OS-EXT-STS:task_state"]:
                return server
            assert server["status"] != "ERROR", server.get("fault")
            time.sleep(0.3)
        raise AssertionError(f"{uuid} is {server and server['status']}, not {wanted}")

    def wait_gone(self, uuid: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.server(uuid) is not None:
            assert time.monotonic() < deadline, f"{uuid} still there after {timeout}s"
            time.sleep(0.3)
        assert not domain_exists(self.qemu.libvirt_uri, uuid), "the guest outlived it"

    def sdk(self, user: User, name: str) -> Sdk:
        return Sdk(self.qemu, user, self.workdir / f"sdk-{name}.log")


@pytest.fixture(scope="module")
def cloud(keystone: Keystone, libvirt_embed_uri: str,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClientsCloud]:
    for tool in ("nova", "python"):
        client_tool(tool)  # before any service starts
    workdir = tmp_path_factory.mktemp("compute-clients")
    with qemu_cloud(keystone, libvirt_embed_uri, workdir,
                    service_token=SERVICE_TOKEN) as qemu:
        admin = {"X-Auth-Token": keystone.admin_token}
        images = f"{qemu.services.api.url}/image/v2/images"
        created = requests.post(images, headers=admin, timeout=60, json={
            "name": "cirros", "disk_format": "raw", "container_format": "bare",
            "visibility": "public"})
        assert created.status_code == 201, created.text
        image_id = created.json()["id"]
        uploaded = requests.put(f"{images}/{image_id}/file", data=qemu.disk.read_bytes(),
                                headers={**admin, "Content-Type": "application/octet-stream"},
                                timeout=60)
        assert uploaded.status_code == 204, uploaded.text
        flavor = requests.post(f"{qemu.services.api.url}/v2.1/flavors", headers=admin,
                               timeout=60, json={"flavor": {
                                   "name": "m1.tiny", "ram": 128, "vcpus": 1, "disk": 1}})
        assert flavor.status_code == 200, flavor.text
        yield ClientsCloud(qemu, image_id, flavor.json()["flavor"]["id"], workdir)


# -- novaclient ------------------------------------------------------------------------
def test_novaclient_boots_on_qemu_and_drives_the_servers_life(cloud: ClientsCloud) -> None:
    member = cloud.member
    key = cloud.workdir / "k1.pub"
    key.write_text(ED25519 + "\n")
    cloud.nova(member, "keypair-add", "--pub-key", str(key), "k1")
    assert table(cloud.nova(member, "keypair-list")).rows == [
        {"Name": "k1", "Type": "ssh", "Fingerprint": ED25519_FINGERPRINT}]
    flavors = table(cloud.nova(member, "flavor-list"))
    assert [(f["Name"], f["Memory_MiB"], f["VCPUs"], f["Description"])
            for f in flavors.rows] == [("m1.tiny", "128", "1", "-")]
    flavor = properties(cloud.nova(member, "flavor-show", "m1.tiny"))
    assert (flavor["id"], flavor["disk"], flavor["extra_specs"]) == (cloud.flavor_id, "1", "{}")

    booted = properties(cloud.nova(member, "boot", "--image", "cirros", "--flavor",
                                   "m1.tiny", "--key-name", "k1", "--nic", "none",
                                   "--poll", "vm-nova"))
    uuid = booted["id"]
    assert booted["image"] == f"cirros ({cloud.image_id})"
    assert booted["adminPass"], booted  # nova generates one; the guest ignores it
    server = cloud.server(uuid)
    assert server is not None and server["status"] == "ACTIVE", server
    assert (server["OS-EXT-SRV-ATTR:host"], server["key_name"]) == (KVM, "k1")
    assert domain_exists(cloud.qemu.libvirt_uri, uuid)

    assert [(s["ID"], s["Name"], s["Status"], s["Power State"])
            for s in table(cloud.nova(member, "list")).rows] == [
        (uuid, "vm-nova", "ACTIVE", "Running")]
    shown = properties(cloud.nova(member, "show", "vm-nova"))
    assert (shown["status"], shown["key_name"], shown["flavor:original_name"]) == (
        "ACTIVE", "k1", "m1.tiny")
    # The host's zone (the default one), and none pinned: the boot asked for none (a
    # 2.96 field: novaclient's 2.latest is 2.96).
    assert (shown["OS-EXT-AZ:availability_zone"], shown["pinned_availability_zone"]) == (
        "nova", "-")

    # No network service, no volume service: no interface, no volume, and an attach
    # says why.
    assert table(cloud.nova(member, "interface-list", "vm-nova")).rows == []
    assert table(cloud.nova(member, "volume-attachments", "vm-nova")).rows == []
    assert "Moorage has no network service" in cloud.nova_refused(
        member, "interface-attach", "--port-id", PORT, "vm-nova")
    assert "Moorage has no volume service" in cloud.nova_refused(
        member, "volume-attach", "vm-nova", PORT)
    # Moorage makes no live migration: none in progress (an operator's read).
    assert table(cloud.nova(cloud.admin, "server-migration-list", uuid)).rows == []

    deadline, console = time.monotonic() + 60, ""
    while MARKER not in console and time.monotonic() < deadline:
        time.sleep(0.5)
        console = cloud.nova(member, "console-log", "vm-nova")
    assert MARKER in console, console[-500:]

    assert "Request to stop server vm-nova has been accepted." in cloud.nova(
        member, "stop", "vm-nova")
    cloud.wait_status(uuid, "SHUTOFF")
    assert [s["Power State"] for s in table(cloud.nova(member, "list")).rows] == ["Shutdown"]
    cloud.nova(member, "start", "vm-nova")
    cloud.wait_status(uuid, "ACTIVE")
    cloud.nova(member, "reboot", "--hard", "--poll", "vm-nova")
    cloud.wait_status(uuid, "ACTIVE")

    actions = table(cloud.nova(member, "instance-action-list", "vm-nova"))
    recorded = cloud.compute("GET", f"/servers/{uuid}/os-instance-actions").json()
    assert sorted(actions.column("Action")) == ["create", "reboot", "start", "stop"]
    assert sorted(actions.column("Request_ID")) == sorted(
        a["request_id"] for a in recorded["instanceActions"])

    assert "Request to delete server vm-nova has been accepted." in cloud.nova(
        member, "delete", "vm-nova")
    cloud.wait_gone(uuid)
    assert table(cloud.nova(member, "list")).rows == []
    # The operator's usage counts the server that lived.
    usage = table(cloud.nova(cloud.admin, "usage-list")).rows
    assert [(u["Tenant ID"], u["Servers"]) for u in usage] == [(member.project.id, "1")]
    cloud.nova(member, "keypair-delete", "k1")
    assert table(cloud.nova(member, "keypair-list")).rows == []


def test_novaclient_reads_what_a_project_reads(cloud: ClientsCloud) -> None:
    member = cloud.member
    group = table(cloud.nova(member, "server-group-create", "g1", "anti-affinity"))
    [row] = group.rows
    assert (row["Name"], row["Policy"], row["Members"]) == ("g1", "anti-affinity", "[]")
    assert table(cloud.nova(member, "server-group-list")).column("Name") == ["g1"]
    try:
        rate, absolute = tables(cloud.nova(member, "limits"))
        assert rate.rows == []  # no rate limits, as in nova since 2.1
        limits = {row["Name"]: (row["Used"], row["Max"]) for row in absolute.rows}
        assert (limits["Instances"], limits["Cores"], limits["RAM"]) == (
            ("0", "10"), ("0", "20"), ("0", "51200")), limits
        assert limits["ServerGroups"] == ("1", "10"), limits
        # From 2.36 the network quotas are gone from the limits and the quotas.
        assert "FloatingIps" not in limits and "SecurityGroups" not in limits
        quota = {row["Quota"]: row["Limit"]
                 for row in table(cloud.nova(member, "quota-show")).rows}
        assert quota == {"instances": "10", "cores": "20", "ram": "51200",
                         "metadata_items": "128", "key_pairs": "100",
                         "server_groups": "10", "server_group_members": "10"}
        assert table(cloud.nova(member, "availability-zone-list")).rows == [
            {"Name": "nova", "Status": "available"}]
        # The usage of the whole cloud is an operator's; a member reads its own.
        assert "os_compute_api:os-simple-tenant-usage:list" in cloud.nova_refused(
            member, "usage-list")
        assert table(cloud.nova(member, "usage")).columns[0] == "Servers"
    finally:
        cloud.nova(member, "server-group-delete", row["Id"])  # by id only
    assert table(cloud.nova(member, "server-group-list")).rows == []


def test_novaclient_an_operators_reads_and_actions_at_latest(cloud: ClientsCloud) -> None:
    admin = cloud.admin
    [hypervisor] = table(cloud.nova(admin, "hypervisor-list")).rows
    # From 2.53 a hypervisor's id is its resource provider's uuid.
    assert (hypervisor["Hypervisor hostname"], hypervisor["State"],
            hypervisor["Status"]) == (KVM, "up", "enabled")
    assert len(hypervisor["ID"]) == 36, hypervisor
    shown = properties(cloud.nova(admin, "hypervisor-show", hypervisor["ID"]))
    assert (shown["hypervisor_hostname"], shown["service_host"]) == (KVM, KVM)
    # 2.88 took the usage fields away (placement has them) and brought the uptime.
    assert "vcpus" not in shown and "running_vms" not in shown and "uptime" in shown
    # novaclient asks by name as if it were an id; from 2.53 nova refuses that id (a
    # 400, which novaclient does not take for "not found, search by name"), and so
    # does Moorage: by name, an operator asks below 2.53.
    assert "Invalid uuid kvm1" in cloud.nova_refused(admin, "hypervisor-show", KVM)
    # novaclient itself refuses the statistics from 2.88, where nova removed them.
    assert "not supported in API version 2.88 or later" in cloud.nova_refused(
        admin, "hypervisor-stats")

    [service] = table(cloud.nova(admin, "service-list")).rows
    assert (service["Binary"], service["Host"], service["Zone"], service["Status"],
            service["State"], service["Forced down"]) == (
        "nova-compute", KVM, "nova", "enabled", "up", "False")
    # From 2.53 a service is named by its uuid.
    disabled = table(cloud.nova(admin, "service-disable", "--reason", "maintenance",
                                service["Id"])).rows
    assert [(s["Status"], s["Disabled Reason"]) for s in disabled] == [
        ("disabled", "maintenance")]
    [api] = cloud.compute("GET", f"/os-services?host={KVM}").json()["services"]
    assert (api["status"], api["disabled_reason"]) == ("disabled", "maintenance")
    cloud.nova(admin, "service-enable", service["Id"])
    [api] = cloud.compute("GET", f"/os-services?host={KVM}").json()["services"]
    assert (api["status"], api["disabled_reason"]) == ("enabled", None)

    created = table(cloud.nova(admin, "aggregate-create", "agg1", "az1")).rows
    assert [(a["Name"], a["Availability Zone"]) for a in created] == [("agg1", "az1")]
    try:
        added = table(cloud.nova(admin, "aggregate-add-host", "agg1", KVM)).rows
        assert [a["Hosts"] for a in added] == [f"'{KVM}'"]
        assert [(a["Name"], a["Availability Zone"])
                for a in table(cloud.nova(admin, "aggregate-list")).rows] == [("agg1", "az1")]
        # The host is in the aggregate's zone now, for the zones and the services.
        assert table(cloud.nova(cloud.member, "availability-zone-list")).rows == [
            {"Name": "az1", "Status": "available"}]
        assert table(cloud.nova(admin, "service-list")).column("Zone") == ["az1"]
        cloud.nova(admin, "aggregate-remove-host", "agg1", KVM)
    finally:
        cloud.nova(admin, "aggregate-delete", "agg1")
    assert table(cloud.nova(admin, "aggregate-list")).rows == []

    migrations = table(cloud.nova(admin, "migration-list"))
    # 2.59 adds the uuid, 2.80 the project and the user.
    assert migrations.rows == [] and {"UUID", "Project ID", "User ID"} <= set(
        migrations.columns), migrations


def test_novaclient_at_2_1(cloud: ClientsCloud) -> None:
    """The shapes and routes of 2.1: integer ids, the statistics, a service named by
    its host and nova's binary, the network quotas still listed."""
    admin = cloud.admin

    def nova(*args: str) -> str:
        return cloud.nova(admin, *args, version="2.1")

    [hypervisor] = table(nova("hypervisor-list")).rows
    assert (hypervisor["ID"], hypervisor["Hypervisor hostname"]) == ("1", KVM)
    shown = properties(nova("hypervisor-show", KVM))  # an integer id, then the name
    assert (shown["id"], shown["hypervisor_hostname"], shown["service_id"]) == ("1", KVM, "1")
    assert int(shown["vcpus"]) > 0 and int(shown["memory_mb"]) > 0, shown
    statistics = properties(nova("hypervisor-stats"))
    assert (statistics["count"], statistics["vcpus"]) == ("1", shown["vcpus"])

    # Before 2.53 novaclient disables "nova-compute" on a host.
    disabled = table(nova("service-disable", "--reason", "maintenance", KVM)).rows
    assert [(s["Host"], s["Binary"], s["Status"]) for s in disabled] == [
        (KVM, "nova-compute", "disabled")]
    [service] = table(nova("service-list")).rows
    assert (service["Id"], service["Status"], service["Disabled Reason"]) == (
        "1", "disabled", "maintenance")
    nova("service-enable", KVM)
    assert table(nova("service-list")).column("Status") == ["enabled"]

    quota = {row["Quota"]: row["Limit"] for row in table(nova("quota-show")).rows}
    assert (quota["instances"], quota["floating_ips"], quota["security_groups"]) == (
        "10", "-1", "-1")
    [flavor] = table(nova("flavor-list")).rows
    assert (flavor["Name"], flavor["Swap"]) == ("m1.tiny", "")  # nova's "" for none
    assert "Description" not in flavor
    assert table(nova("migration-list")).rows == []


# -- openstacksdk ----------------------------------------------------------------------
def test_openstacksdk_cloud_and_proxy_layers_drive_a_server(cloud: ClientsCloud) -> None:
    sdk = cloud.sdk(cloud.member, "server")
    try:
        keypair = sdk.create_keypair("sdk-k", public_key=ED25519)
        assert (keypair["name"], keypair["fingerprint"]) == ("sdk-k", ED25519_FINGERPRINT)
        # The cloud layer's wait wants an IP address: without Neutron a server has none,
        # so the SDK deletes the ACTIVE server (waiting) and says why.
        with pytest.raises(SdkError) as refused:
            sdk.create_server("sdk-wait", image="cirros", flavor="m1.tiny",
                              key_name="sdk-k", wait=True, timeout=120)
        assert refused.value.message == (
            "Server reached ACTIVE state without being allocated an IP address.")
        assert cloud.compute("GET", "/servers?name=sdk-wait").json()["servers"] == []

        created = sdk.create_server("sdk1", image="cirros", flavor="m1.tiny",
                                    key_name="sdk-k")
        uuid = created["id"]
        assert (created["name"], created["image"]["id"], created["flavor"]["original_name"]
                ) == ("sdk1", cloud.image_id, "m1.tiny")
        # The proxy layer's wait reads the status alone.
        active = sdk("compute.wait_for_server", Sdk.ask("compute.get_server", uuid),
                     status="ACTIVE", wait=120)
        assert (active["status"], active["key_name"], active["availability_zone"]) == (
            "ACTIVE", "sdk-k", "nova")
        assert cloud.wait_status(uuid, "ACTIVE")["OS-EXT-SRV-ATTR:host"] == KVM
        server = sdk.get_server("sdk1")
        assert (server["id"], server["status"], server["flavor"]["ram"]) == (
            uuid, "ACTIVE", 128)
        assert [s["name"] for s in sdk.list_servers()] == ["sdk1"]
        assert [s["name"] for s in sdk("compute.servers")] == ["sdk1"]
        limits = sdk.get_compute_limits()
        assert (limits["total_instances_used"], limits["total_cores_used"],
                limits["total_ram_used"]) == (1, 1, 128)

        deadline, console = time.monotonic() + 60, ""
        while MARKER not in console and time.monotonic() < deadline:
            time.sleep(0.5)
            console = sdk.get_server_console("sdk1")
        assert MARKER in console, console[-500:]

        sdk("compute.stop_server", uuid)
        stopped = sdk("compute.wait_for_server", Sdk.ask("compute.get_server", uuid),
                      status="SHUTOFF", wait=60)
        assert (stopped["status"], stopped["power_state"]) == ("SHUTOFF", 4)
        sdk("compute.start_server", uuid)
        cloud.wait_status(uuid, "ACTIVE")
        sdk("compute.reboot_server", uuid, "HARD")
        cloud.wait_status(uuid, "ACTIVE")
        output = sdk("compute.get_server_console_output", uuid, length=5)["output"]
        assert len(output.splitlines()) <= 5
        assert sdk("compute.server_ips", uuid) == []
        assert sdk("compute.volume_attachments", uuid) == []
        actions = sdk("compute.server_actions", uuid)
        assert sorted(a["action"] for a in actions) == ["create", "reboot", "start", "stop"]

        assert sdk.delete_server("sdk1", wait=True, timeout=60) is True
        assert cloud.server(uuid) is None
        assert not domain_exists(cloud.qemu.libvirt_uri, uuid)
        assert sdk.get_server("sdk1") is None
        assert sdk.delete_keypair("sdk-k") is True
        assert sdk.list_keypairs() == []
    finally:
        sdk.close()


def test_openstacksdk_reads_and_images(cloud: ClientsCloud) -> None:
    member = cloud.sdk(cloud.member, "member")
    admin = cloud.sdk(cloud.admin, "admin")
    try:
        flavor = member.get_flavor("m1.tiny")
        assert (flavor["id"], flavor["ram"], flavor["vcpus"], flavor["disk"]) == (
            cloud.flavor_id, 128, 1, 1)
        assert member("compute.find_flavor", "m1.tiny")["id"] == cloud.flavor_id
        [image] = member.list_images()
        assert (image["id"], image["name"], image["status"], image["size"]) == (
            cloud.image_id, "cirros", "active", len(boot_disk()))
        assert image["checksum"] == hashlib.md5(boot_disk()).hexdigest()
        assert member("image.find_image", "cirros")["hash_value"] == hashlib.sha512(
            boot_disk()).hexdigest()

        limits = member.get_compute_limits()
        assert (limits["max_total_instances"], limits["max_total_cores"],
                limits["max_total_ram_size"]) == (10, 20, 51200)
        project = cloud.member.project.id
        quotas = member.get_compute_quotas(project)
        assert (quotas["instances"], quotas["key_pairs"], quotas["server_groups"]) == (
            10, 100, 10)
        assert member.list_availability_zone_names() == ["nova"]
        group = member("compute.create_server_group", name="sdk-g", policy="affinity")
        assert [g["name"] for g in member.list_server_groups()] == ["sdk-g"]
        member("compute.delete_server_group", group["id"])
        assert member("compute.server_groups") == []

        # The operator's: an image uploaded and deleted, the hosts, quotas set.
        uploaded = admin("image.create_image", name="tiny", filename=str(cloud.qemu.disk),
                         disk_format="raw", container_format="bare")
        found = admin("image.get_image", uploaded["id"])
        assert (found["status"], found["size"]) == ("active", len(boot_disk())), found
        assert sorted(i["name"] for i in admin("image.images")) == ["cirros", "tiny"]
        admin("image.delete_image", uploaded["id"])
        assert [i["name"] for i in admin("image.images")] == ["cirros"]

        [hypervisor] = admin.list_hypervisors()
        assert (hypervisor["name"], hypervisor["state"], hypervisor["status"]) == (
            KVM, "up", "enabled")
        [service] = admin("compute.services")
        assert (service["binary"], service["host"], service["availability_zone"]) == (
            "nova-compute", KVM, "nova")
        admin.set_compute_quotas(project, instances=7)
        assert member.get_compute_quotas(project)["instances"] == 7
        assert cloud.compute("GET", f"/os-quota-sets/{project}").json()[
            "quota_set"]["instances"] == 7
        admin.delete_compute_quotas(project)
        assert member.get_compute_quotas(project)["instances"] == 10
        aggregate = admin.create_aggregate("sdk-agg", availability_zone="az2")
        assert admin.add_host_to_aggregate("sdk-agg", KVM)["hosts"] == [KVM]
        assert member.list_availability_zone_names() == ["az2"]
        admin.remove_host_from_aggregate("sdk-agg", KVM)
        assert admin.delete_aggregate(aggregate["id"]) is True
        assert admin.list_aggregates() == []
    finally:
        member.close()
        admin.close()
