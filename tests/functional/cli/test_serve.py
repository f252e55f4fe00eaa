"""``moorage serve``: the whole cloud in one process, driven as a user drives it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from moorage.embedded import parse_host


def test_parse_host() -> None:
    plan = parse_host("kvm1=fake,fake_driver.traits=CUSTOM_A+CUSTOM_B,fake_driver.vcpus=8")
    assert (plan.name, plan.driver) == ("kvm1", "fake")
    assert plan.overrides() == [("fake_driver", "traits", ["CUSTOM_A", "CUSTOM_B"]),
                                ("fake_driver", "vcpus", "8")]
    with pytest.raises(ValueError, match="NAME=DRIVER"):
        parse_host("kvm1")
    with pytest.raises(ValueError, match=r"GROUP\.OPTION=VALUE"):
        parse_host("kvm1=fake,vcpus=8")


def test_serve_runs_a_cloud_until_terminated(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "moorage", "serve", "--port", "0", "--placement-port", "0",
         "--prefilters", "--data-dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        lines = []
        while not any(line.startswith("Ctrl-C") for line in lines):
            line = process.stdout.readline()
            assert line, f"moorage serve exited early: {''.join(lines)}"
            lines.append(line)
        guide = "".join(lines)
        found = re.search(r"compute API\s+(http://127\.0\.0\.1:\d+)", guide)
        assert found, guide
        for host in ("kvm-q35", "kvm-virtio", "ceph", "vcenter"):
            assert host in guide
        api = found.group(1) + "/v2.1"
        session = requests.Session()
        session.headers.update({"X-Auth-Token": "admin", "Moorage-Additions": "1"})
        flavor = session.post(api + "/flavors", json={"flavor": {
            "name": "small", "vcpus": 1, "ram": 512, "disk": 1}}).json()["flavor"]["id"]
        image = session.post(api + "/images", json={
            "name": "e1000", "disk_format": "raw", "container_format": "bare",
            "properties": {"hw_vif_model": "e1000"}}).json()["id"]
        created = session.post(api + "/servers", json={"server": {
            "name": "vm", "flavorRef": flavor, "imageRef": image}})
        assert created.status_code == 202, created.text
        uuid = created.json()["server"]["id"]
        deadline = time.monotonic() + 60
        while True:
            server = session.get(f"{api}/servers/{uuid}").json()["server"]
            if server["status"] != "BUILD":
                break
            assert time.monotonic() < deadline
            time.sleep(0.1)
        # --prefilters: the e1000 guest goes straight to the one host that has e1000.
        assert server["status"] == "ACTIVE", server.get("fault")
        assert server["OS-EXT-SRV-ATTR:host"] == "kvm-q35"
        assert [a["host"] for a in server["moorage:scheduling"]["attempts"]] == ["kvm-q35"]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    assert (tmp_path / "compute-api.sqlite").exists()


def test_serve_rejects_a_malformed_host(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "moorage", "serve", "--host", "broken"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "moorage serve: --host 'broken': expected NAME=DRIVER" in result.stderr
    assert "Traceback" not in result.stderr
