"""Images from a Glance GET /v2/images answer: properties are the keys beside
Glance's own attributes; only active images; a malformed listing is one line."""

from __future__ import annotations

import pytest

from moorage.model.glance import ImageData, image_data, images_from_listing


def test_properties_beside_glance_attributes() -> None:
    listing = images_from_listing({"images": [
        {"id": "i1", "name": "win", "status": "active", "disk_format": "vmdk",
         "container_format": "bare", "visibility": "public", "min_disk": 40, "size": 10,
         "tags": ["windows"], "os_hidden": False, "self": "/v2/images/i1",
         "hw_vif_model": "VirtualE1000", "trait:HW_CPU_X86_AVX2": "required",
         "vmware_ostype": "windows9Server64Guest"},
        {"id": "i2", "name": "half", "status": "queued", "disk_format": None},
    ], "next": "/v2/images?marker=i2"}, "f.json")
    [image] = listing.images
    assert (image.id, image.name, image.disk_format) == ("i1", "win", "vmdk")
    assert image.properties.hw_vif_model == "e1000"
    assert image.properties.traits_required == {"HW_CPU_X86_AVX2"}
    assert image.properties.other == {"vmware_ostype": "windows9Server64Guest"}
    assert (listing.not_active, listing.next_page) == (1, "/v2/images?marker=i2")


@pytest.mark.parametrize(("data", "message"), [
    ([], "f.json: not a Glance image listing: expected the answer of GET /v2/images"),
    ({"images": {}}, "f.json: not a Glance image listing"),
    ({"images": [{"name": "x"}]}, 'f.json: images[0] is not an image with an "id"'),
    ({"images": [{"id": "i1", "status": "active"}]},
     "f.json: image i1: active but has no disk_format"),
    ({"images": [{"id": "i1", "disk_format": "exe"}]},
     "f.json: image i1: disk_format: 'exe' is not valid; allowed: ami, "),
    ({"images": [{"id": "i1", "disk_format": "raw", "hw_disk_bus": "floppy"}]},
     "f.json: image i1: hw_disk_bus: 'floppy' is not valid; allowed: fdc, "),
])
def test_malformed(data: object, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        images_from_listing(data, "f.json")
    assert str(raised.value).startswith(message), str(raised.value)


def test_a_listed_images_size_says_it_has_data() -> None:
    listing = images_from_listing({"images": [
        {"id": "i1", "name": "a", "status": "active", "disk_format": "raw", "size": 10},
        {"id": "i2", "name": "b", "status": "active", "disk_format": "raw", "size": None},
    ]}, "f.json")
    assert [i.size for i in listing.images] == [10, None]


RECORD = {"id": "i1", "name": "cirros", "status": "active", "disk_format": "qcow2",
          "size": 1024, "checksum": "ab" * 16, "os_hash_algo": "sha512",
          "os_hash_value": "cd" * 64, "virtual_size": None, "self": "/v2/images/i1"}


def test_an_images_data_facts_from_its_record() -> None:
    assert image_data(RECORD, "i1") == ImageData("i1", "active", "qcow2", 1024, "ab" * 16,
                                                 "sha512", "cd" * 64)
    queued = {"id": "i1", "status": "queued", "disk_format": None, "size": None,
              "checksum": None, "os_hash_algo": None, "os_hash_value": None}
    assert image_data(queued, "i1") == ImageData("i1", "queued", None, None)


@pytest.mark.parametrize(("change", "message"), [
    ({"id": "i2"}, "not Glance's record of image i1"),
    ({"status": None}, "image i1: status is None, not a string"),
    ({"size": "1024"}, "image i1: size is '1024', not a byte count or null"),
    ({"size": True}, "image i1: size is True, not a byte count or null"),
    ({"size": -1}, "image i1: size is -1, not a byte count or null"),
    ({"os_hash_value": 12}, "image i1: os_hash_value is 12, not a string or null"),
])
def test_a_malformed_record_is_named(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        image_data({**RECORD, **change}, "i1")
