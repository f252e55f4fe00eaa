"""Image admission over the real compute API and a real placement: creating or
changing an image answers how many enabled hosts can boot it (``moorage:bootable``);
with ``[api] refuse_unbootable_images`` one none can boot is a 409 naming the missing
capability, and nothing is stored. The hosts' traits are read once, not per image."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from moorage.placement.client import PlacementClient
from tests.api_fixtures import ComputeApi, start_compute_api, stop_compute_api

QCOW2, RAW, VMDK = ("COMPUTE_IMAGE_TYPE_QCOW2", "COMPUTE_IMAGE_TYPE_RAW",
                    "COMPUTE_IMAGE_TYPE_VMDK")
VIRTIO, E1000 = "COMPUTE_NET_VIF_MODEL_VIRTIO", "COMPUTE_NET_VIF_MODEL_E1000"


@pytest.fixture
def hosts(placement: Any) -> str:
    """kvm (qcow2, raw, virtio), esx (vmdk, e1000), old (qcow2 and raw only), and
    kvm-off (disabled, the only one with e1000 and qcow2)."""
    client = PlacementClient(placement.url, "admin")
    for name, traits in (("kvm", [QCOW2, RAW, VIRTIO]), ("esx", [VMDK, E1000]),
                         ("old", [QCOW2, RAW]),
                         ("kvm-off", [QCOW2, E1000, "COMPUTE_STATUS_DISABLED"])):
        created = client.create_provider(name, str(uuid.uuid4()))
        client.set_traits(created.uuid, created.generation, traits)
    return str(placement.url)


@pytest.fixture
def make_api(tmp_path: Path, hosts: str) -> Iterator[Any]:
    started: list[ComputeApi] = []

    def make(**options: object) -> ComputeApi:
        api = start_compute_api(tmp_path / f"api{len(started)}", hosts, {
            "api": {"refuse_unbootable_images": options.pop("refuse", False)},
            "scheduler": dict(options)})
        started.append(api)
        return api

    yield make
    for api in started:
        stop_compute_api(api)


def create(api: ComputeApi, name: str, disk_format: str, expect: int = 201,
           **properties: str) -> Any:
    return api.admin("POST", "/v2.1/images", expect=expect, json={
        "name": name, "disk_format": disk_format, "properties": properties}).json()


def names(api: ComputeApi) -> set[str]:
    return {i["name"] for i in api.admin("GET", "/v2.1/images", expect=200).json()["images"]}


def test_the_answer_counts_hosts(make_api: Any) -> None:
    api = make_api()
    assert create(api, "win", "vmdk", hw_vif_model="e1000")["moorage:bootable"] == {
        "hosts": 3,  # no prefilter on: every enabled host
        "with": {"image_metadata_prefilter": 1, "query_placement_for_image_type_support": 1},
        "missing": [],
    }
    assert create(api, "old-xen", "vhd", hw_video_model="qxl")["moorage:bootable"] == {
        "hosts": 3, "with": {"image_metadata_prefilter": 0,
                             "query_placement_for_image_type_support": 0},
        "missing": ["COMPUTE_IMAGE_TYPE_VHD", "COMPUTE_GRAPHICS_MODEL_QXL"],
    }
    # the options only count: both images are stored
    assert names(api) == {"win", "old-xen"}


def test_counts_follow_the_configured_prefilters(make_api: Any) -> None:
    api = make_api(query_placement_for_image_type_support=True)
    answer = create(api, "cirros", "qcow2", hw_vif_model="e1000")["moorage:bootable"]
    # qcow2: kvm, old (kvm-off is disabled); with e1000 too: nobody enabled
    assert answer == {"hosts": 2, "with": {
        "image_metadata_prefilter": 0, "query_placement_for_image_type_support": 2},
        "missing": []}


def test_refused_when_no_host_can_boot_it(make_api: Any) -> None:
    api = make_api(refuse=True, query_placement_for_image_type_support=True)
    refused = api.admin("POST", "/v2.1/images", expect=409, json={
        "name": "legacy", "disk_format": "vhd"}).json()
    assert refused == {"conflictingRequest": {"code": 409, "message": (
        "no enabled host can boot this image: no host reports COMPUTE_IMAGE_TYPE_VHD "
        "(disk_format=vhd) ([api] refuse_unbootable_images is on)")}}
    assert names(api) == set()
    # the metadata prefilter is off: hw_vif_model binds nothing yet
    assert create(api, "win", "vmdk", hw_vif_model="virtio")["moorage:bootable"]["hosts"] == 1


def test_a_refused_change_leaves_the_image_unchanged(make_api: Any) -> None:
    api = make_api(refuse=True, image_metadata_prefilter=True,
                   query_placement_for_image_type_support=True)
    image = create(api, "cirros", "qcow2", hw_vif_model="virtio")
    assert image["moorage:bootable"]["hosts"] == 1
    refused = api.admin("PATCH", f"/v2.1/images/{image['id']}", expect=409,
                        json={"properties": {"hw_vif_model": "e1000"}}).json()
    # kvm-off has both, but is disabled; kvm has qcow2, esx e1000
    assert refused["conflictingRequest"]["message"] == (
        "no enabled host can boot this image: no enabled host reports all of "
        "COMPUTE_IMAGE_TYPE_QCOW2 (disk_format=qcow2), COMPUTE_NET_VIF_MODEL_E1000 "
        "(hw_vif_model=e1000) ([api] refuse_unbootable_images is on)")
    shown = api.admin("GET", f"/v2.1/images/{image['id']}", expect=200).json()
    assert shown["properties"] == {"hw_vif_model": "virtio"}
    changed = api.admin("PATCH", f"/v2.1/images/{image['id']}", expect=200,
                        json={"disk_format": "raw"}).json()
    assert changed["moorage:bootable"]["hosts"] == 1


def test_nova_image_metadata_writes_are_admitted_too(make_api: Any) -> None:
    """``PUT /images/{id}/metadata/{key}`` (before 2.39) changes properties as a PATCH
    does: refused the same way, and the image is left as it was."""
    api = make_api(refuse=True, image_metadata_prefilter=True,
                   query_placement_for_image_type_support=True)
    image = create(api, "cirros", "qcow2", hw_vif_model="virtio")
    item = f"/v2.1/images/{image['id']}/metadata/hw_vif_model"
    refused = api.admin("PUT", item, headers={"OpenStack-API-Version": "compute 2.38"},
                        json={"meta": {"hw_vif_model": "e1000"}}, expect=409).json()
    assert "COMPUTE_NET_VIF_MODEL_E1000" in refused["conflictingRequest"]["message"]
    shown = api.admin("GET", f"/v2.1/images/{image['id']}", expect=200).json()
    assert shown["properties"] == {"hw_vif_model": "virtio"}


def test_a_few_requests_not_one_per_host(make_api: Any) -> None:
    api = make_api()
    reader = api.state.host_traits()
    create(api, "a", "qcow2")
    # the providers, the traits in use, the versions; then qcow2 and disabled (no
    # provider is a sharing one: not asked)
    assert reader.requests == 5
    create(api, "b", "qcow2")
    assert reader.requests == 5  # the same traits, read seconds ago
    create(api, "c", "raw", hw_vif_model="e1000")
    assert reader.requests == 5 + 2  # one per trait not asked about yet
