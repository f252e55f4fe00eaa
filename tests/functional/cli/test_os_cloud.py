"""The ``moorage`` command as every OpenStack CLI: ``--os-cloud`` names a cloud of a
``clouds.yaml`` (or the ``OS_*`` variables describe one), and the compute API and
placement are found in Keystone's catalog and reached with Keystone's tokens. Against
a real Keystone (``tests.keystone_fixtures``), placement and the compute API as
processes behind keystonemiddleware (``tests.keystone_cloud``; the compute endpoint in
the catalog ends in ``/v2.1``). Each way such a cloud can fail is one line and exit 1.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from moorage.placement.launcher import free_port
from tests.cli_runner import run_moorage
from tests.keystone_cloud import KeystoneServices, clouds_yaml_auth, use_clouds_yaml
from tests.keystone_fixtures import REGION, Keystone, User

SERVICE_TOKEN = "os-cloud-test-service-token"


@dataclass
class Cloud:
    keystone: Keystone
    services: KeystoneServices
    admin: User
    clouds_yaml: Path


@pytest.fixture(scope="module")
def cloud(keystone: Keystone, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    workdir = tmp_path_factory.mktemp("os-cloud")
    services = KeystoneServices.launch(keystone, workdir, service_token=SERVICE_TOKEN)
    try:
        admin = keystone.create_user("operator", keystone.project("admin"), "admin")
        clouds = {"clouds": {
            "prod": {"auth": clouds_yaml_auth(keystone, admin), "region_name": REGION},
            "bad-password": {"auth": clouds_yaml_auth(keystone, admin, password="wrong"),
                             "region_name": REGION},
            "nowhere": {"auth": clouds_yaml_auth(keystone, admin,
                                      auth_url=f"http://127.0.0.1:{free_port()}/v3"),
                        "region_name": REGION},
            "other-region": {"auth": clouds_yaml_auth(keystone, admin), "region_name": "RegionTwo"},
        }}
        path = workdir / "clouds.yaml"
        path.write_text(yaml.safe_dump(clouds))
        yield Cloud(keystone, services, admin, path)
    finally:
        services.stop()


@pytest.fixture
def environment(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> Cloud:
    use_clouds_yaml(monkeypatch, cloud.clouds_yaml)
    return cloud


def test_os_cloud_finds_both_services_in_the_catalog(
        environment: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    made = run_moorage(capsys, ["--os-cloud", "prod", "flavor", "create", "small",
                                "--vcpus", "1", "--ram", "256", "--disk", "1", "-f", "json"])
    assert made.code == 0, made.err
    listed = run_moorage(capsys, ["--os-cloud", "prod", "flavor", "list", "-f", "json"])
    assert listed.code == 0, listed.err
    assert "small" in [flavor["name"] for flavor in listed.json()]
    providers = run_moorage(capsys, ["--os-cloud", "prod", "placement", "provider", "list",
                                     "-f", "json"])
    assert providers.code == 0, providers.err
    assert providers.json() == []


def test_the_os_variables_describe_a_cloud_as_well(
        environment: Cloud, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in environment.keystone.openstack_env(environment.admin).items():
        monkeypatch.setenv(name, value)
    listed = run_moorage(capsys, ["flavor", "list", "-f", "json"])
    assert listed.code == 0, listed.err
    # A flag wins over its variable (openstacksdk holds it to the variables' region).
    elsewhere = run_moorage(capsys, ["--os-region-name", "RegionTwo", "flavor", "list"])
    assert elsewhere.code == 1
    assert elsewhere.err.strip().startswith(
        "the OS_* variables: Region RegionTwo is not a valid region name"), elsewhere.err


@pytest.mark.parametrize(("name", "expected"), [
    ("nope", "cloud 'nope' is not in {clouds_yaml} (clouds there: bad-password, "
             "nowhere, other-region, prod)"),
    ("bad-password", "cloud 'bad-password' could not get a token from {v3}: the "
                     "credentials were refused (401)"),
    ("nowhere", "cloud 'nowhere' could not get a token from http://127.0.0.1:"),
    ("other-region", "cloud 'other-region': Keystone's catalog has no endpoint of "
                     "service type 'compute' with interface public in region 'RegionTwo'"),
])
def test_a_cloud_that_cannot_be_used_is_one_line_and_exit_1(
        environment: Cloud, capsys: pytest.CaptureFixture[str], name: str,
        expected: str) -> None:
    done = run_moorage(capsys, ["--os-cloud", name, "flavor", "list"])
    assert done.code == 1
    line = done.err.strip()
    assert "\n" not in line and "Traceback" not in line, done.err
    assert line.startswith(expected.format(clouds_yaml=environment.clouds_yaml,
                                           v3=environment.keystone.v3)), line


def _image(cloud: Cloud, name: str, **properties: str) -> str:
    """An active image (with a few bytes of data) in the image service of the catalog."""
    import requests

    url = f"{cloud.services.api.url}/image/v2/images"
    headers = {"X-Auth-Token": cloud.keystone.token(cloud.admin)}
    made = requests.post(url, headers=headers, timeout=60, json={
        "name": name, "disk_format": "raw", "container_format": "bare", **properties})
    assert made.status_code == 201, made.text
    image = str(made.json()["id"])
    uploaded = requests.put(f"{url}/{image}/file", data=b"\0" * 512, timeout=60, headers={
        **headers, "Content-Type": "application/octet-stream"})
    assert uploaded.status_code == 204, uploaded.text
    return image


def test_preflight_reads_every_page_of_the_clouds_image_service(
        environment: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    from moorage.cli.cloud import cloud_credentials, load_cloud
    from moorage.image.client import GlanceClient

    made = [_image(environment, f"img-{n}") for n in range(4)]
    made.append(_image(environment, "old-nic", hw_vif_model="e1000"))
    options = argparse.Namespace(os_cloud="prod")
    glance = GlanceClient(cloud_credentials(load_cloud(options), "image"), page_size=2)
    read = [str(record["id"]) for record in glance.images()]
    assert set(made) <= set(read) and len(read) == len(set(read))
    assert glance.pages_read >= 3
    assert glance.url == f"{environment.services.api.url}/image"

    done = run_moorage(capsys, ["--os-cloud", "prod", "scheduler", "preflight",
                                "-f", "json"])
    assert done.code == 0, done.err
    rows = {row["name"]: row for row in done.json()}
    assert {f"img-{n}" for n in range(4)} | {"old-nic"} <= set(rows)
    # No host reports anything yet: the NIC the image asks for is missing everywhere.
    assert "COMPUTE_NET_VIF_MODEL_E1000" in rows["old-nic"]["missing"]


def test_preflight_reaches_placement_with_a_nova_conf_s_credentials(
        environment: Cloud, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without a cloud, the [placement] section of the nova.conf whose [scheduler] says
    which prefilters are on today is how placement is reached (a token of its own,
    the endpoint from the catalog)."""
    keystone = environment.keystone
    nova = keystone.keystoneauth_section(keystone.service_user("nova-conductor"))
    nova_conf = tmp_path / "nova.conf"
    nova_conf.write_text("[DEFAULT]\ntransport_url = rabbit://nova:x@rabbit:5672/\n"
                         "[scheduler]\nimage_metadata_prefilter = true\n[placement]\n"
                         + "".join(f"{key} = {value}\n" for key, value in nova.items()))
    _image(environment, "with-nova-conf")
    done = run_moorage(capsys, [
        "scheduler", "preflight", "--config-file", str(nova_conf), "--os-compute-url",
        environment.services.api.url, "--os-compute-token",
        keystone.token(environment.admin), "--image", "with-nova-conf", "-f", "json"])
    assert done.code == 0, done.err
    assert [row["name"] for row in done.json()] == ["with-nova-conf"]
    # The same file with a wrong password: placement is reached with it, and refuses.
    nova_conf.write_text(nova_conf.read_text().replace(
        f"password = {nova['password']}", "password = wrong"))
    refused = run_moorage(capsys, [
        "scheduler", "preflight", "--config-file", str(nova_conf), "--os-compute-url",
        environment.services.api.url, "--os-compute-token",
        keystone.token(environment.admin), "-f", "json"])
    assert refused.code == 1
    assert refused.err.strip().startswith(
        f"[placement] could not get a token from {keystone.v3}: the credentials were "
        "refused (401)"), refused.err


