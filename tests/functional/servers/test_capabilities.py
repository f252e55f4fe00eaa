"""GET /v2.1/capabilities and ``moorage capabilities`` on a real cloud: fake-driver
agents that sync their traits and inventories to a real placement and heart-beat to
the compute API, one server booted so that usage is not zero.

The answer is checked against an oracle that reads placement the slow way (every
provider's traits, inventories and usages), and walked field by field for anything
that would identify a host.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from moorage import __version__ as MOORAGE_VERSION
from moorage.model.vocabulary import OS_TRAITS_VERSION
from tests.functional.cli.test_compute_api_cli import failed
from tests.functional.cli.test_compute_server_cli import Moorage, moorage, ok
from tests.functional.servers.conftest import Cloud, fake_host

# moorage: the CLI tests' fixture (in-process ``moorage ... --os-compute-url API``)
__all__ = ["moorage"]

USER = "demo:demo-project"
FLOOR = 2
E1000 = "COMPUTE_NET_VIF_MODEL_E1000"
VIRTIO = "COMPUTE_NET_VIF_MODEL_VIRTIO"
PCNET = "COMPUTE_NET_VIF_MODEL_PCNET"
QXL = "COMPUTE_GRAPHICS_MODEL_QXL"
AVX2 = "HW_CPU_X86_AVX2"
SECURE_BOOT = "COMPUTE_SECURITY_UEFI_SECURE_BOOT"
RACK = "CUSTOM_RACK_SEVEN"
# Names no trait, label or property value contains, so that a leak cannot hide.
HOSTS = ("zeta-one", "zeta-two", "zeta-three", "zeta-special", "zeta-disabled", "zeta-down")
AVAILABLE = ("zeta-one", "zeta-two", "zeta-three", "zeta-special")
RESOURCES = ("VCPU", "MEMORY_MB", "DISK_GB")


def build_cloud(make_cloud: Any) -> Cloud:
    cloud: Cloud = make_cloud([
        fake_host("zeta-one", traits=[E1000, VIRTIO, AVX2, SECURE_BOOT, QXL, RACK],
                  vcpus=16, memory_mb=32768),
        fake_host("zeta-two", traits=[E1000, VIRTIO, AVX2, SECURE_BOOT, RACK],
                  vcpus=8, memory_mb=16384),
        fake_host("zeta-three", traits=[E1000, AVX2, RACK], vcpus=4, memory_mb=8192),
        # The only host of its kind: pcnet and aarch64 must not be revealed.
        fake_host("zeta-special", traits=[PCNET], architecture="aarch64", vcpus=32),
        # qxl on a disabled and a down host besides zeta-one: offered by one host.
        fake_host("zeta-disabled", traits=[QXL, E1000]),
        fake_host("zeta-down", traits=[QXL, E1000]),
    ])
    cloud.state.conf.set_override("capability_cache_seconds", 0, group="api")
    services = {s["host"]: s["id"] for s in cloud.ok("GET", "/os-services")["services"]}
    cloud.ok("PUT", f"/os-services/{services['zeta-disabled']}", {"status": "disabled"})
    cloud.ok("PUT", f"/os-services/{services['zeta-down']}", {"forced_down": True})
    return cloud


@pytest.fixture
def cloud(make_cloud: Any) -> Cloud:
    return build_cloud(make_cloud)


def capabilities(cloud: Cloud, token: str = USER) -> dict[str, Any]:
    response = cloud.call("GET", "/capabilities", token=token)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return dict(response.json()["capabilities"])


def offered(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["trait"]: t for f in body["families"] for t in f["traits"]}


def oracle(cloud: Cloud, hosts: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Per standard trait of ``hosts``: the host count and free resources, read one
    provider at a time."""
    found: dict[str, dict[str, Any]] = {}
    providers = cloud.placement.request("GET", "/resource_providers")["resource_providers"]
    for provider in providers:
        if provider["name"] not in hosts:
            continue
        uuid = provider["uuid"]
        traits = cloud.placement.request("GET", f"/resource_providers/{uuid}/traits")["traits"]
        free = cloud.free(uuid)
        for trait in traits:
            if trait.startswith("CUSTOM_"):
                continue
            entry = found.setdefault(trait, {"hosts": 0, "free": dict.fromkeys(RESOURCES, 0)})
            entry["hosts"] += 1
            for rc in RESOURCES:
                entry["free"][rc] += free[rc]
    for entry in found.values():
        entry["free"] = {rc: at_least(n) for rc, n in entry["free"].items()}
    return found


