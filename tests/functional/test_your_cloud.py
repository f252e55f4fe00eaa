"""Preflight and the twin pointed at a cloud of real OpenStack services, through
``clouds.yaml``, as an operator points them at theirs: a real Keystone whose tokens live
TOKEN_LIFE seconds (``tests.keystone_fixtures``), a real Glance (``tests.glance_fixtures``,
file store, SQLite) behind keystonemiddleware over https signed by a CA of the test's
own (``tests.tls``; ``cacert`` in clouds.yaml), upstream's OpenStack Placement 16.0.0
(the compat venv's) validating Keystone's tokens, and Moorage's compute API standing in
for nova (``tests.keystone_cloud``), reading its images from that Glance.

The hosts are providers an admin wrote into placement as compute services would; the
images are Glance's, one with a property value nova refuses (Glance stores it). A
listing read across more than a token's life goes on with a renewed token.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import yaml

from moorage.cli.cloud import cloud_credentials, load_cloud
from moorage.image.client import GlanceClient
from moorage.run.description import load_cloud as load_cloud_file
from tests.cli_runner import run_moorage
from tests.glance_fixtures import Glance, GlanceMissing
from tests.image_standin import empty_disk
from tests.keystone_cloud import (
    KeystoneServices,
    admin_provider,
    clouds_yaml_auth,
    use_clouds_yaml,
)
from tests.keystone_fixtures import REGION, Keystone, KeystoneMissing, User
from tests.tls import issue

TOKEN_LIFE = 12
SERVICE_TOKEN = "your-cloud-test-service-token"
KVM = ["HW_ARCH_X86_64", "COMPUTE_IMAGE_TYPE_QCOW2", "COMPUTE_IMAGE_TYPE_RAW",
       "COMPUTE_NET_VIF_MODEL_VIRTIO", "COMPUTE_NET_VIF_MODEL_E1000"]
CEPH = ["HW_ARCH_X86_64", "COMPUTE_IMAGE_TYPE_RAW", "COMPUTE_NET_VIF_MODEL_VIRTIO"]


@dataclass
class Cloud:
    keystone: Keystone
    services: KeystoneServices
    glance: Glance
    admin: User
    clouds_yaml: Path
    images: dict[str, str]  # name -> id

    def headers(self) -> dict[str, str]:
        return {"X-Auth-Token": self.keystone.token(self.admin)}


def _provider(cloud: Cloud, name: str, traits: list[str]) -> None:
    admin_provider(cloud.services.placement.url, cloud.keystone.token(cloud.admin), name,
                   {"VCPU": 16, "MEMORY_MB": 65536, "DISK_GB": 500}, traits)


def _glance_image(cloud: Cloud, name: str, disk_format: str, **properties: str) -> str:
    """An active image in the real Glance (an empty disk of its format: Glance looks)."""
    ca = str(cloud.glance.tls.ca_file) if cloud.glance.tls else True
    made = requests.post(f"{cloud.glance.url}/v2/images", headers=cloud.headers(),
                         verify=ca, timeout=60, json={
                             "name": name, "disk_format": disk_format,
                             "container_format": "bare", "visibility": "public",
                             **properties})
    assert made.status_code == 201, made.text
    image = str(made.json()["id"])
    data = empty_disk(disk_format, cloud.clouds_yaml.parent)
    uploaded = requests.put(f"{cloud.glance.url}/v2/images/{image}/file", data=data,
                            verify=ca, timeout=60, headers={
                                **cloud.headers(), "Content-Type": "application/octet-stream"})
    assert uploaded.status_code == 204, uploaded.text
    return image


def _boot(cloud: Cloud, image: str) -> requests.Response:
    return requests.post(f"{cloud.services.api.url}/v2.1/servers", headers=cloud.headers(),
                         timeout=60, json={"server": {"name": "vm", "imageRef": image,
                                                      "flavorRef": "m1.small"}})


@pytest.fixture(scope="module")
def cloud(keystone_template: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    workdir = tmp_path_factory.mktemp("your-cloud")
    keystone = Keystone(keystone_template, workdir / "keystone", token_expiration=TOKEN_LIFE)
    glance: Glance | None = None
    services: KeystoneServices | None = None
    try:
        try:
            keystone.start()
            tls = issue(workdir / "tls")
            # The compute API boots Glance's images, as nova: read with the user's token
            # from the Glance of the catalog (found with its own [glance] credentials).
            nova = keystone.service_user("nova-glance")
            services = KeystoneServices.launch(
                keystone, workdir, service_token=SERVICE_TOKEN, image_service=False,
                upstream_placement=True,
                api_config={"api": {"image_service": "glance"}, "glance": {
                    **keystone.keystoneauth_section(nova), "cafile": str(tls.ca_file)}})
            glance = Glance(workdir / "glance", keystone, keystone.service_user("glance"),
                            tls).start()
        except (KeystoneMissing, GlanceMissing) as exc:
            pytest.fail(str(exc))
        glance.register()
        admin = keystone.create_user("operator", keystone.project("admin"), "admin")
        path = workdir / "clouds.yaml"
        path.write_text(yaml.safe_dump({"clouds": {"real": {
            "region_name": REGION, "cacert": str(tls.ca_file),
            "auth": clouds_yaml_auth(keystone, admin)}}}))
        made = Cloud(keystone, services, glance, admin, path, {})
        for n in range(1, 4):
            _provider(made, f"kvm-{n:02}", KVM)
        for n in range(1, 3):
            _provider(made, f"ceph-{n:02}", CEPH)
        requests.post(f"{services.api.url}/v2.1/flavors", headers=made.headers(), timeout=60,
                      json={"flavor": {"name": "m1.small", "id": "m1.small", "vcpus": 1,
                                       "ram": 512, "disk": 1}}).raise_for_status()
        made.images.update({
            "ubuntu": _glance_image(made, "ubuntu", "qcow2"),
            "legacy": _glance_image(made, "legacy", "raw", hw_vif_model="e1000"),
            "typo": _glance_image(made, "typo", "raw", hw_vif_model="virtio9"),
            "windows": _glance_image(made, "windows", "vmdk"),
        })
        for image in ("ubuntu", "ubuntu", "ubuntu", "legacy"):
            booted = _boot(made, made.images[image])
            assert booted.status_code == 202, booted.text
        yield made
    finally:
        if glance is not None:
            glance.stop()
        if services is not None:
            services.stop()
        keystone.stop()


@pytest.fixture
def environment(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> Cloud:
    use_clouds_yaml(monkeypatch, cloud.clouds_yaml)
    return cloud


def test_preflight_reads_the_real_glance_over_https(
        environment: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    done = run_moorage(capsys, ["--os-cloud", "real", "scheduler", "preflight",
                                "--image", "ubuntu", "--image", "legacy", "--image",
                                "windows", "-f", "json"])
    assert done.code == 3, done.err  # with both on, the vmdk image has no host
    rows = {row["name"]: row for row in done.json()}
    assert (rows["ubuntu"]["hosts_today"], rows["ubuntu"]["with_all"]) == (5, 3)
    assert (rows["legacy"]["hosts_today"], rows["legacy"]["with_all"]) == (5, 3)
    assert rows["windows"]["with_all"] == 0
    # The image Glance took and nova would refuse is named, with why, and not counted.
    typo = environment.images["typo"]
    assert f"skipped, nova would refuse it: the image service at {environment.glance.url}: " \
        f"image {typo}: hw_vif_model: 'virtio9' is not valid" in done.err
    assert typo not in done.out


def test_a_listing_read_across_a_tokens_life_goes_on_with_a_renewed_one(
        environment: Cloud) -> None:
    region = load_cloud(_cloud_options())
    glance = GlanceClient(cloud_credentials(region, "image"), page_size=1)
    assert glance.url == environment.glance.url
    read, tokens = [], set()
    for record in glance.images():
        read.append(str(record["id"]))
        tokens.add(glance._endpoint.credentials.headers()["x-auth-token"])
        if len(read) == 1:
            time.sleep(TOKEN_LIFE + 1)  # the first token expires between two pages
    assert sorted(read) == sorted(environment.images.values())
    assert glance.pages_read >= 4 and len(tokens) >= 2


def _cloud_options() -> object:
    import argparse

    return argparse.Namespace(os_cloud="real")


def test_the_compute_api_boots_glances_images_with_the_users_token(
        environment: Cloud) -> None:
    """What the fixture's boots showed (each 202 with a Glance image), and what Glance
    refuses or nova would."""
    unknown = _boot(environment, "7d4c8b8e-0000-4000-8000-000000000000")
    assert unknown.status_code == 400, unknown.text
    assert "Image 7d4c8b8e-0000-4000-8000-000000000000 could not be found." in unknown.text
    typo = _boot(environment, environment.images["typo"])
    assert typo.status_code == 400 and "virtio9" in typo.text, typo.text
    listed = requests.get(f"{environment.services.api.url}/v2.1/servers/detail",
                          headers=environment.headers(), timeout=60).json()["servers"]
    assert sorted(s["image"]["id"] for s in listed) == sorted(
        [environment.images["ubuntu"]] * 3 + [environment.images["legacy"]])


def test_the_twin_of_the_real_cloud(environment: Cloud, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "real-twin.yaml"
    done = run_moorage(capsys, ["--os-cloud", "real", "cloud", "capture", "-o", str(output),
                                "--boots", "8"])
    assert done.code == 0, done.err
    assert f"image skipped: typo ({environment.images['typo']}): hw_vif_model" in done.err
    twin = load_cloud_file(output)
    assert sorted(i.name for i in twin.images) == ["legacy", "ubuntu", "windows"]
    assert sorted(g.count for g in twin.host_groups) == [2, 3]
    # Today's mix: three servers of ubuntu for one of legacy, scaled to 8.
    weights = {(w.image, w.flavor): w.count for w in twin.workload.items}
    assert weights == {("ubuntu", "m1.small"): 6, ("legacy", "m1.small"): 2}
    report = tmp_path / "report.json"
    played = run_moorage(capsys, ["run", str(output), "--only", "prefilters off", "--only",
                                  "both", "--json", str(report)])
    assert played.code == 0, played.err
    import json

    by_name = {c["configuration"]: c for c in json.loads(report.read_text())["configurations"]}
    off, both = by_name["prefilters off"], by_name["both"]
    # The prefilters spare every refused spawn: qcow2 and e1000 go to the KVM group.
    assert (both["active"], both["reschedules"]) == (8, 0)
    assert off["reschedules"] > 0
    with capsys.disabled():  # what the twin reported, for whoever runs the test with -s
        print(f"\n{played.out}")


def test_the_image_commands_go_to_the_clouds_glance(
        environment: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    """With a cloud, ``moorage image`` talks to the catalog's image service (this
    cloud's Glance over https), not to the compute API's own."""
    listed = run_moorage(capsys, ["--os-cloud", "real", "image", "list", "-f", "json"])
    assert listed.code == 0, listed.err
    assert {image["name"] for image in listed.json()} == {
        "ubuntu", "legacy", "typo", "windows"}
    shown = run_moorage(capsys, ["--os-cloud", "real", "image", "show", "legacy", "-f",
                                 "json"])
    assert shown.code == 0, shown.err
    assert shown.json()["id"] == environment.images["legacy"]
