"""The power actions (os-stop, os-start, reboot), lock and unlock, an admin's
os-resetState and os-getConsoleOutput over the whole path: the compute API, its
conductor and a real compute agent (HTTP) driving the fake driver, whose guests keep
a power state and a console."""

from __future__ import annotations

from typing import Any

import pytest

from moorage.lifecycle import store
from moorage.lifecycle.records import ServerRecord
from moorage.virt.fake import FakeDriver
from tests.functional.servers.conftest import Cloud, fake_host

ALICE = "alice:project-a"
BOB = "bob:project-b"


@pytest.fixture
def cloud(make_cloud: Any) -> Cloud:
    cloud: Cloud = make_cloud([fake_host("h1")])
    return cloud


def _driver(cloud: Cloud) -> FakeDriver:
    driver = cloud.agents["h1"].agent.driver
    assert isinstance(driver, FakeDriver)
    return driver


def _boot(cloud: Cloud, token: str = ALICE) -> str:
    flavor = cloud.flavor("small")
    image = cloud.image("cirros", disk_format="raw")
    response = cloud.call("POST", "/servers", {"server": {
        "name": "vm", "flavorRef": flavor, "imageRef": image, "networks": "none"}},
        token=token)
    assert response.status_code == 202, response.text
    uuid = str(response.json()["server"]["id"])
    assert cloud.wait(uuid)["status"] == "ACTIVE"
    return uuid


def _act(cloud: Cloud, uuid: str, body: dict[str, Any], token: str = ALICE,
         version: str | None = None) -> Any:
    return cloud.call("POST", f"/servers/{uuid}/action", body, token=token, version=version)


def _accepted(cloud: Cloud, uuid: str, body: dict[str, Any], token: str = ALICE
              ) -> dict[str, Any]:
    response = _act(cloud, uuid, body, token)
    assert response.status_code == 202, response.text
    return cloud.wait(uuid)


def _record(cloud: Cloud, uuid: str) -> ServerRecord:
    with cloud.state.database.reader() as conn:
        record = store.load_server(conn, uuid)
    assert record is not None
    return record


def _conflict(response: Any, text: str) -> None:
    assert response.status_code == 409, response.text
    assert text in response.json()["conflictingRequest"]["message"], response.text


def test_stop_and_start_power_the_guest_off_and_on(cloud: Cloud) -> None:
    uuid = _boot(cloud)
    driver = _driver(cloud)
    stopped = _accepted(cloud, uuid, {"os-stop": None})
    assert (stopped["status"], stopped["OS-EXT-STS:vm_state"],
            stopped["OS-EXT-STS:power_state"]) == ("SHUTOFF", "stopped", 4)
    assert not driver.running(uuid) and uuid in driver.guests()  # off, still defined
    _conflict(_act(cloud, uuid, {"os-stop": None}),
              f"Cannot 'stop' instance {uuid} while it is in vm_state stopped")
    _conflict(_act(cloud, uuid, {"reboot": {"type": "SOFT"}}),
              f"Cannot 'reboot' instance {uuid} while it is in vm_state stopped")
    listed = cloud.ok("GET", "/servers/detail?status=SHUTOFF&all_tenants=1")["servers"]
    assert [s["id"] for s in listed] == [uuid]
    started = _accepted(cloud, uuid, {"os-start": None})
    assert (started["status"], started["OS-EXT-STS:power_state"]) == ("ACTIVE", 1)
    assert driver.running(uuid)
    _conflict(_act(cloud, uuid, {"os-start": None}),
              f"Cannot 'start' instance {uuid} while it is in vm_state active")
    console = driver.console_output(uuid)
    assert console.endswith("fake guest shut down\nfake guest booted\n"), console


def test_reboots_soft_and_hard(cloud: Cloud) -> None:
    uuid = _boot(cloud)
    driver = _driver(cloud)
    assert _accepted(cloud, uuid, {"reboot": {"type": "SOFT"}})["status"] == "ACTIVE"
    assert _accepted(cloud, uuid, {"reboot": {"type": "hard"}})["status"] == "ACTIVE"
    # A hard reboot starts a stopped server.
    _accepted(cloud, uuid, {"os-stop": None})
    assert _accepted(cloud, uuid, {"reboot": {"type": "Hard"}})["status"] == "ACTIVE"
    assert driver.running(uuid)
    assert driver.console_output(uuid).count("rebooted (hard)") == 2
    for body in ({"reboot": {"type": "WARM"}}, {"reboot": {"type": "sOFT"}}):
        response = _act(cloud, uuid, body)
        assert response.status_code == 400, (body, response.text)
        assert "HARD, SOFT" in response.json()["badRequest"]["message"]
    for body in ({"reboot": {}}, {"reboot": None}, {"reboot": {"type": "HARD", "x": 1}}):
        assert _act(cloud, uuid, body).status_code == 400, body


