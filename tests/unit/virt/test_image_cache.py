"""The image cache's pure parts: where it is, the names in it, what a download is checked
against, how big a root disk over an image is, and where the image service is."""

from __future__ import annotations

import hashlib

import pytest

from moorage.model.glance import ImageData
from moorage.virt import image_cache, image_service
from moorage.virt.image_cache import ImageUnacceptable, Verifier
from moorage.virt.libvirt import root_disk
from moorage.virt.libvirt.root_disk import FlavorDiskSmallerThanImage
from tests.unit.virt import builders

DATA = b"x" * 1000


def record(**fields: object) -> ImageData:
    values: dict[str, object] = {
        "id": "i1", "status": "active", "disk_format": "raw", "size": len(DATA),
        "checksum": hashlib.md5(DATA, usedforsecurity=False).hexdigest(),
        "os_hash_algo": "sha512", "os_hash_value": hashlib.sha512(DATA).hexdigest()}
    values.update(fields)
    return ImageData(**values)  # type: ignore[arg-type]


def received(verifier: Verifier, *chunks: bytes) -> str | None:
    for chunk in chunks:
        verifier.update(chunk)
    return verifier.problem()


def test_the_data_is_checked_against_the_records_sha512() -> None:
    verifier = Verifier.of(record())
    assert verifier.algorithm == "sha512"
    assert received(verifier, DATA[:300], DATA[300:]) is None


def test_a_rewound_download_starts_its_hash_again() -> None:
    verifier = Verifier.of(record())
    verifier.update(b"half a first try")
    verifier.reset()
    assert received(verifier, DATA) is None


def test_the_md5_checksum_when_the_record_has_no_multihash() -> None:
    verifier = Verifier.of(record(os_hash_algo=None, os_hash_value=None))
    assert verifier.algorithm == "md5"
    assert received(verifier, DATA) is None
    unknown = Verifier.of(record(os_hash_algo="blake99"))
    assert unknown.algorithm == "md5"


def test_a_record_with_nothing_to_check_against_is_refused() -> None:
    with pytest.raises(ImageUnacceptable, match="Image i1 is unacceptable: its record has "
                       "neither os_hash_value"):
        Verifier.of(record(checksum=None, os_hash_value=None))


@pytest.mark.parametrize(("chunks", "problem"), [
    ((DATA[:-1],), "999 bytes arrived, the image's size is 1000 bytes"),
    ((DATA, b"!"), "1001 bytes arrived, the image's size is 1000 bytes"),
    ((b"y" * 1000,), f"the sha512 of the data is {hashlib.sha512(b'y' * 1000).hexdigest()}, "
                     f"the image's is {hashlib.sha512(DATA).hexdigest()}"),
])
def test_what_did_not_arrive_as_uploaded_is_named(chunks: tuple[bytes, ...],
                                                  problem: str) -> None:
    assert received(Verifier.of(record()), *chunks) == problem


def test_the_cache_is_under_the_instances_path_with_upstreams_names() -> None:
    conf = builders.config(DEFAULT__instances_path="/srv/instances")
    assert str(image_cache.directory(conf)) == "/srv/instances/_base"
    absolute = builders.config(DEFAULT__instances_path="/srv/instances",
                               image_cache__subdirectory_name="/cache/images")
    assert str(image_cache.directory(absolute)) == "/cache/images"
    assert image_cache.file_name("i1") == hashlib.sha1(b"i1").hexdigest()


@pytest.mark.parametrize(("root_gb", "virtual_size", "size"), [
    (1, 1 << 20, 1 << 30),   # the flavor's root disk
    (0, 1 << 20, 1 << 20),   # no root disk in the flavor: the image's size
    (2, 2 << 30, 2 << 30),   # exactly the image
])
def test_a_root_disk_over_an_image(root_gb: int, virtual_size: int, size: int) -> None:
    assert root_disk.size(root_gb, virtual_size) == size


def test_a_flavor_smaller_than_the_image_is_refused_in_upstreams_words() -> None:
    with pytest.raises(FlavorDiskSmallerThanImage) as caught:
        root_disk.size(1, (1 << 30) + 1)
    assert str(caught.value) == (
        "Flavor's disk is too small for requested image. Flavor disk is 1073741824 bytes, "
        "image is 1073741825 bytes.")


def test_the_image_service_is_configured_or_beside_the_compute_api() -> None:
    assert image_service.endpoints(builders.config()) == []
    beside = builders.config(compute_agent__api_url="http://10.0.0.5:9774/")
    assert image_service.endpoints(beside) == ["http://10.0.0.5:9774/image"]
    configured = builders.config(compute_agent__api_url="http://10.0.0.5:9774",
                                 glance__api_servers="http://a:1/image/,http://b:2")
    assert image_service.endpoints(configured) == ["http://a:1/image", "http://b:2"]


def test_the_host_sends_its_service_token_in_the_configured_header() -> None:
    conf = builders.config(glance__api_servers="http://a:1", DEFAULT__service_token="s3")
    service = image_service.ImageService.of(conf)
    assert service is not None
    assert service.servers[0].credentials.headers() == {"x-service-token": "s3"}
    user = builders.config(glance__api_servers="http://a:1", DEFAULT__service_token="s3",
                           glance__auth_header="X-Auth-Token")
    service = image_service.ImageService.of(user)
    assert service is not None
    assert service.servers[0].credentials.headers() == {"x-auth-token": "s3"}
    assert image_service.ImageService.of(builders.config()) is None