def at_least(amount: int) -> int:
    """The largest of 1, 2, 5, 10, 20, 50, ... not above ``amount`` (0 for none): the
    catalogue tells free capacity as a lower bound on that scale."""
    steps = [m * 10 ** k for k in range(12) for m in (1, 2, 5)]
    return max((s for s in steps if s <= amount), default=0)


def walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every key and leaf of a JSON document, with its path."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield f"{path}/{key}", key
            yield from walk(inner, f"{path}/{key}")
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from walk(inner, f"{path}[{index}]")
    else:
        yield path, value


def identifying(cloud: Cloud) -> tuple[list[str], list[re.Pattern[str]]]:
    """What must never appear: host and node names, provider uuids (both spellings),
    anywhere in a text; the deployed versions as a token of their own (the fake
    driver's hypervisor version, 1000, is part of e1000)."""
    providers = cloud.placement.request("GET", "/resource_providers")["resource_providers"]
    hypervisors = cloud.ok("GET", "/os-hypervisors/detail")["hypervisors"]
    names = [*HOSTS, *(h["hypervisor_hostname"] for h in hypervisors),
             *(p["name"] for p in providers)]
    for provider in providers:
        names += [provider["uuid"], provider["uuid"].replace("-", "")]
    versions = {OS_TRAITS_VERSION, MOORAGE_VERSION,
                *(str(h["hypervisor_version"]) for h in hypervisors
                  if h["hypervisor_version"] is not None)}
    return (sorted({n.lower() for n in names}),
            [re.compile(rf"(?<![0-9a-z.]){re.escape(v)}(?![0-9a-z])", re.I) for v in versions])


def assert_reveals_nothing(cloud: Cloud, text: str, where: str = "") -> None:
    names, versions = identifying(cloud)
    for name in names:
        assert name not in text.lower(), f"{where} {text[:200]!r} contains {name!r}"
    for version in versions:
        assert not version.search(text), f"{where} {text[:200]!r} has {version.pattern}"


def assert_reveals_no_host(cloud: Cloud, body: dict[str, Any]) -> None:
    for path, leaf in walk(body):
        if isinstance(leaf, str):
            assert_reveals_nothing(cloud, leaf, path)
        elif isinstance(leaf, int) and not isinstance(leaf, bool):
            field = path.rsplit("/", 1)[-1]
            if field == "hosts":
                assert leaf >= FLOOR, f"{path} = {leaf}: a host count below the floor"
            else:
                assert field in ("host_floor", *RESOURCES), f"{path} = {leaf}: an unknown count"