def test_a_failed_stop_leaves_it_running_and_a_failed_reboot_in_error(cloud: Cloud) -> None:
    uuid = _boot(cloud)
    _driver(cloud).break_power(uuid, "the hypervisor is stuck")
    after = _accepted(cloud, uuid, {"os-stop": None})
    assert (after["status"], after["OS-EXT-STS:task_state"]) == ("ACTIVE", None)
    fault = _record(cloud, uuid).fault
    assert fault is not None and "the hypervisor is stuck" in fault.message
    assert "h1" not in fault.user_message  # the user's message names no host
    broken = _accepted(cloud, uuid, {"reboot": {"type": "HARD"}})
    assert broken["status"] == "ERROR"
    assert "reboot failed" in broken["fault"]["message"]
    # An admin puts it back; it works again once the hypervisor does.
    _driver(cloud).break_power(uuid, None)
    assert _act(cloud, uuid, {"os-resetState": {"state": "active"}}, "admin"
                ).status_code == 202
    assert _accepted(cloud, uuid, {"os-stop": None})["status"] == "SHUTOFF"


def test_reset_state_is_an_admins(cloud: Cloud) -> None:
    uuid = _boot(cloud)
    refused = _act(cloud, uuid, {"os-resetState": {"state": "error"}})
    assert refused.status_code == 403, refused.text
    assert _act(cloud, uuid, {"os-resetState": {"state": "error"}}, "admin"
                ).status_code == 202
    shown = cloud.show(uuid)
    assert (shown["status"], shown["OS-EXT-STS:task_state"]) == ("ERROR", None)
    # nova's stop takes an ERROR server too.
    assert _accepted(cloud, uuid, {"os-stop": None})["status"] == "SHUTOFF"
    bad = _act(cloud, uuid, {"os-resetState": {"state": "stopped"}}, "admin")
    assert bad.status_code == 400 and "active, error" in bad.text, bad.text
    assert _act(cloud, uuid, {"os-resetState": {"state": "active"}}, "admin"
                ).status_code == 202
    assert cloud.show(uuid)["status"] == "ACTIVE"


def test_a_locked_server_refuses_its_owner_and_not_an_admin(cloud: Cloud) -> None:
    uuid = _boot(cloud)
    response = _act(cloud, uuid, {"lock": {"locked_reason": "audit"}})
    assert response.status_code == 202, response.text
    shown = cloud.call("GET", f"/servers/{uuid}", token=ALICE, version="2.73").json()
    assert (shown["server"]["locked"], shown["server"]["locked_reason"]) == (True, "audit")
    older = cloud.call("GET", f"/servers/{uuid}", token=ALICE, version="2.9").json()
    assert older["server"]["locked"] is True and "locked_reason" not in older["server"]
    locked = f"Instance {uuid} is locked"
    for body in ({"os-stop": None}, {"reboot": {"type": "HARD"}},
                 {"resize": {"flavorRef": cloud.flavor("big", ram=1024)}}):
        _conflict(_act(cloud, uuid, body), locked)
    _conflict(cloud.call("DELETE", f"/servers/{uuid}", token=ALICE), locked)
    _conflict(cloud.call("POST", f"/servers/{uuid}/metadata",
                         {"metadata": {"k": "v"}}, token=ALICE), locked)
    # Another project does not see it at all; an admin acts on it.
    assert _act(cloud, uuid, {"unlock": None}, BOB).status_code == 404
    assert _accepted(cloud, uuid, {"os-stop": None}, "admin")["status"] == "SHUTOFF"
    assert _act(cloud, uuid, {"unlock": None}).status_code == 202
    unlocked = cloud.call("GET", f"/servers/{uuid}", token=ALICE, version="2.73").json()
    assert (unlocked["server"]["locked"], unlocked["server"]["locked_reason"]) == (
        False, None)
    assert _accepted(cloud, uuid, {"os-start": None})["status"] == "ACTIVE"


