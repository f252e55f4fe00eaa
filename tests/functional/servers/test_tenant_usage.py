"""os-simple-tenant-usage over HTTP: hours and sizes of the servers that ran in a
period, deleted ones included (their rows stay), nova's shapes and paging (2.40)."""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest

from tests.functional.servers.conftest import Cloud, fake_host

ALICE = "alice:usage-project"
PROJECT = "usage-project"
FORM = "%Y-%m-%dT%H:%M:%S.%f"


def _when(delta: datetime.timedelta) -> str:
    return (datetime.datetime.now(datetime.UTC).replace(tzinfo=None) + delta).strftime(FORM)


@pytest.fixture
def cloud(make_cloud: Any) -> tuple[Cloud, list[str]]:
    """A project with two servers that ran, one of them deleted since; another
    project's server."""
    cloud: Cloud = make_cloud([fake_host("a")])
    flavor = cloud.flavor("usage", vcpus=2, ram=1024, disk=5)
    image = cloud.image("cirros", "raw")
    made = []
    for name, token in (("one", ALICE), ("two", ALICE), ("else", "carol:other")):
        response = cloud.call("POST", "/servers", {"server": {
            "name": name, "flavorRef": flavor, "imageRef": image, "networks": "none"}},
            token=token)
        assert response.status_code == 202, response.text
        made.append(response.json()["server"]["id"])
    for uuid in made:
        assert cloud.wait(uuid)["status"] == "ACTIVE"
    time.sleep(1.1)  # deleted_at is stored to the second: a second after the launch
    assert cloud.call("DELETE", f"/servers/{made[1]}", token=ALICE).status_code == 204
    cloud.wait(made[1])
    return cloud, made


def _period() -> str:
    return f"start={_when(-datetime.timedelta(hours=1))}&end={_when(datetime.timedelta(hours=1))}"


def test_a_projects_usage_counts_its_live_and_deleted_servers(
        cloud: tuple[Cloud, list[str]]) -> None:
    api, (one, two, _other) = cloud
    usage = api.call("GET", f"/os-simple-tenant-usage/{PROJECT}?{_period()}",
                     token=ALICE, version="2.1").json()["tenant_usage"]
    servers = {s["instance_id"]: s for s in usage["server_usages"]}
    assert set(servers) == {one, two}
    assert servers[one]["state"] == "active" and servers[one]["ended_at"] is None
    assert servers[two]["state"] == "terminated" and servers[two]["ended_at"] is not None
    for server in servers.values():
        assert (server["vcpus"], server["memory_mb"], server["local_gb"]) == (2, 1024, 5)
        assert server["flavor"] == "usage" and server["tenant_id"] == PROJECT
        assert 0 < server["hours"] < 0.1
        assert isinstance(server["uptime"], int)
    hours = sum(s["hours"] for s in servers.values())
    assert usage["total_hours"] == pytest.approx(hours)
    assert usage["total_vcpus_usage"] == pytest.approx(2 * hours)
    assert usage["total_memory_mb_usage"] == pytest.approx(1024 * hours)
    assert usage["total_local_gb_usage"] == pytest.approx(5 * hours)
    # A period before the servers ran: nothing.
    before = (f"start={_when(-datetime.timedelta(hours=3))}"
              f"&end={_when(-datetime.timedelta(hours=2))}")
    assert api.call("GET", f"/os-simple-tenant-usage/{PROJECT}?{before}", token=ALICE
                    ).json() == {"tenant_usage": {}}


def test_the_list_is_every_projects_for_admins_detailed_on_demand(
        cloud: tuple[Cloud, list[str]]) -> None:
    api, _made = cloud
    listed = api.call("GET", f"/os-simple-tenant-usage?{_period()}", version="2.1").json()
    assert sorted(u["tenant_id"] for u in listed["tenant_usages"]) == ["other", PROJECT]
    assert all("server_usages" not in u for u in listed["tenant_usages"])
    detailed = api.call("GET", f"/os-simple-tenant-usage?{_period()}&detailed=1",
                        version="2.1").json()
    assert sum(len(u["server_usages"]) for u in detailed["tenant_usages"]) == 3
    assert api.call("GET", f"/os-simple-tenant-usage?{_period()}", token=ALICE
                    ).status_code == 403


def test_paging_from_2_40(cloud: tuple[Cloud, list[str]]) -> None:
    api, _made = cloud
    first = api.call("GET", f"/os-simple-tenant-usage/{PROJECT}?{_period()}&limit=1",
                     token=ALICE, version="2.40").json()
    (shown,) = first["tenant_usage"]["server_usages"]
    (link,) = first["tenant_usage_links"]
    assert link["rel"] == "next" and f"marker={shown['instance_id']}" in link["href"]
    rest = api.call("GET", f"/os-simple-tenant-usage/{PROJECT}?{_period()}&limit=1"
                    f"&marker={shown['instance_id']}", token=ALICE, version="2.40").json()
    (following,) = rest["tenant_usage"]["server_usages"]
    assert following["instance_id"] != shown["instance_id"]
    bad = api.call("GET", f"/os-simple-tenant-usage/{PROJECT}?marker=nope", token=ALICE,
                   version="2.40")
    assert bad.status_code == 400 and "Marker nope could not be found." in bad.text
    # Before 2.40 limit is not read.
    old = api.call("GET", f"/os-simple-tenant-usage/{PROJECT}?{_period()}&limit=1",
                   token=ALICE, version="2.39").json()
    assert len(old["tenant_usage"]["server_usages"]) == 2 and len(old) == 1


@pytest.mark.parametrize(("query", "message"), [
    ("start=2030-01-01T00:00:00&end=2020-01-01T00:00:00",
     "Invalid start time. The start time cannot occur after the end time."),
    ("start=yesterday", "Invalid datetime string: Datetime is in invalid format"),
])
def test_bad_periods_are_400s(cloud: tuple[Cloud, list[str]], query: str,
                              message: str) -> None:
    api, _made = cloud
    response = api.call("GET", f"/os-simple-tenant-usage/{PROJECT}?{query}", token=ALICE)
    assert response.status_code == 400
    assert response.json()["badRequest"]["message"] == message
