"""Moving servers: cold migrate, resize (confirm and revert), evacuate from a down
host. Every move runs the request filters again and swaps the source allocations to
the migration as consumer while it is in flight."""

from __future__ import annotations

import time
from typing import Any

from moorage.compute.registration import Heartbeat
from tests.functional.servers.conftest import Cloud, fake_host

VMX = "HW_CPU_X86_VMX"


def _hosts_of(cloud: Cloud, consumer: str) -> list[str]:
    return sorted(cloud.host_of_provider(rp) for rp in cloud.allocations(consumer))


def _migration(cloud: Cloud, server: str) -> dict[str, Any]:
    found = cloud.migrations(f"?instance_uuid={server}")
    assert found
    return dict(found[0])


def test_cold_migrate_then_confirm(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([fake_host("a", memory_mb=65536), fake_host("b")])
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"))
    assert server["OS-EXT-SRV-ATTR:host"] == "a"
    response = cloud.action(server["id"], {"migrate": None})
    assert response.status_code == 202, response.text
    moved = cloud.wait(server["id"])
    assert moved["status"] == "VERIFY_RESIZE", moved.get("fault")
    assert moved["OS-EXT-SRV-ATTR:host"] == "b"
    assert moved["moorage:scheduling"]["operation"] == "migrate"
    assert [a["host"] for a in moved["moorage:scheduling"]["attempts"]] == ["b"]
    migration = _migration(cloud, server["id"])
    assert (migration["source_compute"], migration["dest_compute"],
            migration["status"], migration["migration_type"]) == (
        "a", "b", "finished", "migration")
    # In flight: the migration holds the source, the server the destination.
    assert _hosts_of(cloud, migration["uuid"]) == ["a"]
    assert _hosts_of(cloud, server["id"]) == ["b"]
    assert server["id"] in cloud.guests("a") and server["id"] in cloud.guests("b")
    assert cloud.action(server["id"], {"confirmResize": None}).status_code == 204
    confirmed = cloud.wait(server["id"])
    assert confirmed["status"] == "ACTIVE"
    assert cloud.allocations(migration["uuid"]) == {}
    assert _hosts_of(cloud, server["id"]) == ["b"]
    assert server["id"] not in cloud.guests("a")
    assert _migration(cloud, server["id"])["status"] == "confirmed"


def test_resize_reruns_the_filters_and_revert_goes_back(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([fake_host("a", memory_mb=65536),
                               fake_host("b", memory_mb=32768),
                               fake_host("vmx", traits=[VMX], memory_mb=8192)])
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"))
    assert server["OS-EXT-SRV-ATTR:host"] == "a"
    bigger = cloud.flavor("vmx-big", vcpus=2, ram=1024,
                          extra_specs={f"trait:{VMX}": "required"})
    assert cloud.action(server["id"], {"resize": {"flavorRef": bigger}}).status_code == 202
    resized = cloud.wait(server["id"])
    assert resized["status"] == "VERIFY_RESIZE", resized.get("fault")
    assert resized["OS-EXT-SRV-ATTR:host"] == "vmx"  # not b: the new flavor needs VMX
    assert resized["flavor"]["original_name"] == "vmx-big"
    held = cloud.allocations(server["id"])
    assert [r["resources"]["MEMORY_MB"] for r in held.values()] == [1024]
    assert cloud.action(server["id"], {"revertResize": None}).status_code == 202
    reverted = cloud.wait(server["id"])
    assert reverted["status"] == "ACTIVE"
    assert reverted["OS-EXT-SRV-ATTR:host"] == "a"
    assert reverted["flavor"]["original_name"] == "small"
    assert _hosts_of(cloud, server["id"]) == ["a"]
    held = cloud.allocations(server["id"])
    assert [r["resources"]["MEMORY_MB"] for r in held.values()] == [512]
    assert server["id"] not in cloud.guests("vmx")
    assert _migration(cloud, server["id"])["status"] == "reverted"


def test_migrate_with_nowhere_to_go_leaves_the_server_where_it_was(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([fake_host("only")])
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"))
    cloud.action(server["id"], {"migrate": None})
    after = cloud.wait(server["id"])
    assert after["status"] == "ACTIVE"
    assert after["OS-EXT-SRV-ATTR:host"] == "only"
    assert after["moorage:scheduling"]["error"]
    assert _hosts_of(cloud, server["id"]) == ["only"]
    assert _migration(cloud, server["id"])["status"] == "error"


def test_resize_to_the_same_flavor_is_refused(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([fake_host("a")])
    flavor = cloud.flavor("small")
    server = cloud.boot_and_wait(flavor, cloud.image("raw", "raw"))
    response = cloud.action(server["id"], {"resize": {"flavorRef": flavor}})
    assert response.status_code == 400
    assert "must change flavor" in response.json()["badRequest"]["message"]


def test_evacuate_from_a_down_host_and_clean_up_when_it_returns(make_cloud: Any) -> None:
    hosts = [fake_host("a", memory_mb=65536), fake_host("b")]
    for host in hosts:  # beat often, so that a short service_down_time tells up from down
        host.options = {**host.options, ("DEFAULT", "report_interval"): 1}
    cloud: Cloud = make_cloud(hosts, default={"service_down_time": 3})
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"))
    assert server["OS-EXT-SRV-ATTR:host"] == "a"
    # While "a" is up, evacuating is refused.
    response = cloud.action(server["id"], {"evacuate": {}})
    assert response.status_code == 409
    assert "still in use" in response.json()["conflictingRequest"]["message"]
    # "a" stops heart-beating (its agent process is cut off; its guest still runs).
    running = cloud.agents["a"]
    assert running.heartbeat is not None
    running.heartbeat.stop()
    deadline = time.monotonic() + 10
    while any(h["state"] == "up" for h in cloud.ok("GET", "/os-services")["services"]
              if h["host"] == "a"):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    response = cloud.action(server["id"], {"evacuate": {}})
    assert response.status_code == 200, response.text
    evacuated = cloud.wait(server["id"])
    assert evacuated["status"] == "ACTIVE", evacuated.get("fault")
    assert evacuated["OS-EXT-SRV-ATTR:host"] == "b"
    migration = _migration(cloud, server["id"])
    assert (migration["migration_type"], migration["status"]) == ("evacuation", "done")
    assert _hosts_of(cloud, migration["uuid"]) == ["a"]
    assert server["id"] in cloud.guests("a")
    # "a" comes back: told to destroy the evacuated guest, and its allocations go.
    running.heartbeat = Heartbeat(running.agent, cloud.api_url, running.url,
                                  token=cloud.state.service_token, interval=1,
                                  timeout=5).start()
    deadline = time.monotonic() + 10
    while server["id"] in cloud.guests("a"):
        assert time.monotonic() < deadline, "the returning host kept the evacuated guest"
        time.sleep(0.2)
    assert cloud.allocations(migration["uuid"]) == {}
    assert _migration(cloud, server["id"])["status"] == "completed"
    assert _hosts_of(cloud, server["id"]) == ["b"]


def _stop(cloud: Cloud, uuid: str) -> None:
    assert cloud.action(uuid, {"os-stop": None}).status_code == 202
    assert cloud.wait(uuid)["status"] == "SHUTOFF"


def _running(cloud: Cloud, host: str, uuid: str) -> bool:
    return bool(cloud.agents[host].agent.driver.running(uuid))  # type: ignore[attr-defined]


def test_a_stopped_server_resizes_and_stays_stopped_through_confirm_and_revert(
        make_cloud: Any) -> None:
    """nova's rule: a server resized (or migrated) while stopped is not powered on at
    its destination, and is SHUTOFF again after the confirm or the revert."""
    cloud: Cloud = make_cloud([fake_host("a", memory_mb=65536), fake_host("b")])
    first = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"))
    second = cloud.boot_and_wait(cloud.flavor("small2"), cloud.image("raw2", "raw"))
    bigger = cloud.flavor("bigger", ram=1024)
    moved = {}
    for server in (first, second):
        _stop(cloud, server["id"])
        answer = cloud.action(server["id"], {"resize": {"flavorRef": bigger}})
        assert answer.status_code == 202, answer.text
        resized = cloud.wait(server["id"])
        assert resized["status"] == "VERIFY_RESIZE", resized.get("fault")
        moved[server["id"]] = resized["OS-EXT-SRV-ATTR:host"]
        assert moved[server["id"]] != server["OS-EXT-SRV-ATTR:host"]
        # Powered off where it moved.
        assert not _running(cloud, moved[server["id"]], server["id"])
    confirm = cloud.action(first["id"], {"confirmResize": None})
    assert confirm.status_code in (202, 204), confirm.text
    confirmed = cloud.wait(first["id"])
    assert (confirmed["status"], confirmed["OS-EXT-SRV-ATTR:host"],
            confirmed["flavor"]["original_name"]) == ("SHUTOFF", moved[first["id"]],
                                                      "bigger")
    assert cloud.action(second["id"], {"revertResize": None}).status_code == 202
    reverted = cloud.wait(second["id"])
    assert (reverted["status"], reverted["OS-EXT-SRV-ATTR:host"],
            reverted["flavor"]["original_name"]) == (
        "SHUTOFF", second["OS-EXT-SRV-ATTR:host"], "small2")
    assert second["id"] not in cloud.guests(moved[second["id"]])
    # Started again, it runs where it is.
    assert cloud.action(first["id"], {"os-start": None}).status_code == 202
    assert cloud.wait(first["id"])["status"] == "ACTIVE"
    assert _running(cloud, moved[first["id"]], first["id"])


def test_a_stopped_server_with_nowhere_to_go_stays_stopped(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([fake_host("a")])
    server = cloud.boot_and_wait(cloud.flavor("small"), cloud.image("raw", "raw"))
    _stop(cloud, server["id"])
    assert cloud.action(server["id"], {"migrate": None}).status_code == 202
    left = cloud.wait(server["id"])
    assert (left["status"], left["OS-EXT-SRV-ATTR:host"]) == ("SHUTOFF", "a")
