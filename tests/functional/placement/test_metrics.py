"""GET /metrics of a real placement server: requests counted by route template, method
and status, with their latency; every worker's counts in each answer; admin only unless
``[api] public_metrics``."""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter
from pathlib import Path

import requests

from moorage.placement.launcher import PlacementProcess, ServerProcess
from tests.conftest import PlacementClient
from tests.prometheus import (
    HTTP_LATENCY,
    HTTP_REQUESTS,
    changes,
    parse,
    requests_key,
    scrape,
    timed_by_route,
)

ADMIN = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}


def _call(url: str, method: str, path: str, *, headers: dict[str, str] | None = None,
          expect: int, **kwargs: object) -> None:
    """One request on a connection of its own, so that the workers take turns."""
    response = requests.request(method, url + path, headers=ADMIN if headers is None
                                else headers, timeout=30, **kwargs)  # type: ignore[arg-type]
    assert response.status_code == expect, (method, path, response.text)


def started_workers(server: ServerProcess, count: int) -> ServerProcess:
    """``server`` once each of its ``count`` workers serves (it answers as soon as the
    first does)."""
    deadline = time.monotonic() + 60
    while not all(f"Started worker-{n}" in server.output() for n in range(1, count + 1)):
        assert time.monotonic() < deadline, server.output()
        time.sleep(0.1)
    return server


def shared_directory(server: ServerProcess) -> Path:
    """The directory the server's workers count in, as its launching process logs it."""
    return Path(re.findall(r"worker processes count in (\S+)", server.output())[-1])


def test_every_worker_counts_in_one_answer(tmp_path: Path) -> None:
    server = started_workers(PlacementProcess(tmp_path / "placement", workers=2).start(), 2)
    try:
        url = server.url
        before = scrape(url)
        provider = str(uuid.uuid4())
        made: Counter[tuple[tuple[str, str], ...]] = Counter()

        def call(method: str, path: str, route: str, status: int, *,
                 counted_as: str | None = None, **kwargs: object) -> None:
            _call(url, method, path, expect=status, **kwargs)  # type: ignore[arg-type]
            made[requests_key(route, counted_as or method, status)] += 1

        call("POST", "/resource_providers", "/resource_providers", 200,
             json={"name": "metered", "uuid": provider})
        for _ in range(12):
            call("GET", f"/resource_providers/{provider}", "/resource_providers/{uuid}", 200)
        for _ in range(3):
            call("GET", f"/resource_providers/{uuid.uuid4()}", "/resource_providers/{uuid}",
                 404)
        call("PUT", f"/resource_providers/{provider}/traits",
             "/resource_providers/{uuid}/traits", 400, json={"traits": "nope"})
        for path in ("/nothing/here", f"/nothing/{uuid.uuid4()}"):
            call("GET", path, "unmatched", 404)
        call("DELETE", "/traits", "/traits", 405)
        # Refused before routing (no token): still labelled by the route.
        call("GET", "/resource_providers", "/resource_providers", 401, headers={})
        call("GET", "/metrics", "/metrics", 403,
             headers={**ADMIN, "x-auth-token": "someone"})
        # A method no route has is "other", whatever the client sent.
        call("BREW", "/resource_providers", "/resource_providers", 405, counted_as="other")
        made[requests_key("/metrics", "GET", 200)] += 1  # the first scrape
        # Which worker answers the last scrapes does not matter: every answer sums both.
        scrapes = [scrape(url) for _ in range(4)]
        after = scrapes[0]
        for later, scraped in enumerate(scrapes[1:], 1):
            moved = changes(after, scraped, HTTP_REQUESTS)
            assert moved == {requests_key("/metrics", "GET", 200): later}, moved
    finally:
        server.stop()

    assert changes(before, after, HTTP_REQUESTS) == made
    # The latency histogram: one observation per request, by route and method.
    timed = timed_by_route(made)
    assert changes(before, after, HTTP_LATENCY + "_count") == timed
    infinite = {tuple(p for p in key if p[0] != "le"): value
                for key, value in changes(before, after, HTTP_LATENCY + "_bucket").items()
                if ("le", "+Inf") in key}
    assert infinite == timed
    assert all(after[(HTTP_LATENCY + "_sum", key)] > 0 for key in timed)
    # Bounded labels: no raw path (no uuid) anywhere.
    assert not any(provider in value for _, key in after for _, value in key)

    # The directory the server made for its workers went with it.
    assert not shared_directory(server).exists()


def test_both_workers_write_in_the_shared_directory(tmp_path: Path) -> None:
    server = started_workers(PlacementProcess(tmp_path / "placement", workers=2).start(), 2)
    try:
        directory = shared_directory(server)
        for _ in range(40):
            _call(server.url, "GET", "/traits", expect=200)
        pids = {re.sub(r"\D", "", p.name) for p in directory.glob("counter_*.db")}
        assert len(pids) == 2, sorted(p.name for p in directory.iterdir())
        assert scrape(server.url)[(HTTP_REQUESTS, requests_key("/traits", "GET", 200))] == 40
    finally:
        server.stop()
    assert not directory.exists()


def test_admin_only_by_default(placement: PlacementClient) -> None:
    placement.get("/metrics", token="someone", expect=403)
    # Unlike most of placement, the service role is not enough.
    error = placement.get("/metrics", token="someone", headers={"x-roles": "service"},
                          expect=403).json()
    assert error["errors"][0]["detail"].endswith(
        "Policy does not allow placement:metrics to be performed.  ")
    assert requests.get(placement.url + "/metrics", timeout=30).status_code == 401
    assert parse(placement.get("/metrics", expect=200).text)


def test_public_metrics_need_no_token(tmp_path: Path) -> None:
    server = PlacementProcess(tmp_path / "placement",
                              config={"api": {"public_metrics": True}}).start()
    try:
        anonymous = scrape(server.url, token=None)
        assert (HTTP_REQUESTS, requests_key("/", "GET", 200)) in anonymous
        assert scrape(server.url, token="someone")
        # Only /metrics: the rest of the API still wants a token.
        _call(server.url, "GET", "/resource_providers", headers={}, expect=401)
    finally:
        server.stop()
