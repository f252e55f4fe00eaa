"""The conductor's counters on the compute API's /metrics: a boot rescheduled twice
before it is ACTIVE, a boot that no host can take (NoValidHost), and the requests
that made them, labelled by route template."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import requests

from tests.functional.servers.conftest import fake_host
from tests.prometheus import HTTP_REQUESTS, changes, labels, requests_key, scrape

E1000 = "COMPUTE_NET_VIF_MODEL_E1000"
VIRTIO = "COMPUTE_NET_VIF_MODEL_VIRTIO"
SGX = "HW_CPU_X86_SGX"

# The compute API paths this test calls -> their route templates.
TEMPLATES = (
    (re.compile(r"^/v2\.1/servers/[0-9a-f-]{36}$"), "/v2.1/servers/{server_id}"),
    (re.compile(r"^/v2\.1/flavors/[^/]+/os-extra_specs$"),
     "/v2.1/flavors/{flavor_id}/os-extra_specs"),
    (re.compile(r"^/v2\.1/(flavors|images|servers)$"), None),
    (re.compile(r"^/image/v2/images$"), None),
)


def _template(path: str) -> str:
    for pattern, template in TEMPLATES:
        if pattern.match(path):
            return template or path
    raise AssertionError(f"no template for {path} in this test")


def test_boots_reschedules_and_no_valid_host(make_cloud: Any) -> None:
    # The big hosts refuse an e1000 guest at spawn; the weighers try them first.
    cloud = make_cloud([
        fake_host("big1", traits=[VIRTIO], unsupported=[E1000], memory_mb=65536),
        fake_host("big2", traits=[VIRTIO], unsupported=[E1000], memory_mb=65536),
        fake_host("small", traits=[VIRTIO, E1000], memory_mb=16384),
    ], scheduler={"image_metadata_prefilter": False, "max_attempts": 3})
    # Every request this test makes, as the server answered it.
    made: Counter[tuple[tuple[str, str], ...]] = Counter()

    def record(response: requests.Response, *args: Any, **kwargs: Any) -> None:
        path = requests.utils.urlparse(response.url).path
        made[requests_key(_template(path), response.request.method or "",
                          response.status_code)] += 1

    before = scrape(cloud.api_url)
    cloud.http.hooks["response"].append(record)
    flavor = cloud.flavor("small")
    rescheduled = cloud.boot_and_wait(flavor, cloud.image("e1000", "raw",
                                                          {"hw_vif_model": "e1000"}))
    assert rescheduled["status"] == "ACTIVE", rescheduled.get("fault")
    assert cloud.spawn_attempts(rescheduled)[-1] == "small"
    refused = cloud.boot_and_wait(cloud.flavor("sgx", extra_specs={f"trait:{SGX}": "required"}),
                                  cloud.image("plain", "raw"))
    assert refused["status"] == "ERROR"
    assert refused["fault"]["message"].startswith("No valid host was found.")
    after = scrape(cloud.api_url)

    # The conductor's counters are this process's (other tests' clouds count there too).
    assert changes(before, after, "moorage_boots_total") == {
        labels(outcome="active"): 1, labels(outcome="error"): 1}
    assert changes(before, after, "moorage_reschedules_total") == {(): 2}
    no_valid_host = changes(before, after, "moorage_no_valid_host_total")
    # Labelled by the constraint that decided it: the trait no host has.
    assert no_valid_host == {labels(constraint=SGX): 1}, no_valid_host
    # The requests counter is this API's own; agents' heartbeats go on meanwhile.
    made[requests_key("/metrics", "GET", 200)] += 1
    counted = {key: n for key, n in changes(before, after, HTTP_REQUESTS).items()
               if not dict(key)["route"].startswith("/internal/")}
    assert counted == made
    assert made[requests_key("/v2.1/servers", "POST", 202)] == 2
