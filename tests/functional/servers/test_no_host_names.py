"""No response to a user without the host policy names a compute host.

A user's servers in every state a user can bring them to (ACTIVE after a reschedule,
ERROR after every host refused, a rebuild refused on its host, a resize with no host
left) and then every GET route of the compute API, every action the user may call,
and the dry run: the host names (chosen so they cannot occur by chance) appear in no
body and no header. The admin reads them, so the walk is known to look where they
would be.
"""

from __future__ import annotations

import re
from typing import Any

from moorage.api.routes import ROUTES
from tests.functional.servers.conftest import fake_host

USER = "alice:project-a"
VMXNET3 = "COMPUTE_NET_VIF_MODEL_VMXNET3"
VIRTIO = "COMPUTE_NET_VIF_MODEL_VIRTIO"
MARK = "hostzeta"
HOSTS = (f"{MARK}-refuses", f"{MARK}-takes")


def _leaks(response: Any) -> list[str]:
    """Where a host name shows in an answer: its body or its headers."""
    text = response.text + "\n".join(f"{k}: {v}" for k, v in response.headers.items())
    return [text[max(0, m.start() - 80):m.end() + 40] for m in re.finditer(MARK, text)]


def test_no_answer_to_a_user_names_a_host(make_cloud: Any) -> None:
    # Prefilters off: the vmxnet3 image is tried on the refusing host first or after.
    cloud = make_cloud([
        fake_host(HOSTS[0], traits=[VIRTIO], unsupported=[VMXNET3], memory_mb=65536),
        fake_host(HOSTS[1], traits=[VIRTIO, VMXNET3], memory_mb=4096),
    ], scheduler={"max_attempts": 2})
    small = cloud.flavor("small")
    huge = cloud.flavor("huge", ram=1_000_000)
    plain = cloud.image("plain", "raw")
    vmx = cloud.image("vmx", "raw", {"hw_vif_model": "vmxnet3"})
    needs = cloud.image("needs", "raw", {"trait:CUSTOM_NOWHERE": "required"})

    def boot(name: str, image: str, flavor: str = small) -> dict[str, Any]:
        response = cloud.call("POST", "/servers", {"server": {"networks": "none",
            "name": name, "flavorRef": flavor, "imageRef": image}}, token=USER)
        assert response.status_code == 202, response.text
        assert not _leaks(response)
        return cloud.wait(response.json()["server"]["id"])

    active = boot("active", vmx)
    assert active["status"] == "ACTIVE"
    failed = boot("failed", needs)  # no host: NoValidHost
    assert failed["status"] == "ERROR"
    # Both hosts refuse: MaxRetriesExceeded naming both to the admin.
    cloud.ok("PUT", f"/os-services/{_service_id(cloud, HOSTS[1])}",
             {"status": "disabled", "disabled_reason": "test"})
    refused = boot("refused", vmx)
    assert refused["status"] == "ERROR" and HOSTS[0] in refused["fault"]["message"]
    cloud.ok("PUT", f"/os-services/{_service_id(cloud, HOSTS[1])}", {"status": "enabled"})

    # Actions a user may take, refused or failing on the host.
    other = boot("other", plain)
    answers = [
        cloud.call("POST", f"/servers/{other['id']}/action",
                   {"rebuild": {"imageRef": needs}}, token=USER),
        cloud.call("POST", f"/servers/{active['id']}/action",
                   {"resize": {"flavorRef": huge}}, token=USER),
        cloud.call("POST", "/scheduler/plan", {"server": {
            "name": "p", "flavorRef": small, "imageRef": vmx}}, token=USER),
        cloud.call("POST", "/scheduler/plan", {"server": {
            "name": "p", "flavorRef": small, "imageRef": needs}}, token=USER),
    ]
    for server in (other, active):
        cloud.wait(server["id"])

    ids = {"server_id": active["id"], "flavor_id": small, "image_id": vmx,
           "service_id": "1", "hypervisor_id": "1", "hypervisor_hostname_pattern": "h",
           "aggregate_id": "1", "key": "x", "tag": "x", "keypair_name": "x",
           "server_group_id": "x", "request_id": "req-x", "project_id": "p",
           "tenant_id": "p", "class_name": "default", "host": "x", "network": "x",
           "migration_id": "1"}
    admin_saw = False
    for template, methods in ROUTES.items():
        if "GET" not in methods or not template.startswith(("/v2.1", "/openapi", "/")):
            continue
        path = template.format(**ids)
        prefix_free = path.removeprefix("/v2.1")
        for server in (active, failed, refused, other):
            concrete = prefix_free.replace(active["id"], server["id"])
            if path.startswith("/v2.1"):
                answers.append(cloud.call("GET", concrete, token=USER))
                admin_saw = admin_saw or bool(_leaks(cloud.call("GET", concrete)))
            else:
                answers.append(cloud.http.get(cloud.api_url + path,
                                              headers={"X-Auth-Token": USER}, timeout=60))
    assert admin_saw, "the admin's view names hosts: the walk looks where they are"
    for response in answers:
        assert response.status_code < 500, (response.request.url, response.text)
        assert not _leaks(response), (response.request.method, response.request.url,
                                      _leaks(response))
    # The owner still reads why: counts and reasons.
    shown = cloud.call("GET", f"/servers/{refused['id']}", token=USER).json()["server"]
    assert shown["fault"]["message"].startswith("Exceeded maximum number of retries.")
    assert "UnsupportedHardware" in shown["fault"]["message"]


def _service_id(cloud: Any, host: str) -> str:
    services = cloud.ok("GET", f"/os-services?host={host}")["services"]
    return str(services[0]["id"])
