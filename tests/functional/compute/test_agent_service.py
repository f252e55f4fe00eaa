"""Compute agents running in this process with their real HTTP API, against a real
placement server: spawning, refusing, destroying, disabling, the service token, and
the heartbeat to a stand-in for the compute API.

The compute API's internal route is served here by ``StandInComputeAPI``, a tiny
HTTP server that records the heartbeats and answers what the test scripts; the
real route is tested with the compute API.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from moorage.compute.client import AgentUnreachable, SpawnFailed
from moorage.compute.launcher import RunningAgent, agent_config, start_agent
from moorage.compute.remote import HTTPAgentClient, LocalAgentClient
from moorage.compute.wire import spawn_request
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.placement.launcher import free_port
from moorage.placement.provider_names import provider_uuid
from moorage.virt.driver import ComputeDriver, Guest
from moorage.virt.fake import FakeDriver, FakeHost, RunRule
from moorage.virt.libvirt import host
from moorage.virt.vmware.driver import VMwareDriver
from tests.conftest import PlacementClient as TestClient

DISABLED = "COMPUTE_STATUS_DISABLED"
# The agents here expect this token (as the conductor sends it) unless a test says
# otherwise; without one, their writes would be refused.
TOKEN = "agent-test-token"
HEADERS = {"X-Service-Token": TOKEN}
FLAVOR = Flavor("m1.small", 1, 512, root_gb=1)
NO_E1000 = RunRule("hw_vif_model=e1000",
                   lambda g: "this host has no e1000 NIC"
                   if g.image.properties.hw_vif_model == "e1000" else None)


def _guest(node: str, disk_format: str = "raw", **properties: str) -> Guest:
    return Guest(str(uuid.uuid4()), "vm", node, FLAVOR,
                 Image.create("img-" + disk_format, "test image", disk_format, "bare",
                              properties))


@pytest.fixture
def agents() -> Iterator[list[RunningAgent]]:
    """Agents a test starts; stopped afterwards whatever happens."""
    started: list[RunningAgent] = []
    yield started
    for running in started:
        running.stop()


def _start(agents: list[RunningAgent], placement_url: str, host: str,
           driver: Callable[[Any], ComputeDriver] | None = None, *,
           overrides: tuple[tuple[str, str, object], ...] = (),
           api_url: str | None = None) -> RunningAgent:
    conf = agent_config(host, "fake", placement_url=placement_url,
                        overrides=(("DEFAULT", "service_token", TOKEN), *overrides))
    made = driver(conf) if driver else FakeDriver(conf, FakeHost(nodes=(host,),
                                                                 rules=(NO_E1000,)))
    running = start_agent(conf, made, port=0, api_url=api_url)
    agents.append(running)
    return running


def _listed(agent_url: str) -> Any:
    """What ``GET /guests`` answers, with the token."""
    return requests.get(agent_url + "/guests", headers=HEADERS, timeout=10).json()


def _traits(placement: TestClient, node: str) -> set[str]:
    return set(placement.get(f"/resource_providers/{provider_uuid(node)}/traits",
                             expect=200).json()["traits"])


def test_spawn_refuse_destroy_over_http(placement: TestClient,
                                        agents: list[RunningAgent]) -> None:
    running = _start(agents, placement.url, "h1")
    info = requests.get(running.url + "/", headers=HEADERS, timeout=5).json()
    assert {k: info[k] for k in ("host", "driver", "nodes")} == {
        "host": "h1", "driver": "fake", "nodes": ["h1"]}
    client = HTTPAgentClient({"h1": running.url}.__getitem__, TOKEN, 10)

    guest = _guest("h1")
    client.spawn("h1", guest)
    assert _listed(running.url) == {"guests": [guest.uuid]}

    with pytest.raises(SpawnFailed) as caught:
        client.spawn("h1", _guest("h1", hw_vif_model="e1000"))
    assert (caught.value.host, caught.value.kind, caught.value.feature,
            caught.value.reschedule) == ("h1", "UnsupportedHardware", "hw_vif_model=e1000",
                                         True)
    assert "no e1000 NIC" in caught.value.message
    with pytest.raises(SpawnFailed) as caught:
        client.spawn("h1", _guest("h1", "vhd"))
    assert caught.value.feature == "disk_format=vhd"

    client.destroy("h1", guest.uuid)
    client.destroy("h1", guest.uuid)  # not there any more: still fine
    assert _listed(running.url) == {"guests": []}
    # A simulated host tells no uptime: 501 on the wire, None to the client.
    answer = requests.get(running.url + "/host/uptime", headers=HEADERS, timeout=5)
    assert answer.status_code == 501 and "uptime" in answer.json()["error"]["message"]
    assert client.host_uptime("h1") is None


def test_the_wire_answers_409_and_400_as_the_contract_says(
        placement: TestClient, agents: list[RunningAgent]) -> None:
    running = _start(agents, placement.url, "h1")
    body = spawn_request(_guest("h1", "vhd"))
    refused = requests.post(running.url + "/guests", json=body, headers=HEADERS, timeout=5)
    assert refused.status_code == 409
    assert refused.json()["spawn_failed"]["kind"] == "UnsupportedHardware"
    assert set(refused.json()["spawn_failed"]) == {"kind", "message", "feature", "reschedule"}
    body["guest"]["image"]["properties"] = {"hw_disk_bus": "floppy-ish"}
    bad = requests.post(running.url + "/guests", json=body, headers=HEADERS, timeout=5)
    assert bad.status_code == 400
    assert bad.json()["error"]["message"].startswith(
        "guest.image.hw_disk_bus: 'floppy-ish' is not valid; allowed: ")
    assert _listed(running.url) == {"guests": []}


def test_set_disabled_reaches_placement_at_once(placement: TestClient,
                                                agents: list[RunningAgent]) -> None:
    running = _start(agents, placement.url, "h1")
    client = HTTPAgentClient(lambda host: running.url, TOKEN, 10)
    assert DISABLED not in _traits(placement, "h1")
    client.set_disabled("h1", True)
    assert DISABLED in _traits(placement, "h1")
    answer = requests.put(running.url + "/service", json={"disabled": False},
                          headers=HEADERS, timeout=5)
    assert answer.json() == {"service": {"disabled": False}}
    assert DISABLED not in _traits(placement, "h1")


def test_the_service_token_is_enforced(placement: TestClient,
                                       agents: list[RunningAgent]) -> None:
    running = _start(agents, placement.url, "h1",
                     overrides=(("DEFAULT", "service_token", "s3cret"),))
    assert requests.get(running.url + "/", timeout=5).status_code == 401
    guest = _guest("h1")
    with pytest.raises(AgentUnreachable, match="401"):
        HTTPAgentClient(lambda host: running.url, "wrong", 10).spawn("h1", guest)
    with pytest.raises(AgentUnreachable, match="401"):
        HTTPAgentClient(lambda host: running.url, None, 10).set_disabled("h1", True)
    assert running.agent.driver.guests() == [] and not running.agent.disabled
    HTTPAgentClient(lambda host: running.url, "s3cret", 10).spawn("h1", guest)
    assert running.agent.driver.guests() == [guest.uuid]


def test_without_a_token_writes_need_the_development_flag(
        placement: TestClient, agents: list[RunningAgent]) -> None:
    closed = _start(agents, placement.url, "h1", overrides=(("DEFAULT", "service_token", ""),))
    guest = _guest("h1")
    for method, path, body in (("POST", "/guests", spawn_request(guest)),
                               ("DELETE", f"/guests/{guest.uuid}", None),
                               ("PUT", "/service", {"disabled": True})):
        refused = requests.request(method, closed.url + path, json=body, timeout=5)
        assert refused.status_code == 401, (method, path, refused.text)
        message = refused.json()["error"]["message"]
        assert message.startswith(f"anonymous {method} refused") and (
            "[DEFAULT] service_token" in message
            and "allow_anonymous_internal_writes" in message), message
    assert closed.agent.driver.guests() == [] and not closed.agent.disabled
    # Reads change nothing: answered.
    assert requests.get(closed.url + "/guests", timeout=5).json() == {"guests": []}

    opened = _start(agents, placement.url, "h2", overrides=(
        ("DEFAULT", "service_token", ""),
        ("DEFAULT", "allow_anonymous_internal_writes", True)))
    HTTPAgentClient(lambda host: opened.url, None, 10).spawn("h2", _guest("h2"))
    assert len(opened.agent.driver.guests()) == 1
    # With a token set, the flag opens nothing.
    guarded = _start(agents, placement.url, "h3", overrides=(
        ("DEFAULT", "allow_anonymous_internal_writes", True),))
    with pytest.raises(AgentUnreachable, match="401"):
        HTTPAgentClient(lambda host: guarded.url, None, 10).spawn("h3", _guest("h3"))
    assert guarded.agent.driver.guests() == []


def test_vmware_agent_refuses_what_its_cluster_lacks(placement: TestClient,
                                                     agents: list[RunningAgent]) -> None:
    running = _start(agents, placement.url, "vc1", lambda conf: VMwareDriver(conf))
    node = running.agent.driver.nodes()[0]
    client = HTTPAgentClient(lambda host: running.url, TOKEN, 10)
    for guest, feature in ((_guest(node, "qcow2"), "disk_format=qcow2"),
                           (_guest(node, "vmdk", hw_vif_model="virtio"),
                            "hw_vif_model=virtio"),
                           (_guest(node, "vmdk", hw_disk_bus="sata"),
                            "hw_disk_bus=sata")):
        with pytest.raises(SpawnFailed) as caught:
            client.spawn("vc1", guest)
        assert (caught.value.kind, caught.value.feature) == ("UnsupportedHardware", feature)
    guest = _guest(node, "vmdk", hw_vif_model="e1000")
    client.spawn("vc1", guest)
    assert running.agent.driver.guests() == [guest.uuid]
    info = requests.get(running.url + "/", headers=HEADERS, timeout=5).json()
    assert info["driver"] == "vmware" and info["nodes"] == [node]


def test_several_agents_in_one_process(placement: TestClient,
                                       agents: list[RunningAgent]) -> None:
    fakes = [_start(agents, placement.url, f"h{i}") for i in range(1, 3)]
    vmware = _start(agents, placement.url, "vc1", lambda conf: VMwareDriver(conf))
    urls = {r.host: r.url for r in (*fakes, vmware)}
    assert len(set(urls.values())) == 3
    over_http = HTTPAgentClient(urls.__getitem__, TOKEN, 10)
    in_process = LocalAgentClient({r.host: r.agent for r in (*fakes, vmware)})
    for client in (over_http, in_process):
        guest = _guest("h2")
        client.spawn("h2", guest)
        assert fakes[1].agent.driver.guests() == [guest.uuid]
        assert fakes[0].agent.driver.guests() == []
        client.destroy("h2", guest.uuid)
        with pytest.raises(SpawnFailed) as caught:
            client.spawn("vc1", _guest(vmware.agent.driver.nodes()[0], "raw"))
        assert caught.value.feature == "disk_format=raw" and caught.value.host == "vc1"
    for node in ("h1", "h2"):
        assert "COMPUTE_NODE" in _traits(placement, node)


# -- the heartbeat -----------------------------------------------------------------------

@dataclass
class StandInComputeAPI:
    """A stand-in for the compute API's ``PUT /internal/services/{host}``: records every
    heartbeat and answers with ``state`` (disabled, destroy list), once per destroy."""

    url: str = ""
    beats: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)
    disabled: bool = False
    destroy: list[str] = field(default_factory=list)
    status: int = 200
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_for(self, count: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.beats) < count:
            assert time.monotonic() < deadline, f"only {len(self.beats)} heartbeats"
            time.sleep(0.05)


@pytest.fixture
def compute_api() -> Iterator[StandInComputeAPI]:
    api = StandInComputeAPI()

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            with api.lock:
                api.beats.append((self.path, dict(self.headers), body))
                answer = {"service": {"id": 1, "host": self.path.rsplit("/", 1)[-1],
                                      "disabled": api.disabled, "disabled_reason": None,
                                      "forced_down": False},
                          "destroy": api.destroy}
                api.destroy = []  # the API marks those migrations completed
            data = json.dumps(answer).encode()
            self.send_response(api.status)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield api
    server.shutdown()
    server.server_close()


def test_registration_and_heartbeat(placement: TestClient, agents: list[RunningAgent],
                                    compute_api: StandInComputeAPI) -> None:
    def refusing(conf: Any) -> ComputeDriver:
        return FakeDriver(conf, FakeHost(nodes=("h1",), traits={
            "COMPUTE_NET_VIF_MODEL_E1000": False, "COMPUTE_NET_VIF_MODEL_VIRTIO": True,
            "COMPUTE_VOLUME_MULTI_ATTACH": False}))

    running = _start(agents, placement.url, "h1", refusing, api_url=compute_api.url,
                     overrides=(("DEFAULT", "report_interval", 1),
                                ("DEFAULT", "service_token", "s3cret")))
    # Registered before start_agent returned.
    path, headers, body = compute_api.beats[0]
    assert path == "/internal/services/h1" and headers["X-Service-Token"] == "s3cret"
    # What the driver reports unsupported of what an image can ask for (the fake
    # driver's vhd, and e1000), not of the other capabilities (multi-attach)
    assert body == {"binary": "nova-compute", "driver": "fake", "nodes": ["h1"],
                    "agent_url": running.url, "supported_instances": [["x86_64", "fake", "hvm"]],
                    "hypervisor_version": 1000, "version": body["version"],
                    "refused": {"h1": ["COMPUTE_IMAGE_TYPE_VHD",
                                       "COMPUTE_NET_VIF_MODEL_E1000"]}}
    compute_api.wait_for(2)


def test_the_heartbeat_applies_disabled_and_destroys_evacuated_guests(
        placement: TestClient, agents: list[RunningAgent],
        compute_api: StandInComputeAPI) -> None:
    running = _start(agents, placement.url, "h1", api_url=compute_api.url,
                     overrides=(("DEFAULT", "report_interval", 1),))
    kept, evacuated = _guest("h1"), _guest("h1")
    for guest in (kept, evacuated):
        running.agent.driver.spawn(guest)
    with compute_api.lock:
        compute_api.disabled = True
        compute_api.destroy = [evacuated.uuid]
        seen = len(compute_api.beats)
    compute_api.wait_for(seen + 2)
    assert running.agent.driver.guests() == [kept.uuid]
    assert running.agent.disabled and DISABLED in _traits(placement, "h1")
    compute_api.disabled = False
    compute_api.wait_for(len(compute_api.beats) + 2)
    assert not running.agent.disabled and DISABLED not in _traits(placement, "h1")


def test_an_api_that_is_down_does_not_stop_the_agent(
        placement: TestClient, agents: list[RunningAgent],
        compute_api: StandInComputeAPI) -> None:
    compute_api.status = 503
    running = _start(agents, placement.url, "h1", api_url=compute_api.url,
                     overrides=(("DEFAULT", "report_interval", 1),))
    assert running.heartbeat is not None and running.heartbeat.last is not None
    assert running.heartbeat.last.problem == f"{running.heartbeat.url} answered 503"
    compute_api.status = 200
    compute_api.wait_for(len(compute_api.beats) + 1)
    deadline = time.monotonic() + 5
    while not running.heartbeat.last.ok:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # Nobody listening at all: registration fails, the agent still serves.
    gone = _start(agents, placement.url, "h2", api_url="http://127.0.0.1:9",
                  overrides=(("DEFAULT", "report_interval", 1),))
    assert gone.heartbeat is not None and gone.heartbeat.last is not None
    assert not gone.heartbeat.last.ok
    assert requests.get(gone.url + "/", headers=HEADERS, timeout=5).json()["host"] == "h2"


def test_compute_run_serves_and_registers(placement: TestClient,
                                          compute_api: StandInComputeAPI,
                                          tmp_path: Path) -> None:
    port = free_port()
    log = (tmp_path / "agent.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "moorage", "compute", "run", "--driver", "fake", "--host", "h9",
         "--placement-url", placement.url, "--listen", "127.0.0.1", "--port", str(port),
         "--api-url", compute_api.url], stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, (tmp_path / "agent.log").read_text()
            try:
                info = requests.get(url + "/", timeout=1).json()
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, (tmp_path / "agent.log").read_text()
                time.sleep(0.1)
        assert (info["host"], info["driver"]) == ("h9", "fake")  # reads stay open
        compute_api.wait_for(1)
        assert compute_api.beats[0][2]["agent_url"] == url
        # No [DEFAULT] service_token and no development flag: a write is refused.
        with pytest.raises(AgentUnreachable, match="401") as caught:
            HTTPAgentClient(lambda host: url, None, 10).set_disabled("h9", True)
        assert "[DEFAULT] service_token" in str(caught.value)
        assert DISABLED not in _traits(placement, "h9")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, (tmp_path / "agent.log").read_text()
    output = (tmp_path / "agent.log").read_text()
    assert f"serving {url}" in output
    [warning] = [line for line in output.splitlines() if "service_token is unset" in line]
    assert "POST /guests" in warning and "refused (401)" in warning, warning


def test_libvirt_agent_over_http(placement: TestClient, agents: list[RunningAgent],
                                 compute_api: StandInComputeAPI,
                                 libvirt_embed_uri: str) -> None:
    conf = agent_config("kvm1", "libvirt", placement_url=placement.url, overrides=(
        ("DEFAULT", "service_token", TOKEN),
        ("libvirt", "virt_type", "qemu"), ("libvirt", "connection_uri", libvirt_embed_uri)))
    running = start_agent(conf, port=0, api_url=compute_api.url)
    agents.append(running)
    report = compute_api.beats[0][2]
    assert report["driver"] == "libvirt" and report["nodes"] == ["kvm1"]
    assert ["x86_64", "qemu", "hvm"] in report["supported_instances"]
    assert report["hypervisor_version"] == host.connect(libvirt_embed_uri).getVersion()
    client = HTTPAgentClient(lambda h: running.url, TOKEN, 120)
    # The host's uptime, as nova's libvirt driver reports it (os-hypervisors/{id}/uptime).
    assert " up " in (client.host_uptime("kvm1") or "")
    # The flavor and image contradict each other: no host could do better.
    with pytest.raises(SpawnFailed) as caught:
        client.spawn("kvm1", _guest("kvm1", "qcow2", hw_tpm_model="tpm-crb",
                                    hw_tpm_version="1.2"))
    assert (caught.value.kind, caught.value.reschedule) == ("FlavorImageConflict", False)
    assert "TPM 2.0" in caught.value.message
    # A device QEMU's x86_64 machine does not have: another host may.
    with pytest.raises(SpawnFailed) as caught:
        client.spawn("kvm1", _guest("kvm1", "qcow2", hw_vif_model="lan9118"))
    assert (caught.value.kind, caught.value.reschedule) == ("UnsupportedHardware", True)
    assert caught.value.feature == "COMPUTE_NET_VIF_MODEL_LAN9118"
    guest = _guest("kvm1", "qcow2")
    client.spawn("kvm1", guest)
    try:
        assert guest.uuid in _listed(running.url)["guests"]
    finally:
        client.destroy("kvm1", guest.uuid)
    assert guest.uuid not in running.agent.driver.guests()


def _generation(placement: TestClient, node: str) -> int:
    return int(placement.get(f"/resource_providers/{provider_uuid(node)}",
                             expect=200).json()["generation"])


def test_a_disabled_host_restarts_without_being_offered(
        placement: TestClient, agents: list[RunningAgent],
        compute_api: StandInComputeAPI) -> None:
    """The compute API's record says disabled. A restarting agent's first sync (before
    its first heartbeat tells it so) leaves COMPUTE_STATUS_DISABLED in place: not one
    write to the provider, with the API up; with the API down, the trait stays until
    the API answers."""
    overrides = (("DEFAULT", "report_interval", 1),)
    compute_api.disabled = True
    first = _start(agents, placement.url, "h1", api_url=compute_api.url, overrides=overrides)
    assert first.agent.disabled is True and DISABLED in _traits(placement, "h1")
    generation = _generation(placement, "h1")
    first.stop()
    agents.remove(first)

    again = _start(agents, placement.url, "h1", api_url=compute_api.url, overrides=overrides)
    assert again.agent.disabled is True
    # Removed then added back would have moved the generation twice.
    assert _generation(placement, "h1") == generation

    again.stop()
    agents.remove(again)
    compute_api.status = 503
    blind = _start(agents, placement.url, "h1", api_url=compute_api.url, overrides=overrides)
    assert blind.agent.disabled is None  # nobody has said yet
    assert DISABLED in _traits(placement, "h1")
    assert _generation(placement, "h1") == generation
    assert requests.get(blind.url + "/", headers=HEADERS, timeout=5).status_code == 200
    compute_api.status = 200
    deadline = time.monotonic() + 10
    while blind.agent.disabled is not True:
        assert time.monotonic() < deadline, "the heartbeat's answer was not applied"
        time.sleep(0.05)
    assert DISABLED in _traits(placement, "h1")


def test_without_a_compute_api_a_host_starts_enabled(
        placement: TestClient, agents: list[RunningAgent]) -> None:
    running = _start(agents, placement.url, "h1")
    assert running.agent.disabled is False and DISABLED not in _traits(placement, "h1")
