"""``moorage scheduler preflight`` against a real Moorage cloud: placement, the compute
API and compute agents (a simulated vCenter, a current KVM-like fake host, and an
"old" fake host whose agent reports image types but no NIC model yet).

The compute API keeps what each host's driver reports unsupported, so the command
tells a host that cannot (vCenter reports every vIOMMU model False) from one that
does not report a family yet (old), and counts today's boots with the late checks
those reports predict: the vhd image boots nowhere today (every host refuses vhd),
so turning the prefilters on strands nothing of it. The rtl8139 image boots today
(nobody refuses it) and nowhere once the image-metadata prefilter is on (nobody
reports the NIC): that one gates the upgrade, exit 3. Hosts are named as ``moorage
host list`` names them (vcenter, not its provider's name). Bad input is one line and
exit 1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from moorage.placement.client import ProviderQuery
from tests.cli_runner import run_moorage
from tests.functional.cli.test_compute_standin import Run
from tests.functional.servers.conftest import Cloud, HostSpec, fake_host, make_cloud

__all__ = ["make_cloud"]
VIRTIO, E1000 = "COMPUTE_NET_VIF_MODEL_VIRTIO", "COMPUTE_NET_VIF_MODEL_E1000"
Moorage = Callable[..., Run]


@pytest.fixture
def cloud(make_cloud: Callable[..., Cloud]) -> Cloud:
    cloud = make_cloud([
        HostSpec("vcenter", "vmware"),
        fake_host("kvm", traits=[VIRTIO, E1000], image_types=["raw", "qcow2"]),
        fake_host("old", image_types=["raw", "qcow2"]),
    ])
    cloud.image("cirros", "qcow2")
    cloud.image("win", "vmdk", {"hw_vif_model": "e1000"})
    cloud.image("virtio-net", "raw", {"hw_vif_model": "virtio"})
    cloud.image("legacy", "vhd")
    cloud.image("rtl", "raw", {"hw_vif_model": "rtl8139"})
    cloud.image("iommu", "raw", {"hw_viommu_model": "intel"})
    return cloud


@pytest.fixture
def moorage(capsys: pytest.CaptureFixture[str], cloud: Cloud) -> Moorage:
    def run(*argv: str) -> Run:
        return run_moorage(capsys, ["scheduler", "preflight", *argv,
                         "--os-compute-url", cloud.api_url,
                         "--os-placement-url", cloud.placement.url])

    return run


def rows(run: Run) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in json.loads(run.out)}


def failed(run: Run) -> str:
    assert (run.code, run.out) == (1, ""), run
    assert run.err.count("\n") == 1 and "Traceback" not in run.err, run.err
    return run.err.rstrip("\n")


def test_every_prefilter_planned(moorage: Moorage) -> None:
    run = moorage("-f", "json")
    assert run.code == 3, run.err
    found = rows(run)
    counts = {name: (row["hosts_today"], row["with_image_metadata_prefilter"],
                     row["with_query_placement_for_image_type_support"], row["with_all"])
              for name, row in found.items()}
    assert counts == {
        # qcow2: kvm and old (vCenter refuses it today already: its own report)
        "cirros": (2, 2, 2, 2),
        # vmdk: vCenter only (kvm and old refuse vmdk); e1000: vCenter has it
        "win": (1, 1, 1, 1),
        # raw and virtio: kvm and old today (vCenter refuses both); virtio: kvm only
        "virtio-net": (2, 1, 2, 1),
        # vhd: every host refuses it today: nothing to strand
        "legacy": (0, 0, 0, 0),
        # rtl8139: nobody refuses it today, nobody reports it
        "rtl": (2, 0, 2, 0),
        # vIOMMU: vCenter cannot (raw too), kvm and old do not report the family
        "iommu": (2, 0, 2, 0),
    }
    assert found["legacy"]["missing"] == ["COMPUTE_IMAGE_TYPE_VHD"]
    assert found["legacy"]["cannot"] == {
        "COMPUTE_IMAGE_TYPE_VHD": {"count": 3, "hosts": ["kvm", "old", "vcenter"]}}
    assert found["cirros"]["missing"] == []
    assert found["win"]["not_reporting"] == {
        "COMPUTE_NET_VIF_MODEL": {"count": 1, "hosts": ["old"]}}
    assert found["win"]["cannot"] == {
        "COMPUTE_IMAGE_TYPE_VMDK": {"count": 2, "hosts": ["kvm", "old"]}}
    # vCenter reports every vIOMMU model False: it cannot, it is not "not yet"
    assert found["iommu"]["not_reporting"] == {
        "COMPUTE_VIOMMU_MODEL": {"count": 2, "hosts": ["kvm", "old"]}}
    assert found["iommu"]["cannot"] == {
        "COMPUTE_IMAGE_TYPE_RAW": {"count": 1, "hosts": ["vcenter"]},
        "COMPUTE_VIOMMU_MODEL_INTEL": {"count": 1, "hosts": ["vcenter"]}}
    lines = run.err.splitlines()
    assert lines[0].startswith("3 compute hosts (3 enabled), 6 images; prefilters on "
                               "today: none; planned: image_metadata_prefilter, "
                               "query_placement_for_image_type_support")
    stranded = [line for line in lines if line.startswith("  ")]
    assert sorted(line.split(" (")[0].strip() for line in stranded) == ["iommu", "rtl"]
    rtl = next(line for line in stranded if line.startswith("  rtl"))
    assert rtl.endswith(": no enabled host can boot this image: no host reports "
                                "COMPUTE_NET_VIF_MODEL_RTL8139 (hw_vif_model=rtl8139)")
    assert ("hosts not reporting COMPUTE_NET_VIF_MODEL_* yet (1 of 3 enabled): old"
            in lines)
    assert ("hosts that cannot give COMPUTE_VIOMMU_MODEL_INTEL (they report it "
            "unsupported; 1 of 3 enabled): vcenter") in lines
    assert lines[-1] == ("turning on image_metadata_prefilter, "
                         "query_placement_for_image_type_support would leave 2 image(s) "
                         "that boot today with no host")


def test_an_image_no_host_boots_today_strands_nothing(moorage: Moorage) -> None:
    """vhd: every host's driver reports it unsupported, so it fails today already (a
    MaxRetriesExceeded with the prefilters off): turning them on changes nothing."""
    run = moorage("--image", "legacy", "--image", "cirros", "-f", "json")
    assert run.code == 0, run.err
    assert run.err.splitlines()[-1] == (
        "turning on image_metadata_prefilter, query_placement_for_image_type_support "
        "leaves every image that boots today bootable")


def test_only_the_metadata_prefilter_planned(moorage: Moorage) -> None:
    run = moorage("--enable", "image_metadata_prefilter", "--image", "legacy",
                  "--image", "virtio-net", "-f", "json")
    assert run.code == 0, run.err
    assert set(rows(run)) == {"legacy", "virtio-net"}
    # vhd needs nothing of the metadata prefilter: nothing missing
    assert rows(run)["legacy"]["missing"] == []
    # virtio-net boots on kvm today and after
    assert run.err.splitlines()[-1] == ("turning on image_metadata_prefilter leaves every "
                                        "image that boots today bootable")


def test_a_disabled_host_boots_nothing(moorage: Moorage, cloud: Cloud) -> None:
    [kvm_service] = cloud.ok("GET", "/os-services?host=kvm")["services"]
    cloud.ok("PUT", f"/os-services/{kvm_service['id']}", {"status": "disabled"})
    kvm = cloud.placement.providers(ProviderQuery(name="kvm"))[0].uuid
    deadline = time.monotonic() + 30
    while "COMPUTE_STATUS_DISABLED" not in cloud.placement.traits(kvm):
        assert time.monotonic() < deadline, "kvm's agent never reported itself disabled"
        time.sleep(0.05)
    run = moorage("--image", "virtio-net", "-f", "json")
    assert run.code == 3, run.err
    row = rows(run)["virtio-net"]
    # old (raw, its NIC unknown) boots it today; vCenter refuses raw and virtio
    assert (row["hosts_today"], row["with_image_metadata_prefilter"]) == (1, 0)
    assert row["missing"] == []   # kvm still reports virtio, it is only disabled
    assert any("only disabled hosts report COMPUTE_NET_VIF_MODEL_VIRTIO" in line
               for line in run.err.splitlines()), run.err


def test_the_table(moorage: Moorage) -> None:
    run = moorage("--image", "legacy", "--image", "win", "-c", "name", "-c", "missing",
                  "-c", "not_reporting")
    table = [line.split("|")[1:-1] for line in run.out.splitlines() if line.startswith("|")]
    assert [[cell.strip() for cell in row] for row in table] == [
        ["name", "missing", "not_reporting"],
        ["legacy", "COMPUTE_IMAGE_TYPE_VHD (disk_format=vhd)", ""],
        ["win", "", "COMPUTE_NET_VIF_MODEL_*: old"],
    ]


@pytest.mark.parametrize(("argv", "message"), [
    (["--enable", "image_metadata"], "--enable: unknown prefilter 'image_metadata'; allowed: "
     "image_metadata_prefilter, query_placement_for_image_type_support"),
    (["--image", "nope"], "--image nope: no image with that id or name in the compute "
     "API's catalogue; there are: cirros, iommu, legacy, rtl, virtio-net, win"),
    (["--image-file", "/nonexistent/images.json"],
     "--image-file /nonexistent/images.json: cannot read it: No such file or directory"),
])
def test_bad_input_is_one_line(moorage: Moorage, argv: list[str], message: str) -> None:
    assert failed(moorage(*argv)) == message


def test_malformed_image_files(moorage: Moorage, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"images": [')
    assert failed(moorage("--image-file", str(broken))).startswith(
        f"--image-file {broken}: not JSON: ")
    wrong = tmp_path / "wrong.json"
    wrong.write_text('[{"id": "x"}]')
    assert failed(moorage("--image-file", str(wrong))) == (
        f"{wrong}: not a Glance image listing: expected the answer of GET /v2/images, "
        '{"images": [{"id", "name", "disk_format", ...}]}')
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"images": [{"id": "i1", "status": "active",
                                           "disk_format": "raw", "hw_vif_model": "e1001"}]}))
    assert failed(moorage("--image-file", str(bad))).startswith(
        f"{bad}: image i1: hw_vif_model: 'e1001' is not valid; allowed: virtio, ")
