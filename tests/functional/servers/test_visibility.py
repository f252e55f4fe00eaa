"""Another project's private image and a private flavor, on every path: show, list,
boot, rebuild, resize. Upstream's rule: a private image is its owner project's (and
an administrator's); a private flavor (no access lists here) an administrator's. A
refused boot or action writes nothing; the 404 or 400 reads as for an id that does not
exist, so a private thing's existence is not disclosed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.servers.conftest import fake_host

ALICE = "alice:project-a"
BOB = "bob:project-b"


@pytest.fixture
def cloud(make_cloud: Any) -> Any:
    return make_cloud([fake_host("h1"), fake_host("h2")])


def _image(cloud: Any, token: str, name: str) -> str:
    response = cloud.call("POST", "/images", {"name": name, "disk_format": "raw",
                                               "container_format": "bare"}, token=token)
    assert response.status_code in (200, 201), response.text
    body = response.json()
    assert body["visibility"] == "private" and body["owner"] == token.split(":")[1]
    return str(body["id"])


def _boot(cloud: Any, token: str, flavor: str, image: str) -> Any:
    return cloud.call("POST", "/servers", {"server": {"networks": "none",
        "name": "vm", "flavorRef": flavor, "imageRef": image}}, token=token)


def _servers(cloud: Any) -> list[Any]:
    return list(cloud.ok("GET", "/servers?all_tenants=1")["servers"])


def test_another_projects_private_image_cannot_be_booted_or_rebuilt(cloud: Any) -> None:
    flavor = cloud.flavor("small")
    alices = _image(cloud, ALICE, "alice-private")
    bobs = _image(cloud, BOB, "bob-private")
    assert cloud.call("GET", f"/images/{alices}", token=BOB).status_code == 404
    refused = _boot(cloud, BOB, flavor, alices)
    assert refused.status_code == 400, refused.text
    assert f"Image {alices} could not be found" in refused.text
    assert _servers(cloud) == []
    # Her own image boots for her; an administrator may use any image.
    mine = _boot(cloud, ALICE, flavor, alices)
    assert mine.status_code == 202, mine.text
    server = cloud.wait(mine.json()["server"]["id"])
    assert server["status"] == "ACTIVE"
    assert _boot(cloud, "admin", flavor, bobs).status_code == 202
    # Bob's server cannot be rebuilt from Alice's image.
    bob_server = _boot(cloud, BOB, flavor, bobs).json()["server"]["id"]
    cloud.wait(bob_server)
    rebuild = cloud.call("POST", f"/servers/{bob_server}/action",
                         {"rebuild": {"imageRef": alices}}, token=BOB)
    assert rebuild.status_code == 400, rebuild.text
    assert f"Image {alices} could not be found" in rebuild.text
    shown = cloud.call("GET", f"/servers/{bob_server}", token=BOB).json()["server"]
    assert (shown["status"], shown["image"]["id"]) == ("ACTIVE", bobs)


def test_a_private_flavor_is_the_administrators(cloud: Any) -> None:
    public = cloud.flavor("small")
    private = cloud.ok("POST", "/flavors", {"flavor": {
        "name": "secret", "vcpus": 1, "ram": 1024, "disk": 1,
        "os-flavor-access:is_public": False}})["flavor"]["id"]
    image = _image(cloud, ALICE, "img")
    listed = cloud.call("GET", "/flavors", token=ALICE).json()["flavors"]
    assert private not in [f["id"] for f in listed]
    for path in (f"/flavors/{private}", f"/flavors/{private}/os-extra_specs"):
        assert cloud.call("GET", path, token=ALICE).status_code == 404, path
    assert cloud.call("GET", f"/flavors/{private}").status_code == 200  # the admin
    refused = _boot(cloud, ALICE, private, image)
    assert refused.status_code == 400, refused.text
    assert f"Flavor {private} could not be found" in refused.text
    assert _servers(cloud) == []
    server = _boot(cloud, ALICE, public, image).json()["server"]["id"]
    assert cloud.wait(server)["status"] == "ACTIVE"
    resize = cloud.call("POST", f"/servers/{server}/action",
                        {"resize": {"flavorRef": private}}, token=ALICE)
    assert resize.status_code == 400, resize.text
    assert cloud.call("GET", f"/servers/{server}", token=ALICE).json()["server"][
        "flavor"]["original_name"] == "small"
    # The dry run refuses it the same way, and writes nothing.
    plan = cloud.call("POST", "/scheduler/plan", {"server": {
        "name": "vm", "flavorRef": private, "imageRef": image}}, token=ALICE)
    assert plan.status_code == 400 and f"Flavor {private} could not be found" in plan.text
