"""The compute API client takes its root or its endpoint as a catalog names it."""

from __future__ import annotations

import pytest

from moorage.api.client import ComputeApiClient, service_root


@pytest.mark.parametrize(("given", "root"), [
    ("http://10.0.0.5:8774", "http://10.0.0.5:8774"),
    ("http://10.0.0.5:8774/", "http://10.0.0.5:8774"),
    ("http://10.0.0.5:8774/v2.1", "http://10.0.0.5:8774"),
    ("http://10.0.0.5:8774/v2.1/", "http://10.0.0.5:8774"),
    ("https://cloud.example.com/compute/v2.1", "https://cloud.example.com/compute"),
    # The legacy endpoint, with the project in it.
    ("http://10.0.0.5:8774/v2/0123456789abcdef0123456789abcdef", "http://10.0.0.5:8774"),
    ("http://10.0.0.5:8774/v2", "http://10.0.0.5:8774"),
    # Not a version: kept as it is.
    ("https://cloud.example.com/v2.1x", "https://cloud.example.com/v2.1x"),
    ("https://cloud.example.com/v20", "https://cloud.example.com/v20"),
])
def test_the_root_of_a_compute_endpoint(given: str, root: str) -> None:
    assert service_root(given) == root
    assert ComputeApiClient(given, "admin").url == root
