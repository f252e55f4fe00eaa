"""``moorage scheduler preflight`` against upstream OpenStack Placement (16.0.0, from
the compat venv), read only, with the images of a Glance ``GET /v2/images`` answer.

The cloud is built over upstream's HTTP API: 2 current KVM hosts (one disabled), 20
hosts whose agents report image types but no NIC model yet, a shared storage pool
(a root, not a host) and a NUMA child. No provider reports COMPUTE_IMAGE_TYPE_VMDK, so
the vmdk image is stranded once the image-type prefilter is on. With more hosts than
traits asked about, the traits are read one query per trait and per family
(``required=in:`` at 1.39): a handful of requests, not one per host.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import run_moorage
from tests.compat import upstream
from tests.compat.fixtures import PlacementWriter

QCOW2, RAW = "COMPUTE_IMAGE_TYPE_QCOW2", "COMPUTE_IMAGE_TYPE_RAW"
VIRTIO, E1000 = "COMPUTE_NET_VIF_MODEL_VIRTIO", "COMPUTE_NET_VIF_MODEL_E1000"
HOST = {"VCPU": 16, "MEMORY_MB": 32768, "DISK_GB": 100}

GLANCE_LISTING = {
    "images": [
        {"id": "3f1a0c5e-0000-4000-8000-000000000001", "name": "cirros", "status": "active",
         "disk_format": "qcow2", "container_format": "bare", "visibility": "public",
         "min_disk": 0, "min_ram": 0, "tags": [], "protected": False, "size": 21430272,
         "self": "/v2/images/3f1a0c5e-0000-4000-8000-000000000001",
         "schema": "/v2/schemas/image", "os_hidden": False},
        {"id": "3f1a0c5e-0000-4000-8000-000000000002", "name": "win2019", "status": "active",
         "disk_format": "vmdk", "container_format": "bare", "visibility": "public",
         "hw_vif_model": "e1000", "vmware_ostype": "windows9Server64Guest",
         "min_disk": 40, "min_ram": 4096, "tags": ["windows"]},
        {"id": "3f1a0c5e-0000-4000-8000-000000000003", "name": "fedora", "status": "active",
         "disk_format": "raw", "container_format": "bare", "hw_vif_model": "virtio",
         "hw_disk_bus": "virtio"},
        # still uploading: no boot can use it, so it is not counted
        {"id": "3f1a0c5e-0000-4000-8000-000000000004", "name": "half", "status": "queued",
         "disk_format": None, "container_format": None},
    ],
    "first": "/v2/images", "schema": "/v2/schemas/images",
}


@pytest.fixture(scope="module")
def placement(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Upstream placement with the cloud above; its URL."""
    server = upstream.started(tmp_path_factory.mktemp("upstream"))
    writer = PlacementWriter(server.url)

    def host(name: str, *traits: str) -> str:
        uuid = writer.provider(name)
        writer.add_inventories(uuid, HOST)
        writer.set_traits(uuid, *traits)
        return uuid

    kvm1 = host("kvm1", QCOW2, RAW, VIRTIO, E1000, "COMPUTE_STORAGE_BUS_VIRTIO")
    writer.set_traits(writer.provider("kvm1-numa0", parent=kvm1), "HW_NUMA_ROOT")
    host("kvm2", QCOW2, RAW, VIRTIO, "COMPUTE_STATUS_DISABLED")
    for index in range(20):
        host(f"old{index:02}", QCOW2, RAW)
    pool = writer.provider("ceph-pool")
    writer.add_inventories(pool, {"DISK_GB": 10000})
    writer.set_traits(pool, "MISC_SHARES_VIA_AGGREGATE")
    yield server.url
    server.stop()


def preflight(capsys: pytest.CaptureFixture[str], url: str, tmp_path: Path,
              *argv: str) -> tuple[int, Any, list[str]]:
    listing = tmp_path / "images.json"
    listing.write_text(json.dumps(GLANCE_LISTING))
    found = run_moorage(capsys, ["scheduler", "preflight", "--os-placement-url", url,
                     "--image-file", str(listing), "-f", "json", *argv])
    return found.code, json.loads(found.out or "null"), found.err.splitlines()


def test_preflight_against_upstream_placement(capsys: pytest.CaptureFixture[str],
                                              placement: str, tmp_path: Path) -> None:
    code, rows, err = preflight(capsys, placement, tmp_path)
    assert code == 3, err
    counts = {row["name"]: (row["hosts_today"], row["with_image_metadata_prefilter"],
                            row["with_query_placement_for_image_type_support"],
                            row["with_all"], row["missing"]) for row in rows}
    assert counts == {
        "cirros": (21, 21, 21, 21, []),
        "win2019": (21, 1, 0, 0, ["COMPUTE_IMAGE_TYPE_VMDK"]),
        "fedora": (21, 1, 21, 1, []),
    }
    fedora = next(row for row in rows if row["name"] == "fedora")
    assert fedora["not_reporting"]["COMPUTE_NET_VIF_MODEL"] == {
        "count": 20, "hosts": ["old00", "old01", "old02", "old03", "old04"]}
    assert "  win2019 (3f1a0c5e-0000-4000-8000-000000000002): no enabled host can boot " \
        "this image: no host reports COMPUTE_IMAGE_TYPE_VMDK (disk_format=vmdk)" in err
    assert ("hosts not reporting COMPUTE_NET_VIF_MODEL_* yet (20 of 21 enabled): old00, "
            "old01, old02, old03, old04 and 15 more") in err
    assert err[0] == f"{tmp_path / 'images.json'}: 1 image(s) not active, not counted"
    assert err[1].startswith("22 compute hosts (21 enabled), 3 images;"), err[1]
    # the listing, the traits in use, the versions; then 7 traits (VMDK is in use
    # nowhere: not asked) and 3 families (required=in:...): not one request per host
    assert err[1].endswith("(13 placement requests)"), err[1]
    # no compute API that keeps the hosts' own "no": said, and the counts are placement's
    assert err[2] == ("the hosts' own unsupported reports were not read (no compute API "
                      "named: --os-compute-url): a host that reports no trait of a family "
                      "is counted as not reporting it yet, and today's late checks are not "
                      "predicted")
    assert all(row["cannot"] == {} for row in rows)


def test_only_the_metadata_prefilter_strands_nothing(
        capsys: pytest.CaptureFixture[str], placement: str, tmp_path: Path) -> None:
    code, rows, err = preflight(capsys, placement, tmp_path,
                                "--enable", "image_metadata_prefilter")
    assert code == 0, err
    assert {row["name"]: row["missing"] for row in rows} == {
        "cirros": [], "win2019": [], "fedora": []}
