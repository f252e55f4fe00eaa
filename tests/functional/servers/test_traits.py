"""Traits in flavors and images steer scheduling: required and forbidden flavor
traits, image traits, both together, volume-backed servers, disabled hosts, rebuild
with a new image (upstream's TraitsBasedSchedulingTest scenarios)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.servers.conftest import Cloud, fake_host

VMX = "HW_CPU_X86_VMX"
SGX = "HW_CPU_X86_SGX"


@pytest.fixture
def cloud(make_cloud: Any) -> Cloud:
    # "plain" is the largest, so it wins whenever traits do not rule it out.
    cloud: Cloud = make_cloud([
        fake_host("vmx", traits=[VMX], memory_mb=16384),
        fake_host("sgx", traits=[SGX], memory_mb=16384),
        fake_host("plain", memory_mb=65536),
    ])
    return cloud


def _service_id(cloud: Cloud, host: str) -> Any:
    return next(s["id"] for s in cloud.ok("GET", "/os-services")["services"]
                if s["host"] == host)


def test_flavor_required_trait(cloud: Cloud) -> None:
    flavor = cloud.flavor("vmx", extra_specs={f"trait:{VMX}": "required"})
    server = cloud.boot_and_wait(flavor, cloud.image("raw", "raw"))
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "vmx"


def test_flavor_required_trait_on_a_disabled_host_is_no_valid_host(cloud: Cloud) -> None:
    cloud.ok("PUT", f"/os-services/{_service_id(cloud, 'vmx')}",
             {"status": "disabled", "disabled_reason": "maintenance"})
    providers = cloud.placement.request(
        "GET", "/resource_providers?required=COMPUTE_STATUS_DISABLED")["resource_providers"]
    assert [p["name"] for p in providers] == ["vmx"]
    flavor = cloud.flavor("vmx", extra_specs={f"trait:{VMX}": "required"})
    server = cloud.boot_and_wait(flavor, cloud.image("raw", "raw"))
    assert server["status"] == "ERROR"
    assert server["fault"]["message"].startswith("No valid host was found.")
    # Enabled again, the same request succeeds.
    cloud.ok("PUT", f"/os-services/{_service_id(cloud, 'vmx')}", {"status": "enabled"})
    server = cloud.boot_and_wait(flavor, cloud.image("raw2", "raw"))
    assert server["OS-EXT-SRV-ATTR:host"] == "vmx"


def test_disabled_host_gets_no_new_servers(cloud: Cloud) -> None:
    cloud.ok("PUT", f"/os-services/{_service_id(cloud, 'plain')}", {"status": "disabled"})
    flavor, image = cloud.flavor("small"), cloud.image("raw", "raw")
    hosts = {cloud.boot_and_wait(flavor, image)["OS-EXT-SRV-ATTR:host"] for _ in range(4)}
    assert "plain" not in hosts
    assert hosts <= {"vmx", "sgx"}


def test_flavor_forbidden_trait(cloud: Cloud) -> None:
    cloud.ok("PUT", f"/os-services/{_service_id(cloud, 'plain')}", {"status": "disabled"})
    flavor = cloud.flavor("nosgx", extra_specs={f"trait:{SGX}": "forbidden"})
    for _ in range(3):
        server = cloud.boot_and_wait(flavor, cloud.image("raw", "raw"))
        assert server["OS-EXT-SRV-ATTR:host"] == "vmx"


def test_image_required_trait(cloud: Cloud) -> None:
    image = cloud.image("sgx", "raw", {f"trait:{SGX}": "required"})
    server = cloud.boot_and_wait(cloud.flavor("small"), image)
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "sgx"


def test_flavor_and_image_traits_together(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([
        fake_host("both", traits=[VMX, SGX], memory_mb=8192),
        fake_host("vmx", traits=[VMX], memory_mb=65536),
        fake_host("sgx", traits=[SGX], memory_mb=65536),
    ])
    flavor = cloud.flavor("vmx", extra_specs={f"trait:{VMX}": "required"})
    image = cloud.image("sgx", "raw", {f"trait:{SGX}": "required"})
    server = cloud.boot_and_wait(flavor, image)
    assert server["OS-EXT-SRV-ATTR:host"] == "both"


def test_flavor_and_image_traits_no_host_has_both(cloud: Cloud) -> None:
    flavor = cloud.flavor("vmx", extra_specs={f"trait:{VMX}": "required"})
    image = cloud.image("sgx", "raw", {f"trait:{SGX}": "required"})
    server = cloud.boot_and_wait(flavor, image)
    assert server["status"] == "ERROR"
    assert server["fault"]["message"].startswith("No valid host was found.")


def test_image_trait_of_a_volume_backed_server(cloud: Cloud) -> None:
    image = cloud.image("sgx", "qcow2", {f"trait:{SGX}": "required"})
    uuid = cloud.boot(cloud.flavor("small"), image, block_device_mapping_v2=[{
        "boot_index": 0, "source_type": "image", "destination_type": "volume",
        "uuid": image, "volume_size": 5}])
    server = cloud.wait(uuid)
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "sgx"


def test_rebuild_with_image_traits_the_host_has(cloud: Cloud) -> None:
    flavor = cloud.flavor("vmx", extra_specs={f"trait:{VMX}": "required"})
    server = cloud.boot_and_wait(flavor, cloud.image("raw", "raw"))
    new_image = cloud.image("vmx-image", "raw", {f"trait:{VMX}": "required"})
    response = cloud.action(server["id"], {"rebuild": {"imageRef": new_image}})
    assert response.status_code == 202, response.text
    rebuilt = cloud.wait(server["id"])
    assert rebuilt["status"] == "ACTIVE", rebuilt.get("fault")
    assert rebuilt["image"]["id"] == new_image
    assert rebuilt["OS-EXT-SRV-ATTR:host"] == "vmx"
    assert server["id"] in cloud.guests("vmx")


def test_rebuild_with_image_traits_the_host_lacks(cloud: Cloud) -> None:
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"))
    host = server["OS-EXT-SRV-ATTR:host"]
    assert host == "plain"
    old_image = server["image"]["id"]
    new_image = cloud.image("sgx", "raw", {f"trait:{SGX}": "required"})
    response = cloud.action(server["id"], {"rebuild": {"imageRef": new_image}})
    assert response.status_code == 202, response.text
    failed = cloud.wait(server["id"])
    assert failed["status"] == "ERROR"
    assert failed["fault"]["message"].startswith(
        "No valid host was found. Image traits cannot be satisfied by the current "
        "resource providers.")
    assert failed["image"]["id"] == old_image  # rolled back
    assert failed["OS-EXT-SRV-ATTR:host"] == host


def test_rebuild_with_image_trait_the_flavor_forbids(cloud: Cloud) -> None:
    flavor = cloud.flavor("nosgx", extra_specs={f"trait:{SGX}": "forbidden"})
    server = cloud.boot_and_wait(flavor, cloud.image("raw", "raw"))
    new_image = cloud.image("sgx", "raw", {f"trait:{SGX}": "required"})
    cloud.action(server["id"], {"rebuild": {"imageRef": new_image}})
    failed = cloud.wait(server["id"])
    assert failed["status"] == "ERROR"
    assert "forbidden traits" in failed["fault"]["message"]


def test_rebuild_with_the_same_image(cloud: Cloud) -> None:
    image = cloud.image("raw", "raw")
    server = cloud.boot_and_wait(cloud.flavor("small"), image)
    response = cloud.action(server["id"], {"rebuild": {"imageRef": image}})
    assert response.status_code == 202
    rebuilt = cloud.wait(server["id"])
    assert rebuilt["status"] == "ACTIVE"
    assert rebuilt["OS-EXT-SRV-ATTR:host"] == server["OS-EXT-SRV-ATTR:host"]


def test_rebuild_on_a_full_host_needs_no_room(make_cloud: Any) -> None:
    """Rebuild keeps the server's allocation: no placement query, so a full host still
    takes the rebuild (upstream's scenario)."""
    cloud: Cloud = make_cloud([fake_host("vmx", traits=[VMX], vcpus=1, memory_mb=1024)])
    flavor = cloud.flavor("half", vcpus=1, ram=512)
    server = cloud.boot_and_wait(flavor, cloud.image("raw", "raw"))
    assert server["status"] == "ACTIVE", server.get("fault")
    second = cloud.boot_and_wait(flavor, cloud.image("raw2", "raw"))
    assert second["status"] == "ERROR"  # the host is full
    assert ("resources MEMORY_MB=512 (from flavor half): excludes the only host (no host "
            "satisfies it)") in second["fault"]["message"]
    new_image = cloud.image("vmx-image", "raw", {f"trait:{VMX}": "required"})
    assert cloud.action(server["id"], {"rebuild": {"imageRef": new_image}}).status_code == 202
    rebuilt = cloud.wait(server["id"])
    assert rebuilt["status"] == "ACTIVE", rebuilt.get("fault")
    assert rebuilt["image"]["id"] == new_image
