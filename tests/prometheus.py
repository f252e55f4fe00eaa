"""Reading a /metrics answer as the tests need it: every sample by name and labels,
parsed with prometheus_client's own parser, and what changed between two scrapes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import requests
from prometheus_client.parser import text_string_to_metric_families

# (sample name, sorted (label, value) pairs)
SampleKey = tuple[str, tuple[tuple[str, str], ...]]

HTTP_REQUESTS = "moorage_http_requests_total"
HTTP_LATENCY = "moorage_http_request_duration_seconds"


def parse(text: str) -> dict[SampleKey, float]:
    """Every sample of a text exposition, ``_created`` timestamps left out."""
    found: dict[SampleKey, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def scrape(url: str, token: str | None = "admin",
           headers: Mapping[str, str] | None = None) -> dict[SampleKey, float]:
    """GET /metrics of ``url`` on a connection of its own (so that a server's workers
    take turns), parsed."""
    sent = {"x-auth-token": token} if token is not None else {}
    response = requests.get(url + "/metrics", headers={**sent, **(headers or {})},
                            timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse(response.text)


def changes(before: Mapping[SampleKey, float], after: Mapping[SampleKey, float],
            name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples named ``name`` whose value moved between two scrapes, by labels."""
    return {labels: value - before.get((sample, labels), 0.0)
            for (sample, labels), value in after.items()
            if sample == name and value != before.get((sample, labels), 0.0)}


def labels(**values: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(values.items()))


def requests_key(route: str, method: str, status: int) -> tuple[tuple[str, str], ...]:
    return labels(route=route, method=method, status=str(status))


def timed_by_route(made: Mapping[tuple[tuple[str, str], ...], int]
                   ) -> Counter[tuple[tuple[str, str], ...]]:
    """The latency histogram's counts the requests ``made`` (keyed as the requests
    counter is) should leave: one observation per request, by route and method."""
    timed: Counter[tuple[tuple[str, str], ...]] = Counter()
    for key, count in made.items():
        found = dict(key)
        timed[labels(route=found["route"], method=found["method"])] += count
    return timed
