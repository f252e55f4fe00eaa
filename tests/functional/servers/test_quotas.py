"""Quotas over HTTP: nova's limits enforced where servers, key pairs and metadata are
recorded, race-free across API processes, with nova's bodies and words."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.functional.servers.conftest import Cloud, fake_host
from tests.keys import ED25519

ALICE = "alice:quota-project"  # noauth2: user alice of project quota-project
BOB = "bob:quota-project"
PROJECT = "quota-project"


def _server(flavor: str, image: str, name: str = "vm", **extra: Any) -> dict[str, Any]:
    return {"server": {"name": name, "flavorRef": flavor, "imageRef": image,
                       "networks": "none", **extra}}


def _set_quota(cloud: Cloud, **limits: int) -> dict[str, Any]:
    return dict(cloud.ok("PUT", f"/os-quota-sets/{PROJECT}", {"quota_set": limits})[
        "quota_set"])


def _forbidden(response: requests.Response) -> str:
    assert response.status_code == 403, response.text
    return str(response.json()["forbidden"]["message"])


def _live_servers(cloud: Cloud) -> list[dict[str, Any]]:
    return list(cloud.ok("GET", f"/servers/detail?all_tenants=1&project_id={PROJECT}")[
        "servers"])


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_fifty_concurrent_creates_through_two_api_processes_never_pass_the_quota(
        make_cloud: Any, backend: str, tmp_path: Path,
        request: pytest.FixtureRequest) -> None:
    """Two compute APIs on one database (each with its conductor and group committer),
    50 creates of one project at once, its instances quota 10: exactly 10 pass; the
    others get nova's 403."""
    url = (request.getfixturevalue("postgresql_url") if backend == "postgresql"
           else f"sqlite:///{tmp_path / 'shared.db'}")
    first: Cloud = make_cloud([fake_host("a")], database_url=url)
    second: Cloud = make_cloud([], database_url=url)
    flavor, image = first.flavor("small"), first.image("cirros", "raw")
    assert _set_quota(first, instances=10)["instances"] == 10
    answers: list[requests.Response] = []
    lock = threading.Lock()
    start = threading.Barrier(50)

    def create(n: int) -> None:
        api = first if n % 2 else second
        start.wait()
        response = requests.post(f"{api.api_url}/v2.1/servers",
                                 json=_server(flavor, image, f"vm{n}"),
                                 headers={"X-Auth-Token": ALICE,
                                          "OpenStack-API-Version": "compute 2.37"},
                                 timeout=120)
        with lock:
            answers.append(response)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert Counter(r.status_code for r in answers) == {202: 10, 403: 40}
    messages = {_forbidden(r) for r in answers if r.status_code == 403}
    assert messages == {"Quota exceeded for instances: Requested 1, but already used 10 "
                        "of 10 instances"}
    assert len(_live_servers(first)) == 10


@pytest.fixture
def cloud(make_cloud: Any) -> Cloud:
    """Two hosts (a resize goes to the other), quotas at nova's defaults."""
    return make_cloud([fake_host("a"), fake_host("b")],
                      quota={"instances": 10, "cores": 20, "ram": 51200})


def test_cores_at_resize(cloud: Cloud) -> None:
    """A resize may grow the server only within the cores quota; the growth is what
    is requested (nova's upsize check)."""
    small, large, medium = (cloud.flavor("two", vcpus=2), cloud.flavor("eight", vcpus=8),
                            cloud.flavor("four", vcpus=4))
    image = cloud.image("cirros", "raw")
    _set_quota(cloud, cores=4)
    made = cloud.call("POST", "/servers", _server(small, image), token=ALICE)
    assert made.status_code == 202, made.text
    uuid = made.json()["server"]["id"]
    assert cloud.wait(uuid)["status"] == "ACTIVE"
    refused = cloud.call("POST", f"/servers/{uuid}/action", {"resize": {"flavorRef": large}},
                         token=ALICE)
    assert _forbidden(refused) == ("Quota exceeded for cores: Requested 6, but already "
                                   "used 2 of 4 cores")
    assert cloud.show(uuid)["status"] == "ACTIVE"
    accepted = cloud.call("POST", f"/servers/{uuid}/action",
                          {"resize": {"flavorRef": medium}}, token=ALICE)
    assert accepted.status_code == 202, accepted.text
    assert cloud.wait(uuid)["status"] == "VERIFY_RESIZE"


