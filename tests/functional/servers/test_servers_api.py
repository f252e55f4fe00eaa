"""The servers API: create, show, list, delete, forced hosts, availability zones, and
bad input that leaves nothing behind."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.servers.conftest import Cloud, fake_host

USER = "user1:project1"  # noauth2: a member of project1


@pytest.fixture
def cloud(make_cloud: Any) -> Cloud:
    cloud: Cloud = make_cloud([fake_host("a", memory_mb=65536), fake_host("b")])
    return cloud


def _nothing_left(cloud: Cloud) -> None:
    assert cloud.ok("GET", "/servers/detail?all_tenants=1")["servers"] == []
    usages = cloud.placement.request("GET", "/usages?project_id=admin")["usages"]
    assert not any(usages.values()), usages


@pytest.mark.parametrize(("change", "message"), [
    ({"flavorRef": "nope"}, "Flavor nope could not be found."),
    ({"imageRef": "nope"}, "Image nope could not be found."),
    ({"name": ""}, "name"),
    ({"availability_zone": "moon"}, "availability zone 'moon' is not available"),
    ({"host": "nowhere"}, "Compute host nowhere could not be found."),
    ({"colour": "blue"}, "colour"),
    ({"block_device_mapping_v2": [{"boot_index": 0, "source_type": "volume",
                                   "destination_type": "volume", "uuid": "x"}]},
     "Moorage has no volume service"),
    ({"block_device_mapping_v2": [{"boot_index": 0, "source_type": "image",
                                   "destination_type": "volume", "uuid": "IMAGE",
                                   "volume_size": 0}]}, "volume_size"),
    ({"block_device_mapping_v2": [{"boot_index": 0, "source_type": "image",
                                   "destination_type": "volume", "uuid": "IMAGE",
                                   "volume_size": "0"}]}, "volume_size"),
    # The local root disk's image (what osc sends beside imageRef) must be imageRef's.
    ({"block_device_mapping_v2": [{"boot_index": 0, "source_type": "image",
                                   "destination_type": "local", "uuid": "other"}]},
     "imageRef and the boot entry's image differ"),
])
def test_bad_create_is_400_and_leaves_nothing(cloud: Cloud, change: dict[str, Any],
                                              message: str) -> None:
    flavor, image = cloud.flavor("small"), cloud.image("raw", "raw")
    body = {"name": "vm", "flavorRef": flavor, "imageRef": image, "networks": "none",
            **change}
    for mapping in body.get("block_device_mapping_v2", []):
        if mapping.get("uuid") == "IMAGE":
            mapping["uuid"] = image
    response = cloud.call("POST", "/servers", {"server": body})
    assert response.status_code == 400, response.text
    assert message in response.json()["badRequest"]["message"]
    _nothing_left(cloud)


def test_malformed_json_is_400(cloud: Cloud) -> None:
    response = cloud.http.post(cloud.api_url + "/v2.1/servers", data=b"{not json",
                               headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert "Malformed" in response.json()["badRequest"]["message"]
    _nothing_left(cloud)


def test_flavor_too_small_for_image_is_400(cloud: Cloud) -> None:
    flavor = cloud.flavor("tiny", ram=256)
    image = cloud.ok("POST", "/images", {"name": "big", "disk_format": "raw",
                                        "container_format": "bare", "min_ram": 1024})["id"]
    response = cloud.call("POST", "/servers", {"server": {"networks": "none",
        "name": "vm", "flavorRef": flavor, "imageRef": image}})
    assert response.status_code == 400
    assert "memory is too small" in response.json()["badRequest"]["message"]
    _nothing_left(cloud)


def test_create_show_list_delete(cloud: Cloud) -> None:
    flavor, image = cloud.flavor("small"), cloud.image("raw", "raw")
    uuid = cloud.boot(flavor, image, name="web")
    server = cloud.wait(uuid)
    assert server["status"] == "ACTIVE"
    assert server["name"] == "web"
    assert server["OS-EXT-STS:vm_state"] == "active"
    assert "fault" not in server
    assert [s["id"] for s in cloud.ok("GET", "/servers")["servers"]] == [uuid]
    host = server["OS-EXT-SRV-ATTR:host"]
    assert uuid in cloud.guests(host)
    assert cloud.allocations(uuid)
    assert cloud.call("DELETE", f"/servers/{uuid}").status_code == 204
    assert cloud.wait(uuid)["status"] == "DELETED"
    assert cloud.call("GET", f"/servers/{uuid}").status_code == 404
    assert uuid not in cloud.guests(host)
    assert cloud.allocations(uuid) == {}


def test_list_filters_on_any_of_several_statuses(cloud: Cloud) -> None:
    """nova's ``status`` filter, repeated: servers in any of the statuses given."""
    image = cloud.image("raw", "raw")
    active = cloud.boot_and_wait(cloud.flavor("small"), image)["id"]
    failed = cloud.boot_and_wait(cloud.flavor("huge", vcpus=4096), image)["id"]
    assert cloud.show(failed)["status"] == "ERROR"

    def listed(query: str) -> set[str]:
        return {s["id"] for s in cloud.ok("GET", f"/servers/detail?{query}")["servers"]}

    assert listed("status=ACTIVE") == {active}
    assert listed("status=error") == {failed}
    assert listed("status=ACTIVE&status=ERROR") == {active, failed}
    assert listed("status=BUILD&status=REBUILD") == set()
    response = cloud.call("GET", "/servers?status=ACTIVE&status=SLEEPY")
    assert response.status_code == 400
    assert "Invalid status value 'SLEEPY'" in response.json()["badRequest"]["message"]


