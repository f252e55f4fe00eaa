"""What a member reads tells nothing about single hosts: no host identity, no
hypervisor, emulator or machine-type version, no count of hosts below ``[api]
capability_host_floor``, and no capacity figure two answers can be differenced into
one host's.

A cloud of four hosts (one a libvirt host simulated from this project's QEMU 7.2
recordings, whose refusals name QEMU's version and its versioned machine type), the
floor at 3 so that every count of one or two hosts must be hidden. A member brings
servers into every state it can (ACTIVE, NoValidHost with counts of one host,
MaxRetriesExceeded after the libvirt host refused with its own words), uploads images
only one host can boot, asks for plans, then every GET route of the compute API is
walked with the real ids (instance actions included) and every JSON value is read.
The admin's view of the same routes shows the names, versions and small counts: the
walk is known to look where they would be.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import requests

from moorage.api.routes import ROUTES
from moorage.run.description import Capacity, HostGroup
from moorage.run.libvirt_hosts import libvirt_plan
from tests.functional.servers.conftest import Cloud, HostSpec, fake_host

USER = "alice:project-a"
FLOOR = 3
MARK = "hostzeta"
KVM = f"{MARK}-kvm"
RARE = f"{MARK}-rare"
VIRTIO = "COMPUTE_NET_VIF_MODEL_VIRTIO"
E1000 = "COMPUTE_NET_VIF_MODEL_E1000"
VMXNET3 = "COMPUTE_NET_VIF_MODEL_VMXNET3"
IGB = "COMPUTE_NET_VIF_MODEL_IGB"
CUSTOM_RARE = "CUSTOM_ONLY_ONE"
# On the three fake hosts, not the libvirt one: its sum and the sum of a trait all
# four offer differ by exactly the libvirt host's free capacity.
AVX512F = "HW_CPU_X86_AVX512F"
RESOURCES = ("VCPU", "MEMORY_MB", "DISK_GB")
# QEMU 7.2 and libvirt 9.0 of the recordings, their versioned machine types, the
# emulator's name: none may reach a member.
VERSIONS = re.compile(r"pc-(?:q35|i440fx)-\d|qemu-system|(?<![\d.])7\.2(?!\d)|"
                      r"(?<![\d.])9\.0\.\d|libvirt \d|QEMU \d", re.IGNORECASE)
# Fields that count hosts, wherever they are.
COUNT_KEYS = frozenset({"hosts", "excluded", "of", "satisfied", "candidates", "passing",
                        "hosts_passing_filters", "remaining"})
COUNT_MAPS = frozenset({"reasons", "with"})


def _cloud(make_cloud: Any) -> Cloud:
    recorded = libvirt_plan(HostGroup(name="kvm", count=1, driver="libvirt",
                                      virt_type="kvm", machine_type="q35",
                                      capacity=Capacity(vcpus=16, memory_mb=32768,
                                                        disk_gb=400)), KVM, False)
    cloud: Cloud = make_cloud([
        HostSpec(KVM, recorded.driver, dict(recorded.options)),
        # Every host refuses igb: the libvirt host in QEMU's words, the fakes by report.
        fake_host(f"{MARK}-a", traits=[VIRTIO, E1000, AVX512F], unsupported=[IGB], vcpus=13,
                  memory_mb=13000),
        fake_host(f"{MARK}-b", traits=[VIRTIO, E1000, VMXNET3, AVX512F], unsupported=[IGB],
                  vcpus=17, memory_mb=17000),
        # The one host with CUSTOM_ONLY_ONE, and without vmxnet3.
        fake_host(RARE, traits=[VIRTIO, E1000, CUSTOM_RARE, AVX512F], unsupported=[IGB], vcpus=19,
                  memory_mb=19000),
    ], scheduler={"max_attempts": 4})
    cloud.state.conf.set_override("capability_host_floor", FLOOR, group="api")
    cloud.state.conf.set_override("capability_cache_seconds", 0, group="api")
    return cloud


def _strings_and_counts(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """Every (key, leaf) of a JSON document."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k in COUNT_MAPS and isinstance(v, dict):
                for inner in v.values():
                    yield k, inner
            else:
                yield from _strings_and_counts(v, k)
    elif isinstance(value, list):
        for item in value:
            yield from _strings_and_counts(item, key)
    else:
        yield key, value


