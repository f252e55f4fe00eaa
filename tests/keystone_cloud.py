"""Moorage's services behind a real Keystone (``tests.keystone_fixtures``), as the
tests that need ``[api] auth_strategy = keystone`` start them, and the real
``openstack`` CLI (the compat venv's) logged in to that Keystone.

``KeystoneServices.launch`` starts placement and the compute API as processes, each
with keystonemiddleware in front authenticating as its own service user, and puts
them in Keystone's catalog (``compute`` at ``/v2.1``, ``image`` at ``/image``,
``placement``): a client that knows only Keystone's URL finds both.

``qemu_cloud`` adds one libvirt compute agent (libvirt's embedded QEMU driver, TCG
guests) and the users a client test logs in as: the cloud the real clients drive
(tests/compat/test_openstack_cli.py, test_compute_clients.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from moorage.api.launcher import ComputeApiProcess
from moorage.compute.launcher import RunningAgent, agent_config, start_agent
from moorage.placement.launcher import PlacementProcess
from moorage.virt.libvirt import host as libvirt_host
from tests.compat.upstream import CompatVenvMissing, UpstreamPlacement, venv_tool
from tests.functional.servers.test_libvirt import domain_exists, libvirt_spec
from tests.image_standin import boot_disk
from tests.keystone_fixtures import DEFAULT_DOMAIN, Keystone, User

Sections = dict[str, dict[str, object]]


def keystone_auth(keystone: Keystone, user: User) -> Sections:
    """``auth_strategy = keystone`` with keystonemiddleware authenticating as ``user``.
    Every token is asked about (no cache), so a revoked one is refused at once."""
    return {"api": {"auth_strategy": "keystone"}, "keystone_authtoken": {
        **keystone.authtoken_section(user), "token_cache_time": -1}}


def _merged(*configs: Sections) -> Sections:
    merged: Sections = {}
    for config in configs:
        for section, options in config.items():
            merged.setdefault(section, {}).update(options)
    return merged


@dataclass
class KeystoneServices:
    """Placement and the compute API as processes behind ``keystone``."""

    keystone: Keystone
    placement: PlacementProcess | UpstreamPlacement
    api: ComputeApiProcess
    service_token: str

    @classmethod
    def launch(cls, keystone: Keystone, workdir: Path, *, service_token: str,
               api_config: Sections | None = None, image_service: bool = True,
               upstream_placement: bool = False) -> KeystoneServices:
        """Start both (side by side), wait until they serve and register them in the
        catalog. The compute API reaches placement as its service user ``nova`` with a
        token of its own; ``api_config`` adds to its configuration. ``stop()`` ends
        them (also when they fail to start). ``image_service``: the compute API's own
        image service is the catalog's ``image`` too. ``upstream_placement``: upstream's
        OpenStack Placement (the compat venv's, ``tests.compat.upstream``) validating
        Keystone's tokens, instead of Moorage's.

        The compute API finds placement in the catalog and authenticates to it with
        keystoneauth1, password of its service user ``nova`` (nova's ``[placement]``
        options); its tokens are renewed before they expire."""
        placement_user = keystone.service_user("placement")
        placement: PlacementProcess | UpstreamPlacement
        if upstream_placement:
            try:
                placement = UpstreamPlacement(workdir / "placement", authtoken={
                    **keystone.authtoken_section(placement_user), "token_cache_time": -1})
            except CompatVenvMissing as exc:
                pytest.fail(str(exc))
        else:
            placement = PlacementProcess(workdir / "placement",
                                         config=keystone_auth(keystone, placement_user))
        keystone.register("placement", "placement", placement.url)
        nova = keystone.service_user("nova")
        api = ComputeApiProcess(workdir / "api", placement_url=None, config=_merged(
            keystone_auth(keystone, nova),
            {"DEFAULT": {"service_token": service_token},
             "placement": keystone.keystoneauth_section(nova),
             "image": {"filesystem_store_datadir": str(workdir / "images")}},
            api_config or {}))
        services = cls(keystone, placement, api, service_token)
        try:
            if isinstance(placement, PlacementProcess):  # upstream's is up already
                placement.launch()
            api.launch()
            if isinstance(placement, PlacementProcess):
                placement.wait_ready()
            api.wait_ready()
        except BaseException:
            services.stop()
            raise
        keystone.register("compute", "nova", f"{api.url}/v2.1")
        if image_service:  # else a real Glance is the cloud's (tests.glance_fixtures)
            keystone.register("image", "glance", f"{api.url}/image")
        return services

    def stop(self) -> None:
        self.api.stop()
        self.placement.stop()


def clouds_yaml_auth(keystone: Keystone, user: User, **changed: str) -> dict[str, str]:
    """The ``auth`` of a clouds.yaml cloud that logs in as ``user`` (``changed``: what
    differs, a wrong password...)."""
    return {"auth_url": keystone.v3, "username": user.name, "password": user.password,
            "project_name": user.project.name, "user_domain_id": DEFAULT_DOMAIN,
            "project_domain_id": DEFAULT_DOMAIN, **changed}


def use_clouds_yaml(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """The clouds of ``path`` and nothing of the caller's: no OS_* variable, no
    MOORAGE_* URL or token of the commands' DEVELOPMENT way."""
    for name in list(os.environ):
        if name.startswith(("OS_", "MOORAGE_COMPUTE_", "MOORAGE_PLACEMENT_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))


PLACEMENT_VERSION = {"OpenStack-API-Version": "placement 1.39"}


def admin_provider(placement_url: str, token: str, name: str,
                   inventories: dict[str, int], traits: list[str]) -> str:
    """A resource provider an admin writes into placement as a compute service would
    (its custom classes and traits made first); its uuid."""
    headers = {"X-Auth-Token": token, **PLACEMENT_VERSION}
    for custom in [t for t in traits if t.startswith("CUSTOM_")]:
        requests.put(f"{placement_url}/traits/{custom}", headers=headers, timeout=60)
    for custom in [rc for rc in inventories if rc.startswith("CUSTOM_")]:
        requests.put(f"{placement_url}/resource_classes/{custom}", headers=headers,
                     timeout=60)
    made = requests.post(f"{placement_url}/resource_providers", json={"name": name},
                         headers=headers, timeout=60)
    assert made.status_code == 200, made.text
    uuid = str(made.json()["uuid"])
    for path, body in (("inventories", {"resource_provider_generation": 0, "inventories": {
                           rc: {"total": total} for rc, total in inventories.items()}}),
                       ("traits", {"resource_provider_generation": 1, "traits": traits})):
        put = requests.put(f"{placement_url}/resource_providers/{uuid}/{path}",
                           headers=headers, json=body, timeout=60)
        assert put.status_code == 200, put.text
    return uuid


def client_tool(name: str) -> Path:
    """A client of the compat venv (``openstack``, ``nova``, ``python``); fails the test
    when the venv lacks it."""
    try:
        return venv_tool(name)
    except CompatVenvMissing as exc:
        pytest.fail(str(exc))


def openstack_tool() -> Path:
    """The compat venv's ``openstack``; fails the test when the venv lacks it."""
    return client_tool("openstack")


def client_environment(keystone: Keystone, user: User) -> dict[str, str]:
    """This process's environment without its ``OS_*`` variables, with those that log a
    client (the ``openstack`` CLI, novaclient, openstacksdk) in as ``user``."""
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith("OS_")}
    return {**environment, **keystone.openstack_env(user)}


def client_command(tool: str, keystone: Keystone, user: User, *args: str,
                   timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
    """Run the compat venv's client ``tool`` logged in as ``user`` by the OS_*
    variables alone (none of the caller's)."""
    return subprocess.run([str(client_tool(tool)), *args],
                          env=client_environment(keystone, user),
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def openstack_command(keystone: Keystone, user: User, *args: str,
                      timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
    """Run the real ``openstack`` CLI (the compat venv's) logged in as ``user``."""
    return client_command("openstack", keystone, user, *args, timeout=timeout)


def openstack(keystone: Keystone, user: User, *args: str, timeout: float = 180.0) -> Any:
    """``openstack ARGS -f json`` that must succeed; its decoded output."""
    done = openstack_command(keystone, user, *args, "-f", "json", timeout=timeout)
    assert done.returncode == 0, f"openstack {' '.join(args)}:\n{done.stderr}"
    return json.loads(done.stdout)


@dataclass
class QemuCloud:
    """Keystone, the services behind it and one libvirt host, with an operator (admin of
    the project admin) and a user (member of the project demo) to log in as."""

    keystone: Keystone
    services: KeystoneServices
    agent: RunningAgent
    admin: User
    member: User
    disk: Path  # a boot disk (tests.image_standin.boot_disk) to upload as an image
    libvirt_uri: str

    def cli(self, user: User, *args: str) -> Any:
        """``openstack ARGS -f json`` as ``user``; its JSON output."""
        return openstack(self.keystone, user, *args)

    def run(self, user: User, *args: str) -> str:
        """``openstack ARGS`` (a command that prints no table) as ``user``; its stdout."""
        done = openstack_command(self.keystone, user, *args)
        assert done.returncode == 0, f"openstack {' '.join(args)}:\n{done.stderr}"
        return done.stdout

    def status(self, name: str) -> str:
        return str(self.cli(self.member, "server", "show", name)["status"])

    def wait_status(self, name: str, wanted: str, timeout: float = 60.0) -> None:
        deadline, status = time.monotonic() + timeout, ""
        while time.monotonic() < deadline:
            status = self.status(name)
            if status == wanted:
                return
            assert status != "ERROR", f"{name} is ERROR, not {wanted}"
            time.sleep(0.5)
        raise AssertionError(f"{name} still {status} after {timeout}s, not {wanted}")


@contextlib.contextmanager
def qemu_cloud(keystone: Keystone, libvirt_uri: str, workdir: Path, *,
               service_token: str) -> Iterator[QemuCloud]:
    """The cloud of the client tests; on the way out every server left is deleted and
    its guest destroyed, then the agent and the services end."""
    services = KeystoneServices.launch(keystone, workdir, service_token=service_token)
    agent: RunningAgent | None = None
    try:
        spec = libvirt_spec(libvirt_uri, workdir / "instances")
        compute = keystone.service_user("compute")
        # The agent reaches placement as its service user (keystoneauth1, password; the
        # endpoint from the catalog), the compute API (heartbeats, the image's data)
        # with the service token.
        conf = agent_config(spec.name, spec.driver, api_url=services.api.url, overrides=[
                                *(("placement", option, value) for option, value in
                                  keystone.keystoneauth_section(compute).items()),
                                ("DEFAULT", "service_token", service_token),
                                # The boot sector ignores ACPI: a stop powers it off
                                # after this many seconds.
                                ("DEFAULT", "shutdown_timeout", 1),
                                *((g, o, v) for (g, o), v in spec.options.items())])
        agent = start_agent(conf, port=0)
        project = keystone.create_project("demo")
        disk = workdir / "boot.raw"
        disk.write_bytes(boot_disk())
        yield QemuCloud(keystone, services, agent,
                        admin=keystone.create_user("ops", keystone.project("admin"), "admin"),
                        member=keystone.create_user("dana", project, "member"), disk=disk,
                        libvirt_uri=libvirt_uri)
    finally:
        if agent is not None:
            _remove_guests(keystone, services, libvirt_uri)
            agent.stop()
        services.stop()


def _remove_guests(keystone: Keystone, services: KeystoneServices, uri: str) -> None:
    """Delete every server a failed test left, and its guest: QEMU outlives the test
    process otherwise."""
    import libvirt  # present: libvirt_embed_uri has required it

    admin = {"X-Auth-Token": keystone.admin_token}
    url = f"{services.api.url}/v2.1/servers"
    left = [s["id"] for s in requests.get(f"{url}?all_tenants=1", headers=admin,
                                          timeout=60).json().get("servers", [])]
    for uuid in left:
        requests.delete(f"{url}/{uuid}", headers=admin, timeout=60)
    deadline = time.monotonic() + 30
    while left and time.monotonic() < deadline and requests.get(
            f"{url}?all_tenants=1", headers=admin, timeout=60).json().get("servers"):
        time.sleep(0.5)
    for uuid in left:
        if domain_exists(uri, uuid):
            domain = libvirt_host.connect(uri).lookupByUUIDString(uuid)
            with contextlib.suppress(libvirt.libvirtError):
                domain.destroy()
            domain.undefine()