def test_cores_and_ram_at_create(cloud: Cloud) -> None:
    flavor = cloud.flavor("big", vcpus=3, ram=2048)
    image = cloud.image("cirros", "raw")
    _set_quota(cloud, cores=5, ram=3000)
    assert cloud.call("POST", "/servers", _server(flavor, image),
                      token=ALICE).status_code == 202
    refused = cloud.call("POST", "/servers", _server(flavor, image), token=BOB)
    assert _forbidden(refused) == ("Quota exceeded for cores, ram: Requested 3, 2048, but "
                                   "already used 3, 2048 of 5, 3000 cores, ram")


def test_multi_create_makes_what_the_quota_allows(cloud: Cloud) -> None:
    """min_count..max_count: as many as the quota allows (here 4 of 10), named name-N,
    one reservation; fewer than min_count is a 403."""
    flavor, image = cloud.flavor("small"), cloud.image("cirros", "raw")
    _set_quota(cloud, instances=5)
    assert cloud.call("POST", "/servers", _server(flavor, image, "single"),
                      token=ALICE).status_code == 202
    made = cloud.call("POST", "/servers", _server(
        flavor, image, "web", min_count=2, max_count="10", return_reservation_id=True),
        token=ALICE)
    assert made.status_code == 202, made.text
    reservation = made.json()["reservation_id"]
    assert list(made.json()) == ["reservation_id"] and reservation.startswith("r-")
    listed = cloud.call("GET", f"/servers/detail?reservation_id={reservation}",
                        token=ALICE).json()["servers"]
    assert sorted(s["name"] for s in listed) == ["web-1", "web-2", "web-3", "web-4"]
    assert sorted(s["OS-EXT-SRV-ATTR:hostname"] for s in listed) == [
        "web-1", "web-2", "web-3", "web-4"]
    assert sorted(cloud.show(s["id"])["OS-EXT-SRV-ATTR:launch_index"] for s in listed) == [
        0, 1, 2, 3]
    for server in listed:
        assert cloud.wait(server["id"])["status"] == "ACTIVE"
    refused = cloud.call("POST", "/servers", _server(flavor, image, "more", min_count=2,
                                                     max_count=3), token=ALICE)
    assert _forbidden(refused) == ("Quota exceeded for instances: Requested 2-3, but "
                                   "already used 5 of 5 instances")
    assert len(_live_servers(cloud)) == 5


def test_multi_create_answers_the_first_server_and_refuses_min_above_max(
        cloud: Cloud) -> None:
    flavor, image = cloud.flavor("small"), cloud.image("cirros", "raw")
    made = cloud.call("POST", "/servers", _server(flavor, image, "pair", min_count=2),
                      token=ALICE)
    assert made.status_code == 202, made.text
    first = cloud.show(made.json()["server"]["id"])
    assert first["name"] == "pair-1"
    names = sorted(s["name"] for s in _live_servers(cloud))
    assert names == ["pair-1", "pair-2"]
    assert len({s["OS-EXT-SRV-ATTR:reservation_id"] for s in _live_servers(cloud)}) == 1
    bad = cloud.call("POST", "/servers", _server(flavor, image, min_count=3, max_count=2),
                     token=ALICE)
    assert bad.status_code == 400, bad.text
    assert bad.json()["badRequest"]["message"] == "min_count must be <= max_count"


def test_key_pairs_quota(cloud: Cloud) -> None:
    _set_quota(cloud, key_pairs=1)
    made = cloud.call("POST", "/os-keypairs", {"keypair": {
        "name": "one", "public_key": ED25519}}, token=ALICE)
    assert made.status_code == 201, made.text
    refused = cloud.call("POST", "/os-keypairs", {"keypair": {
        "name": "two", "public_key": ED25519}}, token=ALICE)
    assert _forbidden(refused) == "Quota exceeded, too many key pairs."
    # Per user: bob has his own.
    assert cloud.call("POST", "/os-keypairs", {"keypair": {
        "name": "one", "public_key": ED25519}}, token=BOB).status_code == 201


