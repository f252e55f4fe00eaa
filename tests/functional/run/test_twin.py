"""The twin of a real cloud: ``moorage --os-cloud test cloud capture`` reads a cloud
through Keystone's catalog (a real Keystone; placement and the compute API with its image
service as processes behind keystonemiddleware, ``tests.keystone_cloud``), writes a cloud
file that loads, groups the hosts by what they report, and sends not one write request
to the cloud; ``moorage run`` plays the file with the prefilters off and on.

The cloud's hosts are resource providers an admin wrote into placement as their compute
services would have (inventories and traits): three KVM hosts that take qcow2 and raw
and offer the virtio and e1000 NICs, two Ceph-backed hosts (raw only, virtio only) and
an Ironic node.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from moorage.placement.launcher import PlacementProcess
from moorage.run.description import load_cloud
from tests.cli_runner import run_moorage
from tests.image_standin import empty_disk
from tests.keystone_cloud import (
    KeystoneServices,
    admin_provider,
    clouds_yaml_auth,
    use_clouds_yaml,
)
from tests.keystone_fixtures import REGION, Keystone, User

SERVICE_TOKEN = "twin-test-service-token"
KVM = ["HW_ARCH_X86_64", "COMPUTE_IMAGE_TYPE_QCOW2", "COMPUTE_IMAGE_TYPE_RAW",
       "COMPUTE_NET_VIF_MODEL_VIRTIO", "COMPUTE_NET_VIF_MODEL_E1000"]
CEPH = ["HW_ARCH_X86_64", "COMPUTE_IMAGE_TYPE_RAW", "COMPUTE_NET_VIF_MODEL_VIRTIO"]
COMPUTE = {"VCPU": 16, "MEMORY_MB": 65536, "DISK_GB": 500}


@dataclass
class Cloud:
    keystone: Keystone
    services: KeystoneServices
    admin: User
    clouds_yaml: Path

    def headers(self) -> dict[str, str]:
        return {"X-Auth-Token": self.keystone.token(self.admin)}


def _provider(cloud: Cloud, name: str, inventories: dict[str, int],
              traits: list[str]) -> None:
    admin_provider(cloud.services.placement.url, cloud.keystone.token(cloud.admin), name,
                   inventories, traits)


def _image(cloud: Cloud, name: str, disk_format: str, **properties: str) -> str:
    url = f"{cloud.services.api.url}/image/v2/images"
    made = requests.post(url, headers=cloud.headers(), timeout=60, json={
        "name": name, "disk_format": disk_format, "container_format": "bare",
        **properties})
    assert made.status_code == 201, made.text
    image = str(made.json()["id"])
    uploaded = requests.put(f"{url}/{image}/file", timeout=60,
                            data=empty_disk(disk_format, cloud.clouds_yaml.parent), headers={
        **cloud.headers(), "Content-Type": "application/octet-stream"})
    assert uploaded.status_code == 204, uploaded.text
    return image


def _server(cloud: Cloud, name: str, image: str, flavor: str) -> None:
    made = requests.post(f"{cloud.services.api.url}/v2.1/servers", headers=cloud.headers(),
                         timeout=60, json={"server": {"name": name, "imageRef": image,
                                                      "flavorRef": flavor}})
    assert made.status_code == 202, made.text


@pytest.fixture(scope="module")
def cloud(keystone: Keystone, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    workdir = tmp_path_factory.mktemp("twin")
    services = KeystoneServices.launch(keystone, workdir, service_token=SERVICE_TOKEN)
    try:
        admin = keystone.create_user("operator", keystone.project("admin"), "admin")
        path = workdir / "clouds.yaml"
        path.write_text(yaml.safe_dump({"clouds": {"test": {
            "region_name": REGION, "auth": clouds_yaml_auth(keystone, admin)}}}))
        made = Cloud(keystone, services, admin, path)
        for n in range(1, 4):
            _provider(made, f"kvm-{n:02}", COMPUTE, KVM)
        for n in range(1, 3):
            _provider(made, f"ceph-{n:02}", COMPUTE, CEPH)
        _provider(made, "node-7", {"CUSTOM_BAREMETAL_GOLD": 1}, ["CUSTOM_RAID10"])
        api = f"{services.api.url}/v2.1"
        small = requests.post(f"{api}/flavors", headers=made.headers(), timeout=60, json={
            "flavor": {"name": "m1.small", "vcpus": 1, "ram": 512, "disk": 1}}
            ).json()["flavor"]["id"]
        ubuntu = _image(made, "ubuntu 24.04", "qcow2")
        legacy = _image(made, "legacy-nic", "raw", hw_vif_model="e1000")
        _image(made, "plain raw", "raw")
        for n in range(3):
            _server(made, f"web-{n}", ubuntu, small)
        _server(made, "old", legacy, small)
        yield made
    finally:
        services.stop()


@pytest.fixture
def environment(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> Cloud:
    use_clouds_yaml(monkeypatch, cloud.clouds_yaml)
    return cloud


# A request line of the services' logs: "... GET /path ..." (their request loggers).
_WRITE = re.compile(r"\b(POST|PUT|PATCH|DELETE) /")


def _log_sizes(cloud: Cloud) -> dict[Path, int]:
    placement = cloud.services.placement
    assert isinstance(placement, PlacementProcess)  # Moorage's: its log has the requests
    logs = [placement.log_path, cloud.services.api.log_path]
    return {path: path.stat().st_size for path in logs}


def _lines_since(sizes: dict[Path, int]) -> list[str]:
    lines: list[str] = []
    for path, size in sizes.items():
        with path.open("rb") as handle:
            handle.seek(size)
            lines += handle.read().decode(errors="replace").splitlines()
    return lines


def test_capture_writes_a_twin_that_loads_and_sends_no_write(
        environment: Cloud, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "twin.yaml"
    before = _log_sizes(environment)
    done = run_moorage(capsys, ["--os-cloud", "test", "cloud", "capture", "-o", str(output),
                                "--boots", "12"])
    assert done.code == 0, done.err
    during = _lines_since(before)
    # The services logged the capture's reads, and nothing else.
    assert any("\"GET /resource_providers" in line for line in during), during
    assert any("\"GET /v2.1/servers/detail" in line for line in during), during
    assert [line for line in during if _WRITE.search(line)] == []

    twin = load_cloud(output)  # a file `moorage run` takes
    groups = {g.description.split(":")[1].strip(): g for g in twin.host_groups}
    kvm = groups["kvm-01, kvm-02, kvm-03"]
    assert (kvm.count, kvm.driver, kvm.architecture) == (3, "fake", "x86_64")
    assert sorted(kvm.image_types) == ["qcow2", "raw"]
    ceph = groups["ceph-01, ceph-02"]
    assert list(ceph.image_types) == ["raw"]
    assert "COMPUTE_NET_VIF_MODEL_E1000" in ceph.unsupported_traits
    assert "COMPUTE_NET_VIF_MODEL_E1000" not in kvm.unsupported_traits
    node = groups["node-7"]
    assert (node.driver, node.resource_class, list(node.traits)) == (
        "ironic", "baremetal_gold", ["CUSTOM_RAID10"])
    assert {i.name for i in twin.images} >= {"ubuntu-24.04", "legacy-nic", "plain-raw"}
    weights = {(w.image, w.flavor): w.count for w in twin.workload.items}
    assert sum(weights.values()) == 12
    assert weights[("ubuntu-24.04", "m1.small")] == 9  # 3 of 4 servers today
    assert weights[("legacy-nic", "m1.small")] == 3
    assert "wrote" in done.err and "group g1-x86_64: 3 host(s)" in done.err


def test_the_twin_plays_with_the_prefilters_off_and_on(
        environment: Cloud, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "twin.yaml"
    assert run_moorage(capsys, ["--os-cloud", "test", "cloud", "capture", "-o", str(output),
                                "--boots", "8"]).code == 0
    report = tmp_path / "report.json"
    played = run_moorage(capsys, ["run", str(output), "--only", "prefilters off",
                                  "--only", "both", "--json", str(report)])
    assert played.code == 0, played.err
    import json

    results: dict[str, Any] = json.loads(report.read_text())
    by_name = {c["configuration"]: c for c in results["configurations"]}
    assert set(by_name) == {"prefilters off", "both"}, played.out
    off, both = by_name["prefilters off"], by_name["both"]
    # With both prefilters the qcow2 and e1000 boots go only to the KVM group; without,
    # the Ceph hosts (raw only, virtio only) get some and refuse them at spawn.
    assert (both["active"], both["reschedules"]) == (8, 0), played.out
    assert off["reschedules"] >= 1, played.out
    with capsys.disabled():  # the twin's report, for whoever runs the test with -s
        print(f"\n{output.read_text()}\n{played.out}")


def test_a_cloud_that_cannot_be_captured_is_one_line(
        environment: Cloud, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_moorage(capsys, ["cloud", "capture", "-o", str(tmp_path / "t.yaml")]
                       ).err.strip() == ("name the cloud to capture: --os-cloud NAME "
                                         "(clouds.yaml), or the OS_* variables")
    bad = run_moorage(capsys, ["--os-cloud", "test", "cloud", "capture", "-o",
                               str(tmp_path / "t.yaml"), "--boots", "0"])
    assert (bad.code, bad.err.strip()) == (1, "--boots 0: allowed: 1 or more")


def test_run_from_cloud_captures_then_plays(
        environment: Cloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    played = run_moorage(capsys, ["run", "--from-cloud", "test", "--boots", "4",
                                  "--only", "both"])
    assert played.code == 0, played.err
    assert f"wrote {Path('test-twin.yaml')}" in played.err
    assert load_cloud(tmp_path / "test-twin.yaml").workload.total == 4
    assert "both" in played.out
    refused = run_moorage(capsys, ["run", "--from-cloud", "test", "--example", "small"])
    assert (refused.code, refused.err.strip()) == (1, (
        "moorage run: give one of a cloud file, --example and --from-cloud, not --example "
        "and --from-cloud"))
