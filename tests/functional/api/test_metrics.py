"""GET /metrics of a real compute API (``moorage api serve``, two granian workers, each
with its conductor): requests by route template, method and status; the conductor's
boots and NoValidHosts; every worker's counts in each answer; admin only by default."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import requests

from moorage.api.launcher import ComputeApiProcess
from tests.functional.placement.test_metrics import shared_directory, started_workers
from tests.prometheus import (
    HTTP_LATENCY,
    HTTP_REQUESTS,
    changes,
    labels,
    requests_key,
    scrape,
    timed_by_route,
)

ADMIN = {"x-auth-token": "admin"}
USER = {"x-auth-token": "demo:demo-project"}


def _call(url: str, method: str, path: str, *, headers: dict[str, str], expect: int,
          json: Any = None) -> Any:
    """One request on a connection of its own, so that the workers take turns."""
    response = requests.request(method, url + path, headers=headers, json=json, timeout=30)
    assert response.status_code == expect, (method, path, response.text)
    return response.json() if response.content else None


def test_requests_and_boots_of_every_worker(tmp_path: Path, placement_server: Any) -> None:
    api = ComputeApiProcess(tmp_path / "api", placement_url=placement_server.url,
                            workers=2).start()
    started_workers(api, 2)
    try:
        url = api.url
        before = scrape(url)
        made: Counter[tuple[tuple[str, str], ...]] = Counter()

        def call(method: str, path: str, route: str, status: int, *,
                 headers: dict[str, str] = ADMIN, json: Any = None) -> Any:
            made[requests_key(route, method, status)] += 1
            return _call(url, method, path, headers=headers, expect=status, json=json)

        flavor = call("POST", "/v2.1/flavors", "/v2.1/flavors", 200, json={"flavor": {
            "name": "small", "vcpus": 1, "ram": 512, "disk": 1}})["flavor"]["id"]
        for _ in range(5):
            call("GET", f"/v2.1/flavors/{flavor}", "/v2.1/flavors/{flavor_id}", 200)
        # A trailing slash is part of the path (nova's router): no route matches it.
        call("GET", f"/v2.1/flavors/{flavor}/", "unmatched", 404)
        call("GET", "/v2.1/flavors/nope", "/v2.1/flavors/{flavor_id}", 404)
        call("GET", "/v2.1/no-such-thing", "unmatched", 404)
        call("GET", "/v2.1/flavors", "/v2.1/flavors", 401, headers={})
        call("PATCH", "/v2.1/flavors", "/v2.1/flavors", 405)
        call("GET", "/metrics", "/metrics", 403, headers=USER)
        image = call("POST", "/v2.1/images", "/v2.1/images", 201, json={
            "name": "raw", "disk_format": "raw", "container_format": "bare"})["id"]
        # No compute host at all: the build ends in NoValidHost.
        server = call("POST", "/v2.1/servers", "/v2.1/servers", 202, headers=USER, json={
            "server": {"name": "vm", "flavorRef": flavor, "imageRef": image}})["server"]["id"]
        deadline = time.monotonic() + 60
        while True:
            shown = call("GET", f"/v2.1/servers/{server}", "/v2.1/servers/{server_id}", 200,
                         headers=USER)["server"]
            if shown["status"] == "ERROR":
                break
            assert time.monotonic() < deadline, shown
            time.sleep(0.1)
        assert shown["fault"]["message"].startswith("No valid host was found.")
        made[requests_key("/metrics", "GET", 200)] += 1  # the first scrape
        scrapes = [scrape(url) for _ in range(4)]
        after = scrapes[0]
        for later, scraped in enumerate(scrapes[1:], 1):
            assert changes(after, scraped, HTTP_REQUESTS) == {
                requests_key("/metrics", "GET", 200): later}
    finally:
        api.stop()

    # Heartbeats and agents there are none: every request counted is one made here.
    assert changes(before, after, HTTP_REQUESTS) == made
    assert changes(before, after, HTTP_LATENCY + "_count") == timed_by_route(made)
    assert not any(server in value for _, key in after for _, value in key)
    # The conductor's counters, from whichever worker built the server.
    assert changes(before, after, "moorage_boots_total") == {labels(outcome="error"): 1}
    assert after[("moorage_boots_total", labels(outcome="active"))] == 0
    assert after[("moorage_reschedules_total", ())] == 0
    refused = changes(before, after, "moorage_no_valid_host_total")
    assert list(refused.values()) == [1], refused
    assert refused == {labels(constraint="no hosts"): 1}  # a cloud without hosts
    assert not shared_directory(api).exists()


def test_admin_only_by_default(tmp_path: Path, placement_server: Any) -> None:
    api = ComputeApiProcess(tmp_path / "api", placement_url=placement_server.url).start()
    try:
        body = _call(api.url, "GET", "/metrics", headers=USER, expect=403)
        assert body["forbidden"]["message"] == (
            "Policy doesn't allow moorage:metrics to be performed.")
        _call(api.url, "GET", "/metrics", headers={}, expect=401)
        assert scrape(api.url)
    finally:
        api.stop()


def test_public_metrics_need_no_token(tmp_path: Path, placement_server: Any) -> None:
    api = ComputeApiProcess(tmp_path / "api", placement_url=placement_server.url,
                            config={"api": {"public_metrics": True}}).start()
    try:
        assert (HTTP_REQUESTS, requests_key("/", "GET", 200)) in scrape(api.url, token=None)
        _call(api.url, "GET", "/v2.1/flavors", headers={}, expect=401)
    finally:
        api.stop()
