"""The services as separate processes talking HTTP, as deployed: placement, the
compute API (``moorage api serve``) and two compute agents (``moorage compute run``),
with a service token shared by the API and the agents."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from moorage.placement.launcher import free_port, write_config

TOKEN = "s3cret-service-token"


def _wait_http(url: str, process: subprocess.Popen[str], log: Path,
               timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            requests.get(url, timeout=2)
            return
        except requests.ConnectionError:
            if process.poll() is not None:
                raise AssertionError(f"{process.args} exited: {log.read_text()}") from None
            assert time.monotonic() < deadline, f"{url} never answered"
            time.sleep(0.2)


@pytest.fixture
def processes(placement_server: Any, tmp_path: Path) -> Iterator[str]:
    api_port = free_port()
    common = {"DEFAULT": {"service_token": TOKEN, "report_interval": 1},
              "placement": {"endpoint_override": placement_server.url},
              "api": {"auth_strategy": "noauth2"}}
    api_conf = write_config(tmp_path / "api.conf", {
        **common, "database": {"connection": f"sqlite:///{tmp_path / 'api.sqlite'}"}})
    started: list[subprocess.Popen[str]] = []
    try:
        # Its log (a line per request) to a file: a pipe nobody reads would fill up.
        api_log = tmp_path / "api.log"
        with api_log.open("w") as log:
            api = subprocess.Popen([sys.executable, "-m", "moorage", "api", "serve",
                                    "--config-file", str(api_conf), "--port", str(api_port)],
                                   stdout=subprocess.DEVNULL, stderr=log, text=True)
        started.append(api)
        api_url = f"http://127.0.0.1:{api_port}"
        _wait_http(api_url, api, api_log)
        for host, vif in (("kvm1", "COMPUTE_NET_VIF_MODEL_E1000"),
                          ("kvm2", "COMPUTE_NET_VIF_MODEL_VIRTIO")):
            conf = write_config(tmp_path / f"{host}.conf", {
                **common, "DEFAULT": {**common["DEFAULT"], "host": host,
                                      "compute_driver": "fake"},
                "fake_driver": {"traits": vif, "supported_image_types": "raw"}})
            started.append(subprocess.Popen(
                [sys.executable, "-m", "moorage", "compute", "run", "--config-file",
                 str(conf), "--port", "0", "--api-url", api_url],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True))
        yield api_url
    finally:
        for process in reversed(started):
            process.terminate()
            process.wait(timeout=30)


def test_boot_across_processes(processes: str) -> None:
    api = processes + "/v2.1"
    session = requests.Session()
    session.headers["X-Auth-Token"] = "admin"
    deadline = time.monotonic() + 60
    while {s["host"] for s in session.get(api + "/os-services").json()["services"]
           if s["state"] == "up"} != {"kvm1", "kvm2"}:
        assert time.monotonic() < deadline, "the agents never registered"
        time.sleep(0.2)
    # The registration route refuses a caller without the service token.
    forged = requests.put(processes + "/internal/services/evil", json={
        "binary": "nova-compute", "driver": "fake", "nodes": ["evil"],
        "agent_url": "http://127.0.0.1:1", "supported_instances": [],
        "hypervisor_version": 1, "version": "x"}, timeout=10)
    assert forged.status_code == 401
    flavor = session.post(api + "/flavors", json={"flavor": {
        "name": "small", "vcpus": 1, "ram": 256, "disk": 1}}).json()["flavor"]["id"]
    image = session.post(api + "/images", json={
        "name": "img", "disk_format": "raw", "container_format": "bare",
        "properties": {"trait:COMPUTE_NET_VIF_MODEL_E1000": "required"}}).json()["id"]
    uuid = session.post(api + "/servers", json={"server": {
        "name": "vm", "flavorRef": flavor, "imageRef": image}}).json()["server"]["id"]
    while True:
        server = session.get(f"{api}/servers/{uuid}").json()["server"]
        if server["status"] != "BUILD":
            break
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "kvm1"
    assert session.delete(f"{api}/servers/{uuid}").status_code == 204
    while session.get(f"{api}/servers/{uuid}").status_code != 404:
        assert time.monotonic() < deadline
        time.sleep(0.1)