def test_an_expired_application_credential_is_one_line(
        environment: Cloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """An application credential (auth_type v3applicationcredential) works until it
    expires, and is then refused in one line."""
    import datetime
    import time

    import requests

    keystone, admin = environment.keystone, environment.admin
    expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=4)
    made = requests.post(
        f"{keystone.v3}/users/{admin.id}/application_credentials", timeout=60,
        headers={"X-Auth-Token": keystone.token(admin)},
        json={"application_credential": {
            "name": "soon", "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%S.%f")}})
    assert made.status_code == 201, made.text
    credential = made.json()["application_credential"]
    path = tmp_path / "clouds.yaml"
    path.write_text(yaml.safe_dump({"clouds": {"ci": {
        "auth_type": "v3applicationcredential", "region_name": REGION, "auth": {
            "auth_url": keystone.v3, "application_credential_id": credential["id"],
            "application_credential_secret": credential["secret"]}}}}))
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
    assert run_moorage(capsys, ["--os-cloud", "ci", "flavor", "list"]).code == 0
    time.sleep(max(0.0, (expires - datetime.datetime.now(datetime.UTC)).total_seconds()) + 1)
    done = run_moorage(capsys, ["--os-cloud", "ci", "flavor", "list"])
    assert done.code == 1
    assert done.err.strip().startswith(
        f"cloud 'ci' could not get a token from {keystone.v3}: the credentials were "
        "refused (401)"), done.err


def test_the_services_of_one_cloud_share_one_token(environment: Cloud) -> None:
    from moorage.cli.cloud import keystone_credentials

    found = keystone_credentials(argparse.Namespace(os_cloud="prod"),
                                 {"compute": None, "image": None, "placement": None})
    assert found["compute"].token is found["image"].token is found["placement"].token
    token = found["compute"].headers()["x-auth-token"]
    assert found["placement"].headers()["x-auth-token"] == token
    assert found["compute"].endpoint() == f"{environment.services.api.url}/v2.1"
    assert found["placement"].endpoint() == environment.services.placement.url