def test_an_admins_lock_is_lifted_by_an_admin_only(cloud: Cloud) -> None:
    uuid = _boot(cloud)
    assert _act(cloud, uuid, {"lock": None}, "admin").status_code == 202
    refused = _act(cloud, uuid, {"unlock": None})
    assert refused.status_code == 403, refused.text
    assert "unlock_override" in refused.text
    assert cloud.show(uuid)["locked"] is True
    assert _act(cloud, uuid, {"unlock": None}, "admin").status_code == 202
    assert cloud.show(uuid)["locked"] is False
    # A reason before 2.73 is not read; from it, one longer than 255 is refused.
    assert _act(cloud, uuid, {"lock": {"locked_reason": "x" * 300}}, version="2.72"
                ).status_code == 202
    assert cloud.show(uuid)["locked_reason"] is None
    too_long = _act(cloud, uuid, {"lock": {"locked_reason": "x" * 256}})
    assert too_long.status_code == 400 and "locked_reason" in too_long.text


def test_console_output_reads_the_guests_console(cloud: Cloud) -> None:
    uuid = _boot(cloud)
    _accepted(cloud, uuid, {"reboot": {"type": "SOFT"}})

    def output(argument: Any) -> str:
        response = _act(cloud, uuid, {"os-getConsoleOutput": argument})
        assert response.status_code == 200, response.text
        return str(response.json()["output"])

    whole = output({})
    assert whole.startswith(f"fake guest {uuid} booted") and "rebooted (soft)" in whole
    assert output({"length": -1}) == output({"length": None}) == whole
    assert output({"length": 2}) == "fake guest rebooted (soft)\n"
    assert output({"length": "3"}) == whole
    assert output({"length": 0}) == ""
    for bad in ({"length": -2}, {"length": "ten"}, {"length": 1.5}, {"lines": 1}, None):
        response = _act(cloud, uuid, {"os-getConsoleOutput": bad})
        assert response.status_code == 400, (bad, response.text)
    assert _act(cloud, uuid, {"os-getConsoleOutput": {}}, BOB).status_code == 404


def _read(cloud: Cloud, path: str, token: str) -> Any:
    response = cloud.call("GET", path, token=token, version="2.84")
    assert response.status_code == 200, response.text
    return response.json()


def test_each_action_is_an_instance_action_with_its_events(cloud: Cloud) -> None:
    """os-instance-actions lists what was asked, newest first, under nova's names, each
    with the request id its answer carried; the host's step is an event."""
    uuid = _boot(cloud)
    asked: dict[str, str] = {}
    for name, body in (("stop", {"os-stop": None}), ("start", {"os-start": None}),
                       ("reboot", {"reboot": {"type": "HARD"}}), ("lock", {"lock": None}),
                       ("unlock", {"unlock": None})):
        response = _act(cloud, uuid, body)
        assert response.status_code == 202, response.text
        asked[name] = response.headers["x-openstack-request-id"]
        cloud.wait(uuid)
    reset = _act(cloud, uuid, {"os-resetState": {"state": "active"}}, token="admin")
    assert reset.status_code == 202, reset.text
    asked["resetState"] = reset.headers["x-openstack-request-id"]
    listed = _read(cloud, f"/servers/{uuid}/os-instance-actions", ALICE)["instanceActions"]
    assert [a["action"] for a in listed] == [
        "resetState", "unlock", "lock", "reboot", "start", "stop", "create"]
    for action in listed[:-1]:
        assert action["request_id"] == asked[action["action"]]
    for name, event in (("stop", "compute_stop_instance"),
                        ("start", "compute_start_instance"),
                        ("reboot", "compute_reboot_instance")):
        shown = _read(cloud, f"/servers/{uuid}/os-instance-actions/{asked[name]}",
                      "admin")["instanceAction"]
        assert [(e["event"], e["result"], e["host"]) for e in shown["events"]] == [
            (event, "Success", "h1")], shown
    lock = _read(cloud, f"/servers/{uuid}/os-instance-actions/{asked['lock']}",
                 "admin")["instanceAction"]
    assert lock["events"] == []
