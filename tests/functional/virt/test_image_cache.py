"""The image cache against an image service over real HTTP, with the real qemu-img.

The image service is ``tests.image_standin.ImageServiceStandIn``, which stands in for
Moorage's own ``/image`` service until that lands (issue 24). No hypervisor here:
``tests/functional/virt/libvirt/test_image_boot.py`` boots guests from the cache.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from moorage.model.image import Image
from moorage.placement.launcher import free_port
from moorage.virt import image_cache
from moorage.virt.image_service import ImageNotFound, ImageService, ImageServiceUnavailable
from moorage.virt.libvirt.guest import Disk
from moorage.virt.libvirt.root_disk import create
from moorage.virt.switches import Choice
from tests.image_standin import ImageServiceStandIn, StoredImage, boot_disk
from tests.unit.virt import builders

TOKEN = "cache-token"
IMAGE_ID = "c0ffee00-0000-4000-8000-000000000001"


@pytest.fixture
def standin() -> Iterator[ImageServiceStandIn]:
    service = ImageServiceStandIn(TOKEN).start()
    service.images[IMAGE_ID] = StoredImage(boot_disk(), "raw")
    yield service
    service.stop()


def service_of(*urls: str, token: str = TOKEN, retries: int = 3) -> ImageService:
    service = ImageService.of(builders.config(glance__api_servers=",".join(urls),
                                              DEFAULT__service_token=token,
                                              glance__num_retries=retries))
    assert service is not None
    return service


def image(image_id: str = IMAGE_ID) -> Image:
    return Image.create(image_id, "boot", "raw", size=len(boot_disk()))


def test_an_image_is_downloaded_once_and_then_found_in_the_cache(
        standin: ImageServiceStandIn, tmp_path: Path) -> None:
    service = service_of(standin.url)
    first = image_cache.fetch(tmp_path, image(), service, force_raw=True)
    again = image_cache.fetch(tmp_path, image(), service, force_raw=True)
    assert first == again == image_cache.CachedImage(
        tmp_path / image_cache.file_name(IMAGE_ID), "raw", len(boot_disk()))
    assert first.path.read_bytes() == boot_disk()
    assert standin.downloads[IMAGE_ID] == 1


def test_an_unreachable_server_is_passed_over_for_the_next(
        standin: ImageServiceStandIn, tmp_path: Path) -> None:
    service = service_of(f"http://127.0.0.1:{free_port()}", standin.url)
    assert image_cache.fetch(tmp_path, image(), service, force_raw=True).virtual_size == \
        len(boot_disk())


def test_no_server_answering_is_named(tmp_path: Path) -> None:
    service = service_of(f"http://127.0.0.1:{free_port()}", retries=1)
    with pytest.raises(ImageServiceUnavailable, match="no image service gave its record "
                       r"\(2 tries\): .*connection refused"):
        image_cache.fetch(tmp_path, image(), service, force_raw=True)


def test_an_unknown_image_is_not_found(standin: ImageServiceStandIn, tmp_path: Path) -> None:
    missing = "c0ffee00-0000-4000-8000-00000000dead"
    with pytest.raises(ImageNotFound, match=f"Image {missing} could not be found."):
        image_cache.fetch(tmp_path, image(missing), service_of(standin.url), force_raw=True)
    assert [p.name for p in tmp_path.iterdir()] == [f"{image_cache.file_name(missing)}.lock"]


def test_a_wrong_token_is_refused_by_the_image_service(standin: ImageServiceStandIn,
                                                       tmp_path: Path) -> None:
    with pytest.raises(ImageServiceUnavailable, match="answered 401"):
        image_cache.fetch(tmp_path, image(), service_of(standin.url, token="wrong"),
                          force_raw=True)
    assert standin.downloads[IMAGE_ID] == 0


def test_without_an_image_service_an_image_with_data_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ImageServiceUnavailable, match=r"set \[glance\] api_servers"):
        image_cache.fetch(tmp_path, image(), None, force_raw=True)


def test_a_raw_root_disk_is_a_copy_grown_to_the_flavor(standin: ImageServiceStandIn,
                                                       tmp_path: Path) -> None:
    base = image_cache.fetch(tmp_path / "_base", image(), service_of(standin.url),
                             force_raw=True)
    path = tmp_path / "disk"
    create(Disk("disk", Choice("virtio", "test"), "vda", "raw", str(path)), 1, base)
    assert path.stat().st_size == 1 << 30
    with path.open("rb") as disk:
        assert disk.read(len(boot_disk())) == boot_disk()
