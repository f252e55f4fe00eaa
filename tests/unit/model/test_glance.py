"""Images from a Glance GET /v2/images answer: properties are the keys beside
Glance's own attributes; only active images; a malformed listing is one line."""

from __future__ import annotations

import pytest

from moorage.model.glance import images_from_listing


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
