"""Moorage's services behind a real Keystone (``tests.keystone_fixtures``), as the
tests that need ``[api] auth_strategy = keystone`` start them, and the real
``openstack`` CLI (the compat venv's) logged in to that Keystone.

``KeystoneServices.launch`` starts placement and the compute API as processes, each
with keystonemiddleware in front authenticating as its own service user, and puts
them in Keystone's catalog (``compute`` at ``/v2.1``, ``image`` at ``/image``,
``placement``): a client that knows only Keystone's URL finds both.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from moorage.api.launcher import ComputeApiProcess
from moorage.placement.launcher import PlacementProcess
from tests.compat.upstream import CompatVenvMissing, venv_tool
from tests.keystone_fixtures import Keystone, User

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
    placement: PlacementProcess
    api: ComputeApiProcess
    service_token: str

    @classmethod
    def launch(cls, keystone: Keystone, workdir: Path, *, service_token: str,
               api_config: Sections | None = None) -> KeystoneServices:
        """Start both (side by side), wait until they serve and register them in the
        catalog. The compute API reaches placement as its service user ``nova`` with a
        token of its own; ``api_config`` adds to its configuration. ``stop()`` ends
        them (also when they fail to start)."""
        placement = PlacementProcess(
            workdir / "placement",
            config=keystone_auth(keystone, keystone.service_user("placement")))
        nova = keystone.service_user("nova")
        api = ComputeApiProcess(workdir / "api", placement_url=placement.url, config=_merged(
            keystone_auth(keystone, nova),
            {"DEFAULT": {"service_token": service_token},
             "placement": {"token": keystone.token(nova)},
             "image": {"filesystem_store_datadir": str(workdir / "images")}},
            api_config or {}))
        services = cls(keystone, placement, api, service_token)
        try:
            placement.launch()
            api.launch()
            placement.wait_ready()
            api.wait_ready()
        except BaseException:
            services.stop()
            raise
        keystone.register("compute", "nova", f"{api.url}/v2.1")
        keystone.register("image", "glance", f"{api.url}/image")
        keystone.register("placement", "placement", placement.url)
        return services

    def stop(self) -> None:
        self.api.stop()
        self.placement.stop()


def openstack_tool() -> Path:
    """The compat venv's ``openstack``; fails the test when the venv lacks it."""
    try:
        return venv_tool("openstack")
    except CompatVenvMissing as exc:
        pytest.fail(str(exc))


def openstack_command(keystone: Keystone, user: User, *args: str,
                      timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
    """Run the real ``openstack`` CLI (the compat venv's) logged in as ``user`` by the
    OS_* variables alone (none of the caller's)."""
    tool = openstack_tool()
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith("OS_")}
    return subprocess.run([str(tool), *args], env={**environment,
                                                     **keystone.openstack_env(user)},
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def openstack(keystone: Keystone, user: User, *args: str, timeout: float = 180.0) -> Any:
    """``openstack ARGS -f json`` that must succeed; its decoded output."""
    done = openstack_command(keystone, user, *args, "-f", "json", timeout=timeout)
    assert done.returncode == 0, f"openstack {' '.join(args)}:\n{done.stderr}"
    return json.loads(done.stdout)
