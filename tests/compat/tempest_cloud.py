"""The Moorage cloud Tempest runs against, and the ``tempest.conf`` that describes it.

A real Keystone (``tests.keystone_fixtures``), placement and the compute API as
processes behind keystonemiddleware (``tests.keystone_cloud``), two libvirt compute
agents on libvirt's embedded QEMU driver (TCG guests; one in this process, one a
process of its own, since a process holds one embedded driver), a bootable
image uploaded to Moorage's image service and two flavors. ``tempest_config``
writes what Tempest must know, with feature flags that say what Moorage does and
does not do (each ``False`` names why).

``python -m tests.compat.tempest_cloud WORKDIR`` brings the cloud up, writes
``WORKDIR/etc/tempest.conf`` and waits: a developer points Tempest at it by hand
(``tests/compat/tempest_run.py`` is what CI runs).
"""

from __future__ import annotations

import argparse
import configparser
import contextlib
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import requests

from moorage.api.launcher import AgentProcess
from moorage.compute.launcher import RunningAgent, agent_config, start_agent
from tests.image_standin import boot_disk
from tests.keystone_cloud import KeystoneServices
from tests.keystone_fixtures import (
    ADMIN_PASSWORD,
    REGION,
    Keystone,
    make_template,
)

SERVICE_TOKEN = "tempest-service-token"
DOMAIN_NAME = "Default"  # keystone-manage bootstrap's domain (its id is "default")
HOST = "tempest-compute-1"  # an agent in this process
SECOND_HOST = "tempest-compute-2"  # an agent process: one embedded libvirt per process
# Tempest's flavors: small enough that its many servers fit the one TCG host, and
# its default quotas (nova's: 10 instances, 20 cores, 50 GiB of RAM).
FLAVORS = (("m1.nano", 64, 1, 1), ("m1.micro", 128, 1, 1))


@dataclass
class TempestCloud:
    workdir: Path
    keystone: Keystone
    services: KeystoneServices
    agent: RunningAgent
    second: AgentProcess
    libvirt_roots: tuple[Path, Path]
    image_ids: list[str] = field(default_factory=list)
    flavor_ids: list[str] = field(default_factory=list)

    def stop(self) -> None:
        _remove_servers(self)
        self.agent.stop()
        self.second.stop()
        self.services.stop()
        self.keystone.stop()
        from moorage.virt.libvirt import host

        host._close_all()
        for root in self.libvirt_roots:
            shutil.rmtree(root, ignore_errors=True)


def _embedded_libvirt() -> tuple[Path, str]:
    """A root of libvirt's embedded QEMU driver (as tests/libvirt_fixtures.py makes)."""
    root = Path(tempfile.mkdtemp(prefix="moorage-tl-"))
    (root / "etc").mkdir()
    (root / "etc" / "qemu.conf").write_text(
        'user = "root"\ngroup = "root"\nstdio_handler = "file"\n'
        'swtpm_user = "root"\nswtpm_group = "root"\n')
    return root, f"qemu:///embed?root={root}"


