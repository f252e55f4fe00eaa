"""Stop, start, reboot and console output of a real QEMU guest (TCG, libvirt's embedded
driver), through the compute API, its conductor and the libvirt host's agent.

The guest has an empty disk: no OS answers ACPI, so a stop waits ``[DEFAULT]
shutdown_timeout`` (1 s here) and then powers it off, and a soft reboot falls back to
a power cycle after ``[libvirt] wait_soft_reboot_seconds`` (1 s). Each start is a new
QEMU process, which libvirt gives a new domain id. The console is what the firmware
wrote to the serial port. Without libvirt and QEMU this test fails, it does not skip.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from moorage.virt.libvirt import host as libvirt_host
from tests.functional.servers.conftest import Cloud, HostSpec
from tests.functional.servers.test_libvirt import KVM, domain_exists, libvirt_spec


def _domain(uri: str, uuid: str) -> Any:
    return libvirt_host.connect(uri).lookupByUUIDString(uuid)


def _state(uri: str, uuid: str) -> tuple[bool, int]:
    """(running, domain id): virsh domstate and domid."""
    domain = _domain(uri, uuid)
    return bool(domain.isActive()), int(domain.ID())


@pytest.fixture
def cloud(make_cloud: Any, libvirt_embed_uri: str, tmp_path: Path) -> Iterator[Cloud]:
    spec = libvirt_spec(libvirt_embed_uri, tmp_path / "instances")
    quick = HostSpec(spec.name, spec.driver, {
        **spec.options, ("DEFAULT", "shutdown_timeout"): 1,
        ("libvirt", "wait_soft_reboot_seconds"): 1})
    started: Cloud = make_cloud([quick])
    yield started
    for server in started.ok("GET", "/servers/detail?all_tenants=1")["servers"]:
        started.call("DELETE", f"/servers/{server['id']}")
        assert started.wait(server["id"])["status"] == "DELETED"
        assert not domain_exists(libvirt_embed_uri, server["id"])


def _done(cloud: Cloud, uuid: str, body: dict[str, Any]) -> dict[str, Any]:
    response = cloud.action(uuid, body)
    assert response.status_code == 202, response.text
    return cloud.wait(uuid)


def _console(cloud: Cloud, uuid: str, length: int | None = None) -> str:
    response = cloud.action(uuid, {"os-getConsoleOutput": {"length": length}})
    assert response.status_code == 200, response.text
    return str(response.json()["output"])


def test_a_qemu_guest_stops_starts_reboots_and_shows_its_console(
        cloud: Cloud, libvirt_embed_uri: str) -> None:
    uri = libvirt_embed_uri
    flavor = cloud.flavor("tiny", vcpus=1, ram=128, disk=1)
    server = cloud.boot_and_wait(flavor, cloud.image("plain", "qcow2"))
    assert server["status"] == "ACTIVE", server.get("fault")
    uuid = server["id"]
    running, first = _state(uri, uuid)
    assert running and server["OS-EXT-SRV-ATTR:host"] == KVM

    # The firmware writes to the serial port within moments of the start.
    deadline = time.monotonic() + 30
    # Its first bytes are escape sequences (clear the screen): wait for its words.
    words = ("SeaBIOS", "iPXE", "Booting")
    while (not any(word in _console(cloud, uuid) for word in words)
           and time.monotonic() < deadline):
        time.sleep(0.5)
    whole = _console(cloud, uuid)
    assert any(word in whole for word in words), whole[:500]
    # The guest keeps writing between the reads: the last line read alone is one line,
    # the one ``whole`` ended with or a line written after it (the same line, longer,
    # when the firmware was still writing it).
    last = _console(cloud, uuid, 1)
    after = _console(cloud, uuid)
    assert "\n" not in last
    assert any(line.startswith(last) for line in after.split("\n")), (last, after[-500:])
    assert last.startswith(whole.split("\n")[-1]) or last in after[len(whole):]

    stopped = _done(cloud, uuid, {"os-stop": None})
    assert (stopped["status"], stopped["OS-EXT-STS:power_state"]) == ("SHUTOFF", 4)
    assert _state(uri, uuid)[0] is False  # virsh domstate: shut off, still defined

    assert _done(cloud, uuid, {"os-start": None})["status"] == "ACTIVE"
    running, second = _state(uri, uuid)
    assert running and second != first  # a new QEMU

    assert _done(cloud, uuid, {"reboot": {"type": "HARD"}})["status"] == "ACTIVE"
    running, third = _state(uri, uuid)
    assert running and third != second

    # No OS answers ACPI: the soft reboot power-cycles it after its wait.
    assert _done(cloud, uuid, {"reboot": {"type": "SOFT"}})["status"] == "ACTIVE"
    running, fourth = _state(uri, uuid)
    assert running and fourth != third