# "excludes 2 of 4 hosts", "(1 and 1 hosts have each)", "1 host satisfies".
_EXCLUDES = re.compile(r"excludes (\d+) of (\d+) hosts")
_HOST_COUNTS = re.compile(r"(?<![\w.-])(\d+)((?: and \d+)*) (?:more )?hosts?\b")


def _small_counts(text: str) -> list[str]:
    """The counts of hosts below the floor that a sentence states or implies."""
    found = []
    for match in _EXCLUDES.finditer(text):
        excluded, of = int(match[1]), int(match[2])
        if 0 < excluded < FLOOR or 0 < of - excluded < FLOOR or of < FLOOR:
            found.append(match[0])
    for match in _HOST_COUNTS.finditer(text):
        numbers = [int(match[1]), *(int(n) for n in re.findall(r"\d+", match[2]))]
        if any(n < FLOOR for n in numbers):
            found.append(match[0])
    if "the only host" in text:
        found.append("the only host")
    return found


def problems(response: requests.Response) -> list[str]:
    """What a member must not read in ``response``."""
    found: list[str] = []
    text = response.text + "\n".join(f"{k}: {v}" for k, v in response.headers.items())
    found += [f"host name: {text[max(0, m.start() - 60):m.end() + 30]}"
              for m in re.finditer(MARK, text)]
    found += [f"version: {text[max(0, m.start() - 60):m.end() + 30]}"
              for m in VERSIONS.finditer(text)]
    if "json" not in response.headers.get("content-type", ""):
        return found
    for key, leaf in _strings_and_counts(response.json()):
        if isinstance(leaf, str):
            found += [f"count in words: {c!r} in {leaf!r}" for c in _small_counts(leaf)]
        elif (key in COUNT_KEYS or key in COUNT_MAPS) and isinstance(leaf, int) \
                and not isinstance(leaf, bool) and 0 < leaf < FLOOR:
            found.append(f"count {key}={leaf}")
    return found


