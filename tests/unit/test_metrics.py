"""moorage.metrics: bounded labels, rendering, and the workers' shared directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from moorage.metrics import MULTIPROCESS_ENV, HttpMetrics, multiprocess_directory
from tests.prometheus import HTTP_LATENCY, HTTP_REQUESTS, labels, parse, requests_key


def test_observe_counts_by_route_method_and_status() -> None:
    metrics = HttpMetrics()
    for status in (200, 200, 404):
        metrics.observe("/resource_providers/{uuid}", "GET", status, 0.002)
    metrics.observe("unmatched", "BREW", 405, 0.0001)
    metrics.observe("unmatched", "SMELL", 405, 0.0001)
    found = parse(metrics.render().decode())
    assert {k: v for k, v in found.items() if k[0] == HTTP_REQUESTS} == {
        (HTTP_REQUESTS, requests_key("/resource_providers/{uuid}", "GET", 200)): 2,
        (HTTP_REQUESTS, requests_key("/resource_providers/{uuid}", "GET", 404)): 1,
        # Methods outside HTTP's usual few share one label: clients cannot add series.
        (HTTP_REQUESTS, requests_key("unmatched", "other", 405)): 2,
    }
    route = labels(route="/resource_providers/{uuid}", method="GET")
    assert found[(HTTP_LATENCY + "_count", route)] == 3
    assert found[(HTTP_LATENCY + "_bucket", tuple(sorted((*route, ("le", "0.001")))))] == 0
    assert found[(HTTP_LATENCY + "_bucket", tuple(sorted((*route, ("le", "0.0025")))))] == 3
    assert found[(HTTP_LATENCY + "_sum", route)] == pytest.approx(0.006)


def test_applications_count_apart() -> None:
    one, other = HttpMetrics(), HttpMetrics()
    one.observe("/", "GET", 200, 0.001)
    assert (HTTP_REQUESTS, requests_key("/", "GET", 200)) not in parse(
        other.render().decode())


def test_a_fresh_directory_is_removed_after(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MULTIPROCESS_ENV, raising=False)
    with multiprocess_directory("placement") as directory:
        assert os.environ[MULTIPROCESS_ENV] == str(directory)
        assert directory.name.startswith("moorage-placement-metrics-")
        (directory / "counter_1.db").write_bytes(b"")
    assert MULTIPROCESS_ENV not in os.environ
    assert not directory.exists()


def test_an_operators_directory_is_emptied_and_kept(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    given = tmp_path / "prometheus"
    given.mkdir()
    (given / "counter_123.db").write_bytes(b"stale")
    (given / "notes.txt").write_text("not ours")
    monkeypatch.setenv(MULTIPROCESS_ENV, str(given))
    with multiprocess_directory("api") as directory:
        assert directory == given
        assert sorted(p.name for p in given.iterdir()) == ["notes.txt"]
    assert os.environ[MULTIPROCESS_ENV] == str(given)
    assert given.exists()