def test_capabilities_match_placement_and_reveal_no_host(cloud: Cloud) -> None:
    flavor = cloud.flavor("small", vcpus=2, ram=1024, disk=10)
    server = cloud.boot_and_wait(flavor, cloud.image("raw", "raw"))
    assert server["status"] == "ACTIVE", server.get("fault")

    body = capabilities(cloud)
    assert body["host_floor"] == FLOOR
    shown = offered(body)
    expected = {trait: entry for trait, entry in oracle(cloud, AVAILABLE).items()
                if entry["hosts"] >= FLOOR}
    assert {t: (e["hosts"], e["free"]) for t, e in shown.items()} == {
        t: (e["hosts"], e["free"]) for t, e in expected.items()
        if any(t.startswith(p) for p in ("COMPUTE_NET_VIF_MODEL_", "COMPUTE_GRAPHICS_MODEL_",
                                         "COMPUTE_IMAGE_TYPE_", "HW_ARCH_", "HW_CPU_",
                                         "COMPUTE_SECURITY_", "COMPUTE_FIRMWARE_",
                                         "COMPUTE_STORAGE_BUS_", "COMPUTE_SOUND_MODEL_",
                                         "COMPUTE_VIOMMU_MODEL_", "COMPUTE_ARCH_"))}
    assert shown[E1000]["hosts"] == 3 and shown[VIRTIO]["hosts"] == 2
    assert shown[E1000]["label"] == "e1000"
    assert shown[SECURE_BOOT]["hosts"] == 2
    assert shown["HW_ARCH_X86_64"]["hosts"] == 3 and shown["HW_ARCH_X86_64"]["label"] == "x86_64"
    assert shown["COMPUTE_IMAGE_TYPE_RAW"]["hosts"] == 4
    # The booted server holds resources, so free is not simply capacity.
    assert cloud.allocations(server["id"])
    # One host offers each of these (qxl: the others are disabled or down); a CUSTOM_
    # trait is never shown, however many hosts have it.
    for hidden in (PCNET, QXL, "HW_ARCH_AARCH64", RACK):
        assert hidden not in shown
    families = {f["family"]: f["title"] for f in body["families"]}
    assert families["nic_models"] == "Network card models"
    assert families["cpu_features"] == "CPU features"

    values = {(p["property"], v["value"]): v
              for p in body["image_properties"] for v in p["values"]}
    assert values["hw_vif_model", "e1000"] == {
        "value": "e1000", "trait": E1000, "availability": "offered", "hosts": 3}
    # One host and no host read the same.
    assert values["hw_vif_model", "pcnet"] == {
        "value": "pcnet", "trait": PCNET, "availability": "not_offered", "hosts": None}
    assert values["hw_vif_model", "rtl8139"]["availability"] == "not_offered"
    assert values["hw_architecture", "armv7l"] == {
        "value": "armv7l", "trait": None, "availability": "no_trait", "hosts": None}
    assert values["disk_format", "qcow2"]["trait"] == "COMPUTE_IMAGE_TYPE_QCOW2"
    checked = {p["property"]: p["checked_by"] for p in body["image_properties"]}
    assert checked["hw_vif_model"] == checked["disk_format"] == "host"  # prefilters off

    assert_reveals_no_host(cloud, body)
    # The same for an administrator: the answer does not depend on the caller.
    assert capabilities(cloud, token="admin") == body
    assert requests.get(cloud.api_url + "/v2.1/capabilities", timeout=60).status_code == 401

    # Enabled again, the second qxl host makes qxl offered by two.
    services = {s["host"]: s["id"] for s in cloud.ok("GET", "/os-services")["services"]}
    cloud.ok("PUT", f"/os-services/{services['zeta-disabled']}", {"status": "enabled"})
    again = offered(capabilities(cloud))
    assert again[QXL]["hosts"] == 2 and again[E1000]["hosts"] == 4


def test_html_page_is_escaped_and_reveals_no_host(cloud: Cloud) -> None:
    response = cloud.http.get(cloud.api_url + "/v2.1/capabilities", timeout=60, headers={
        "X-Auth-Token": USER, "Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script" not in policy
    assert response.headers["vary"].split(", ")[0] == "Accept"
    page = response.text.lower()
    assert_reveals_nothing(cloud, page, "the page")
    assert "<script" not in page and "e1000" in page and "network card models" in page
    # Without a token, no page either.
    assert requests.get(cloud.api_url + "/v2.1/capabilities", timeout=60,
                        headers={"Accept": "text/html"}).status_code == 401


def test_moorage_capabilities_command(cloud: Cloud, moorage: Moorage) -> None:
    user = ("--os-token", USER)
    listed = ok(moorage("capabilities", "-f", "json", "--family", "nic_models", *user))
    shown = offered(capabilities(cloud))
    assert listed == [
        {"family": "Network card models", "trait": trait, "label": label, "hosts": hosts,
         "free_vcpus": shown[trait]["free"]["VCPU"],
         "free_memory_mb": shown[trait]["free"]["MEMORY_MB"],
         "free_disk_gb": shown[trait]["free"]["DISK_GB"]}
        for trait, label, hosts in ((E1000, "e1000", 3), (VIRTIO, "virtio", 2))]
    rows = {r["value"]: r for r in ok(moorage(
        "capabilities", "--image-properties", "--property", "hw_vif_model", "-f", "json",
        *user))}
    assert rows["e1000"] == {"property": "hw_vif_model", "value": "e1000", "requires": E1000,
                             "availability": "offered", "hosts": 3, "checked_by": "host"}
    assert rows["pcnet"]["hosts"] is None
    table = moorage("capabilities", *user)
    assert table.code == 0 and "UEFI SECURE BOOT" in table.out
    assert_reveals_nothing(cloud, table.out, "moorage capabilities")
    assert "nic_models" in failed(moorage("capabilities", "--family", "gpus", *user))
    assert "--image-properties" in failed(moorage("capabilities", "--property", "x", *user))
