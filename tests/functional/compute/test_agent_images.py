"""A compute agent boots an image's data: the conductor's call over HTTP, the agent's
libvirt driver on real QEMU (TCG), the image from the image service beside the
compute API.

The agent is configured as a deployment would be: no ``[glance]`` option, only the
compute API it registers with (``[compute_agent] api_url``), so it reads images at
``api_url`` + ``/image``. There ``ImageServiceStandIn`` answers Glance's calls; it
stands in for Moorage's own ``/image`` service (and the registration the agent also
sends it is refused, which the agent logs and retries) until that lands (issue 24).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from moorage.compute.client import SpawnFailed
from moorage.compute.launcher import RunningAgent, agent_config, start_agent
from moorage.compute.remote import HTTPAgentClient
from moorage.model.image import Image
from moorage.placement.client import PlacementClient
from moorage.placement.launcher import PlacementProcess
from moorage.virt.driver import Guest
from tests.image_standin import BOOT_MARKER, ImageServiceStandIn, StoredImage, boot_disk
from tests.unit.virt import builders

HOST = "image-agent"
TOKEN = "agent-image-token"


@pytest.fixture
def standin() -> Iterator[ImageServiceStandIn]:
    service = ImageServiceStandIn(TOKEN, prefix="/image").start()
    yield service
    service.stop()


@pytest.fixture
def agent(placement_server: PlacementProcess, libvirt_embed_uri: str,
          standin: ImageServiceStandIn, tmp_path: Path) -> Iterator[RunningAgent]:
    url = placement_server.url
    conf = agent_config(HOST, "libvirt", placement_url=url, api_url=standin.url, overrides=[
        ("libvirt", "virt_type", "qemu"),
        ("libvirt", "connection_uri", libvirt_embed_uri),
        ("DEFAULT", "instances_path", str(tmp_path / "instances")),
        ("DEFAULT", "service_token", TOKEN),
        ("DEFAULT", "report_interval", 60),
    ])
    running = start_agent(conf, placement=PlacementClient(url, "admin"), port=0)
    yield running
    for uuid in running.agent.driver.guests():
        running.agent.driver.destroy(uuid)
    running.stop()


def guest_of(image: Image) -> Guest:
    guest = builders.guest(HOST, image.disk_format)
    return replace(guest, image=image,
                   flavor=replace(guest.flavor, vcpus=1, memory_mb=128, root_gb=1))


def test_a_spawn_over_http_boots_the_images_data_and_a_corrupt_one_reschedules(
        agent: RunningAgent, standin: ImageServiceStandIn, tmp_path: Path) -> None:
    client = HTTPAgentClient(lambda host: agent.url, TOKEN, timeout=120)
    data = boot_disk()
    standin.images["b0070000-0000-4000-8000-000000000001"] = StoredImage(data, "raw")
    good = guest_of(Image.create("b0070000-0000-4000-8000-000000000001", "boot", "raw",
                                 size=len(data)))
    client.spawn(HOST, good)
    console = tmp_path / "instances" / good.uuid / "console.log"
    deadline = time.monotonic() + 60
    while BOOT_MARKER not in (console.read_bytes() if console.exists() else b""):
        assert time.monotonic() < deadline, "the guest did not boot its image"
        time.sleep(0.2)

    standin.images["b0070000-0000-4000-8000-000000000002"] = StoredImage(
        data, "raw", hashlib.sha512(b"something else").hexdigest())
    corrupt = guest_of(Image.create("b0070000-0000-4000-8000-000000000002", "boot", "raw",
                                    size=len(data)))
    with pytest.raises(SpawnFailed) as caught:
        client.spawn(HOST, corrupt)
    assert (caught.value.kind, caught.value.reschedule) == ("ImageDownloadFailed", True)
    assert caught.value.message.startswith(
        "Corrupt image download of image b0070000-0000-4000-8000-000000000002: the sha512 "
        f"of the data is {hashlib.sha512(data).hexdigest()}")