def launch(workdir: Path) -> TempestCloud:
    """The cloud, up and registered in Keystone's catalog; ``stop()`` ends it."""
    workdir.mkdir(parents=True, exist_ok=True)
    keystone = Keystone(make_template(workdir / "keystone-template"), workdir / "keystone")
    keystone.start()
    with contextlib.ExitStack() as undo:
        undo.callback(keystone.stop)
        services = KeystoneServices.launch(keystone, workdir, service_token=SERVICE_TOKEN)
        undo.callback(services.stop)
        root, uri = _embedded_libvirt()
        undo.callback(shutil.rmtree, root, ignore_errors=True)
        compute = keystone.service_user("compute")
        second_root, second_uri = _embedded_libvirt()
        undo.callback(shutil.rmtree, second_root, ignore_errors=True)
        second = AgentProcess(workdir / SECOND_HOST, SECOND_HOST,
                              placement_url=services.placement.url,
                              api_url=services.api.url, config={
                                  "DEFAULT": {"compute_driver": "libvirt",
                                              "service_token": SERVICE_TOKEN,
                                              "shutdown_timeout": 1,
                                              "instances_path":
                                                  str(workdir / SECOND_HOST / "instances")},
                                  "libvirt": {"virt_type": "qemu",
                                              "connection_uri": second_uri},
                                  # keystoneauth1, as nova-compute reaches placement
                                  "placement": keystone.keystoneauth_section(compute)})
        second.launch()
        undo.callback(second.stop)
        conf = agent_config(HOST, "libvirt", placement_url=services.placement.url,
                            api_url=services.api.url, overrides=[
                                ("DEFAULT", "service_token", SERVICE_TOKEN),
                                # The boot sector ignores ACPI: a stop powers it off
                                # after a second.
                                ("DEFAULT", "shutdown_timeout", 1),
                                ("DEFAULT", "instances_path", str(workdir / "instances")),
                                ("libvirt", "virt_type", "qemu"),
                                ("libvirt", "connection_uri", uri),
                                *(("placement", option, value) for option, value in
                                  keystone.keystoneauth_section(compute).items())])
        agent = start_agent(conf, port=0)
        undo.callback(agent.stop)
        second.wait_ready()
        undo.pop_all()
    cloud = TempestCloud(workdir, keystone, services, agent, second, (root, second_root))
    try:
        _populate(cloud)
    except BaseException:
        cloud.stop()
        raise
    return cloud


def _admin_headers(cloud: TempestCloud) -> dict[str, str]:
    return {"X-Auth-Token": cloud.keystone.admin_token,
            "OpenStack-API-Version": "compute 2.1"}


def _populate(cloud: TempestCloud) -> None:
    """Two public images of the boot disk (Tempest's image_ref and image_ref_alt) and
    two public flavors."""
    api = cloud.services.api.url
    headers = _admin_headers(cloud)
    disk = boot_disk()
    for name in ("tempest-boot", "tempest-boot-alt"):
        created = requests.post(f"{api}/image/v2/images", headers=headers, timeout=60, json={
            "name": name, "disk_format": "raw", "container_format": "bare",
            "visibility": "public"})
        created.raise_for_status()
        image_id = created.json()["id"]
        uploaded = requests.put(f"{api}/image/v2/images/{image_id}/file", data=disk,
                                timeout=60, headers={
                                    **headers, "Content-Type": "application/octet-stream"})
        uploaded.raise_for_status()
        cloud.image_ids.append(image_id)
    for name, ram, vcpus, disk_gb in FLAVORS:
        made = requests.post(f"{api}/v2.1/flavors", headers=headers, timeout=60, json={
            "flavor": {"name": name, "ram": ram, "vcpus": vcpus, "disk": disk_gb}})
        made.raise_for_status()
        cloud.flavor_ids.append(made.json()["flavor"]["id"])


def _remove_servers(cloud: TempestCloud) -> None:
    """Delete what a run left behind: QEMU guests outlive this process otherwise."""
    url = f"{cloud.services.api.url}/v2.1/servers"
    headers = _admin_headers(cloud)
    with contextlib.suppress(requests.RequestException):
        left = requests.get(f"{url}?all_tenants=1", headers=headers, timeout=60)
        for server in left.json().get("servers", []):
            requests.delete(f"{url}/{server['id']}", headers=headers, timeout=60)


