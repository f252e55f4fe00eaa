"""A guest boots the bytes uploaded to Moorage's image service, end to end: the image's
data is uploaded (glance v2 at /image), a server of it is created through the compute
API, the libvirt host's agent downloads the data with the service token, checks it,
and a real QEMU guest (TCG) runs it: the boot sector's marker is on the guest's console,
read back through os-getConsoleOutput. Without libvirt and QEMU this test fails, it
does not skip."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from moorage.image.filestore import FileStore
from tests.functional.servers.conftest import Cloud
from tests.functional.servers.test_libvirt import KVM, libvirt_spec
from tests.image_standin import BOOT_MARKER, boot_disk


@pytest.fixture
def cloud(make_cloud: Any, libvirt_embed_uri: str, tmp_path: Path) -> Iterator[Cloud]:
    started: Cloud = make_cloud([libvirt_spec(libvirt_embed_uri, tmp_path / "instances")])
    yield started
    for server in started.ok("GET", "/servers/detail?all_tenants=1")["servers"]:
        started.call("DELETE", f"/servers/{server['id']}")
        started.wait(server["id"])


def _upload(cloud: Cloud, name: str, data: bytes) -> str:
    image = cloud.image(name, "raw")
    put = cloud.http.put(f"{cloud.api_url}/image/v2/images/{image}/file", data=data,
                         headers={"Content-Type": "application/octet-stream"}, timeout=60)
    assert put.status_code == 204, put.text
    record = cloud.http.get(f"{cloud.api_url}/image/v2/images/{image}", timeout=60).json()
    assert (record["status"], record["size"]) == ("active", len(data)), record
    return image


def test_a_server_boots_the_bytes_uploaded_to_the_image_service(cloud: Cloud) -> None:
    image = _upload(cloud, "marker", boot_disk())
    flavor = cloud.flavor("tiny", vcpus=1, ram=128, disk=1)
    server = cloud.boot_and_wait(flavor, image)
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == KVM
    deadline, output = time.monotonic() + 60, ""
    while BOOT_MARKER.decode() not in output and time.monotonic() < deadline:
        time.sleep(0.5)
        answer = cloud.action(server["id"], {"os-getConsoleOutput": {}})
        assert answer.status_code == 200, answer.text
        output = str(answer.json()["output"])
    assert BOOT_MARKER.decode() in output, output[-500:]


def test_an_image_whose_bytes_changed_on_disk_is_refused_by_the_host(
        cloud: Cloud, tmp_path: Path) -> None:
    """The host checks what it downloaded against the hashes the upload recorded: a data
    file altered behind the image service's back fails the build with the reason."""
    image = _upload(cloud, "tampered", boot_disk())
    stored = FileStore.of(cloud.state.conf).path(image)
    assert stored.stat().st_size == len(boot_disk())
    stored.write_bytes(b"\x00" * len(boot_disk()))
    flavor = cloud.flavor("tiny2", vcpus=1, ram=128, disk=1)
    server = cloud.boot_and_wait(flavor, image)
    assert server["status"] == "ERROR", server
    assert "ImageDownloadFailed" in str(server.get("fault")), server.get("fault")