def test_a_member_reads_nothing_about_single_hosts(make_cloud: Any) -> None:
    cloud = _cloud(make_cloud)
    small = cloud.flavor("small", vcpus=1, ram=256)
    plain = cloud.image("plain", "raw")
    igb = cloud.image("igb", "raw", {"hw_vif_model": "igb"})
    rare = cloud.image("rare", "raw", {f"trait:{CUSTOM_RARE}": "required"})
    apart = cloud.image("apart", "raw", {f"trait:{CUSTOM_RARE}": "required",
                                         f"trait:{VMXNET3}": "required"})
    # The legacy filter compares the hosts' versions (QEMU's 7.2.22 on the libvirt host).
    newer = cloud.image("newer", "raw", {"hw_architecture": "x86_64",
                                         "img_hv_requested_version": ">=9.0"})
    answers: list[requests.Response] = []

    def member(method: str, path: str, body: Any = None) -> requests.Response:
        response = cloud.call(method, path, body, token=USER)
        answers.append(response)
        return response

    def boot(name: str, image: str) -> dict[str, Any]:
        response = member("POST", "/servers", {"server": {
            "networks": "none", "name": name, "flavorRef": small, "imageRef": image}})
        assert response.status_code == 202, response.text
        return cloud.wait(response.json()["server"]["id"])

    active = boot("active", plain)
    on_rare = boot("on-rare", rare)
    apart_failed = boot("apart", apart)       # NoValidHost: 1 host has each trait
    refused = boot("refused", igb)            # MaxRetriesExceeded, QEMU's words included
    too_old = boot("newer", newer)            # the filter refused every host
    assert too_old["status"] == "ERROR", too_old
    assert active["status"] == "ACTIVE" and on_rare["status"] == "ACTIVE"
    assert apart_failed["status"] == "ERROR" and refused["status"] == "ERROR"
    # The admin reads what the member may not: the walk looks in the right places.
    admin_refused = cloud.call("GET", f"/servers/{refused['id']}").text
    assert MARK in admin_refused and VERSIONS.search(admin_refused), admin_refused
    admin_apart = cloud.call("GET", f"/servers/{apart_failed['id']}").text
    assert _small_counts(admin_apart), admin_apart

    # Images a member makes that one host (or none) can boot: their admission.
    for properties in ({f"trait:{CUSTOM_RARE}": "required"},
                       {f"trait:{CUSTOM_RARE}": "required", "hw_vif_model": "vmxnet3"},
                       {"hw_vif_model": "igb"}):
        made = member("POST", "/images", {"name": "mine", "disk_format": "raw",
                                          "container_format": "bare",
                                          "properties": properties})
        assert made.status_code in (200, 201), made.text
        assert "moorage:bootable" in made.json(), made.text
        member("PATCH", f"/images/{made.json()['id']}",
               {"properties": {"hw_disk_bus": "virtio"}})
        member("POST", f"/images/{made.json()['id']}/metadata",
               {"metadata": {"hw_video_model": "vga"}})
    # The catalogue's free sums: no difference of two is one host's free capacity.
    shown = member("GET", "/capabilities").json()["capabilities"]
    sums = {t["trait"]: t["free"] for f in shown["families"] for t in f["traits"]}
    one_host = [free for free in (cloud.free(p["uuid"]) for p in cloud.placement.request(
        "GET", "/resource_providers")["resource_providers"]) if free["VCPU"]]
    assert len(one_host) == 4
    for first in sums.values():
        for second in sums.values():
            difference = {rc: first[rc] - second[rc] for rc in RESOURCES}
            assert difference not in one_host, (difference, sums)
    # Plans: one host only, none together, refused by QEMU.
    for image in (rare, apart, igb, plain, newer):
        assert member("POST", "/scheduler/plan", {"server": {
            "name": "p", "flavorRef": small, "imageRef": image}}).status_code == 200
    # A resize no host has room for, and one that moves.
    huge = cloud.flavor("huge", vcpus=18, ram=256)
    member("POST", f"/servers/{active['id']}/action", {"resize": {"flavorRef": huge}})
    cloud.wait(active["id"])

    servers = (active, on_rare, apart_failed, refused, too_old)
    request_ids = {server["id"]: [a["request_id"] for a in cloud.ok(
        "GET", f"/servers/{server['id']}/os-instance-actions")["instanceActions"]]
        for server in servers}
    ids = {"server_id": active["id"], "flavor_id": small, "image_id": igb,
           "service_id": "1", "hypervisor_id": "1", "hypervisor_hostname_pattern": "h",
           "aggregate_id": "1", "key": "x", "tag": "x", "keypair_name": "x",
           "server_group_id": "x", "request_id": "req-x", "project_id": "project-a",
           "tenant_id": "project-a", "class_name": "default", "host": KVM,
           "network": "x", "migration_id": "1"}
    for template, methods in ROUTES.items():
        if "GET" not in methods:
            continue
        for server in servers:
            for request_id in request_ids[server["id"]] if "{request_id}" in template \
                    else ["req-x"]:
                path = template.format(**{**ids, "server_id": server["id"],
                                          "request_id": request_id})
                if path.startswith("/v2.1"):
                    member("GET", path.removeprefix("/v2.1"))
                else:
                    answers.append(cloud.http.get(cloud.api_url + path, timeout=60,
                                                  headers={"X-Auth-Token": USER}))
    assert len(answers) > 200
    found = {}
    for response in answers:
        assert response.status_code < 500, (response.request.url, response.text)
        wrong = problems(response)
        if wrong:
            found[f"{response.request.method} {response.request.url}"] = wrong
    assert not found, json.dumps(found, indent=1)

    # The owner still learns why, in words that need no host.
    fault = cloud.call("GET", f"/servers/{refused['id']}", token=USER).json()["server"]
    assert "hw_vif_model=igb" in fault["fault"]["message"], fault["fault"]
    fault = cloud.call("GET", f"/servers/{apart_failed['id']}", token=USER).json()["server"]
    assert CUSTOM_RARE in fault["fault"]["message"], fault["fault"]
    assert f"fewer than {FLOOR}" in fault["fault"]["message"], fault["fault"]