def test_delete_during_build_wins(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([fake_host("a")])
    flavor, image = cloud.flavor("small"), cloud.image("raw", "raw")
    uuids = [cloud.boot(flavor, image) for _ in range(5)]
    for uuid in uuids:  # at once, while some are still being scheduled or spawned
        assert cloud.call("DELETE", f"/servers/{uuid}").status_code == 204
    for uuid in uuids:
        assert cloud.wait(uuid)["status"] == "DELETED"
        assert cloud.allocations(uuid) == {}
    assert cloud.state.conductor.wait_idle(30)
    assert cloud.guests("a") == []


def test_users_see_only_their_project(cloud: Cloud) -> None:
    flavor, image = cloud.flavor("small"), cloud.image("raw", "raw")
    admins = cloud.boot(flavor, image)
    response = cloud.call("POST", "/servers", {"server": {"networks": "none",
        "name": "mine", "flavorRef": flavor, "imageRef": image}}, token=USER)
    assert response.status_code == 202, response.text
    mine = response.json()["server"]["id"]
    listed = cloud.call("GET", "/servers", token=USER).json()["servers"]
    assert [s["id"] for s in listed] == [mine]
    assert cloud.call("GET", f"/servers/{admins}", token=USER).status_code == 404
    shown = cloud.call("GET", f"/servers/{mine}", token=USER).json()["server"]
    assert "OS-EXT-SRV-ATTR:host" not in shown
    forced = cloud.call("POST", "/servers", {"server": {"networks": "none",
        "name": "x", "flavorRef": flavor, "imageRef": image, "host": "b"}}, token=USER)
    assert forced.status_code == 403


def test_admin_forces_a_host(cloud: Cloud) -> None:
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"), host="b")
    assert server["OS-EXT-SRV-ATTR:host"] == "b"  # the weighers would have chosen "a"


def test_availability_zone(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([fake_host("a", memory_mb=65536), fake_host("b")],
                              scheduler={"query_placement_for_availability_zone": True})
    aggregate = cloud.ok("POST", "/os-aggregates", {"aggregate": {
        "name": "rack2", "availability_zone": "az2"}})["aggregate"]
    cloud.ok("POST", f"/os-aggregates/{aggregate['id']}/action",
             {"add_host": {"host": "b"}})
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"),
                                 availability_zone="az2")
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "b"
    assert server["OS-EXT-AZ:availability_zone"] == "az2"


def test_actions_in_the_wrong_state_are_409(cloud: Cloud) -> None:
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"))
    response = cloud.action(server["id"], {"confirmResize": None})
    assert response.status_code == 409
    assert "VERIFY_RESIZE" in response.json()["conflictingRequest"]["message"]
    response = cloud.action(server["id"], {"shelve": None})
    assert response.status_code == 400
    assert "no such action" in response.json()["badRequest"]["message"]


def test_on_postgresql(make_cloud: Any, postgresql_url: str) -> None:
    """The compute API's own database on PostgreSQL: build, move, list, delete."""
    cloud: Cloud = make_cloud([fake_host("a", memory_mb=65536), fake_host("b")],
                              database_url=postgresql_url)
    flavor, image = cloud.flavor("small"), cloud.image("raw", "raw")
    uuids = [cloud.boot(flavor, image, name=f"vm{i}") for i in range(3)]
    for uuid in uuids:
        assert cloud.wait(uuid)["status"] == "ACTIVE"
    first = cloud.ok("GET", "/servers?limit=2")["servers"]
    rest = cloud.ok("GET", f"/servers?marker={first[-1]['id']}")["servers"]
    assert sorted(s["id"] for s in first + rest) == sorted(uuids)
    cloud.action(uuids[0], {"migrate": None})
    assert cloud.wait(uuids[0])["status"] == "VERIFY_RESIZE"
    assert cloud.action(uuids[0], {"confirmResize": None}).status_code == 204
    assert cloud.wait(uuids[0])["status"] == "ACTIVE"
    for uuid in uuids:
        cloud.call("DELETE", f"/servers/{uuid}")
    for uuid in uuids:
        assert cloud.wait(uuid)["status"] == "DELETED"
    assert cloud.ok("GET", "/servers")["servers"] == []


def test_bad_actions_are_400_and_change_nothing(cloud: Cloud) -> None:
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"))
    before = cloud.allocations(server["id"])
    for body, message in (
            ({"rebuild": {"imageRef": "nope"}}, "Image nope could not be found."),
            ({"rebuild": {}}, "imageRef"),
            ({"resize": {"flavorRef": "nope"}}, "Flavor nope could not be found."),
            ({"migrate": {"host": "nowhere"}}, "Compute host nowhere could not be found."),
            ({"evacuate": {"host": "nowhere"}}, "Compute host nowhere could not be found."),
            ({"rebuild": {"imageRef": "x"}, "resize": {"flavorRef": "y"}}, "exactly one"),
    ):
        response = cloud.action(server["id"], body)
        assert response.status_code == 400, (body, response.text)
        assert message in response.json()["badRequest"]["message"]
    after = cloud.show(server["id"])
    assert (after["status"], after["OS-EXT-STS:task_state"], after["image"]["id"],
            after["flavor"]["original_name"], after["OS-EXT-SRV-ATTR:host"]) == (
        "ACTIVE", None, server["image"]["id"], "small", server["OS-EXT-SRV-ATTR:host"])
    assert cloud.allocations(server["id"]) == before
    assert cloud.ok("GET", f"/os-migrations?instance_uuid={server['id']}")["migrations"] == []