# What Moorage does not do, said to Tempest (each flag's reason in its comment).
COMPUTE_FEATURES = {
    "console_output": True,
    "resize": True,
    "cold_migration": True,
    "live_migration": False,  # no live migration in Moorage
    "block_migration_for_live_migration": False,
    "pause": False,  # no pause/unpause action
    "suspend": False,  # no suspend/resume action
    "shelve": False,  # no shelve
    "shelve_migrate": False,
    "snapshot": False,  # no createImage of a server
    "rescue": False,  # no rescue
    "stable_rescue": False,
    "change_password": False,  # no guest agent
    "interface_attach": False,  # no Neutron
    "vnc_console": False,  # no consoles
    "spice_console": False,
    "serial_console": False,
    "rdp_console": False,
    "metadata_service": False,  # no metadata service
    "config_drive": False,  # no config drive
    "personality": False,  # files are validated and counted, not injected
    "attach_encrypted_volume": False,  # no Cinder
    "swap_volume": False,
    "volume_multiattach": False,
    "volume_backed_live_migration": False,
    "can_migrate_between_any_hosts": False,
    "disk_config": True,
    "hostname_fqdn_sanitization": False,
    "unified_limits": False,
}


def tempest_config(cloud: TempestCloud) -> configparser.ConfigParser:
    """tempest.conf for ``cloud``: dynamic credentials through Keystone's admin, no
    Neutron, Cinder or Swift, no guest validation (no network reaches the guests)."""
    config = configparser.ConfigParser(interpolation=None)
    config.optionxform = str  # type: ignore[assignment,method-assign]
    images, flavors = cloud.image_ids, cloud.flavor_ids
    config.read_dict({
        "DEFAULT": {"log_file": str(cloud.workdir / "tempest.log"), "debug": "true"},
        "oslo_concurrency": {"lock_path": str(cloud.workdir / "tempest-locks")},
        "auth": {
            "use_dynamic_credentials": "true", "create_isolated_networks": "false",
            "admin_username": "admin", "admin_password": ADMIN_PASSWORD,
            "admin_project_name": "admin", "admin_domain_name": DOMAIN_NAME,
            "default_credentials_domain_name": DOMAIN_NAME},
        "identity": {"uri_v3": cloud.keystone.v3, "auth_version": "v3",
                     "region": REGION},
        "identity-feature-enabled": {"api_v2": "false"},
        "service_available": {"nova": "true", "glance": "true", "neutron": "false",
                              "cinder": "false", "swift": "false", "heat": "false",
                              "horizon": "false"},
        "compute": {"image_ref": images[0], "image_ref_alt": images[1],
                    "flavor_ref": flavors[0], "flavor_ref_alt": flavors[1],
                    "min_compute_nodes": "2", "min_microversion": "2.1",
                    "max_microversion": "latest", "build_timeout": "120",
                    "region": REGION},
        "compute-feature-enabled": {
            **{name: str(value).lower() for name, value in COMPUTE_FEATURES.items()},
            "scheduler_enabled_filters": "AvailabilityZoneFilter,ComputeFilter,"
                                         "ServerGroupAntiAffinityFilter,"
                                         "ServerGroupAffinityFilter"},
        "image": {"region": REGION, "build_timeout": "120",
                  "container_formats": "bare,ami,ari,aki,ovf,ova",
                  "disk_formats": "raw,qcow2,ami,ari,aki,vhd,vhdx,vmdk,vdi,iso"},
        "image-feature-enabled": {"api_v2": "true", "api_v1": "false",
                                  "import_image": "false", "os_glance_reserved": "true"},
        "validation": {"run_validation": "false"},
        "network-feature-enabled": {"api_extensions": ""},
        "volume-feature-enabled": {"api_v3": "false"},
    })
    return config


def write_tempest_config(cloud: TempestCloud, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as output:
        tempest_config(cloud).write(output)
    return path


@contextlib.contextmanager
def running(workdir: Path) -> Iterator[TempestCloud]:
    cloud = launch(workdir)
    try:
        yield cloud
    finally:
        cloud.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path)
    args = parser.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with running(args.workdir.resolve()) as cloud:
        path = write_tempest_config(cloud, cloud.workdir / "etc" / "tempest.conf")
        print(f"cloud up; TEMPEST_CONFIG_DIR={path.parent}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()


if __name__ == "__main__":
    main()