def test_server_groups_and_their_members_quotas(cloud: Cloud) -> None:
    """server_groups bounds a project's groups, server_group_members a group's servers,
    with nova's words; the limits body counts the groups."""
    _set_quota(cloud, server_groups=1, server_group_members=2)
    made = cloud.call("POST", "/os-server-groups", {"server_group": {
        "name": "g", "policies": ["soft-anti-affinity"]}}, token=ALICE, version="2.15")
    assert made.status_code == 200, made.text
    group = made.json()["server_group"]["id"]
    refused = cloud.call("POST", "/os-server-groups", {"server_group": {
        "name": "h", "policy": "affinity"}}, token=ALICE)
    assert _forbidden(refused) == "Quota exceeded, too many server groups."
    absolute = cloud.call("GET", "/limits", token=ALICE).json()["limits"]["absolute"]
    assert (absolute["maxServerGroups"], absolute["totalServerGroupsUsed"]) == (1, 1)
    flavor, image = cloud.flavor("small"), cloud.image("cirros", "raw")
    hints = {"os:scheduler_hints": {"group": group}}
    two = cloud.call("POST", "/servers", {**_server(flavor, image, max_count=2), **hints},
                     token=ALICE)
    assert two.status_code == 202, two.text
    third = cloud.call("POST", "/servers", {**_server(flavor, image), **hints}, token=ALICE)
    assert _forbidden(third) == "Quota exceeded, too many servers in group"
    shown = cloud.call("GET", f"/os-server-groups/{group}", token=ALICE).json()
    assert len(shown["server_group"]["members"]) == 2


def test_metadata_items_quota_at_create_and_on_writes(cloud: Cloud) -> None:
    flavor, image = cloud.flavor("small"), cloud.image("cirros", "raw")
    _set_quota(cloud, metadata_items=2)
    refused = cloud.call("POST", "/servers", _server(
        flavor, image, metadata={"a": "1", "b": "2", "c": "3"}), token=ALICE)
    assert _forbidden(refused) == "Maximum number of metadata items exceeds 2"
    made = cloud.call("POST", "/servers", _server(flavor, image, metadata={"a": "1"}),
                      token=ALICE)
    uuid = made.json()["server"]["id"]
    cloud.wait(uuid)
    assert cloud.call("POST", f"/servers/{uuid}/metadata", {"metadata": {"b": "2"}},
                      token=ALICE).status_code == 200
    over = cloud.call("POST", f"/servers/{uuid}/metadata", {"metadata": {"c": "3"}},
                      token=ALICE)
    assert _forbidden(over) == "Maximum number of metadata items exceeds 2"


@pytest.mark.parametrize(("files", "message"), [
    ([{"path": "/a", "contents": "eA=="}] * 3, "Personality file limit exceeded"),
    ([{"path": "/" + "p" * 20, "contents": "eA=="}],
     "Personality file path exceeds maximum 10"),
    ([{"path": "/a", "contents": "eHh4" * 10}], "Personality file content exceeds maximum 16"),
])
def test_personality_files_within_their_limits_before_2_57(
        make_cloud: Any, files: list[dict[str, str]], message: str) -> None:
    cloud: Cloud = make_cloud([fake_host("a")], quota={
        "injected_files": 2, "injected_file_path_length": 10,
        "injected_file_content_bytes": 16})
    flavor, image = cloud.flavor("small"), cloud.image("cirros", "raw")
    body = {"server": {"name": "vm", "flavorRef": flavor, "imageRef": image,
                       "networks": "none", "personality": files}}
    refused = cloud.call("POST", "/servers", body, token=ALICE, version="2.56")
    assert _forbidden(refused) == message
    body["server"]["personality"] = files[:1] if len(files) > 1 else []
    assert cloud.call("POST", "/servers", body, token=ALICE,
                      version="2.56").status_code == 202


def test_unlimited_is_minus_one_and_the_noop_driver_counts_nothing(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([fake_host("a")], quota={
        "instances": 1, "driver": "nova.quota.NoopQuotaDriver"})
    flavor, image = cloud.flavor("small"), cloud.image("cirros", "raw")
    made = cloud.call("POST", "/servers", _server(flavor, image, min_count=3),
                      token=ALICE)
    assert made.status_code == 202, made.text
    shown = cloud.ok("GET", f"/os-quota-sets/{PROJECT}")["quota_set"]
    assert shown["instances"] == shown["cores"] == shown["key_pairs"] == -1
