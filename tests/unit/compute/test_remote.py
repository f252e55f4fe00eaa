"""The agent clients' error mapping: what the conductor sees when an agent refuses,
answers something else, or does not answer. The HTTP client talks to a stand-in
agent (a tiny HTTP server scripted per test), the local one to fake-driver agents."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from moorage.compute.agent import ComputeAgent
from moorage.compute.client import (
    AgentUnreachable,
    ConsoleUnavailable,
    PowerAction,
    PowerFailed,
    SpawnFailed,
)
from moorage.compute.remote import HTTPAgentClient, LocalAgentClient
from moorage.conf import load_config
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.placement.client import PlacementClient
from moorage.placement.launcher import free_port
from moorage.virt.driver import Guest
from moorage.virt.fake import FakeDriver, FakeHost

GUEST = Guest("6f1f9d3e-2a7b-4c55-9d0e-1b2c3d4e5f60", "vm", "h1", Flavor("f", 1, 512),
              Image.create("img", "cirros", "raw"))

Answer = tuple[int, object]


@dataclass
class StandInAgent:
    """A stand-in for an agent's HTTP API: answers what ``answer`` says, records requests."""

    answer: Callable[[str, str], Answer]
    requests: list[tuple[str, str, dict[str, str], Any]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def stand_in() -> Iterator[StandInAgent]:
    agent = StandInAgent(lambda method, path: (500, {"error": {"message": "unscripted"}}))

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            agent.requests.append((self.command, self.path, dict(self.headers), body))
            status, answer = agent.answer(self.command, self.path)
            data = b"" if answer is None else json.dumps(answer).encode()
            with contextlib.suppress(OSError):  # a client that gave up waiting
                self.send_response(status)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _handle

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    agent.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield agent
    server.shutdown()
    server.server_close()


def _client(url: str, token: str | None = "s3cret", timeout: float = 5.0) -> HTTPAgentClient:
    return HTTPAgentClient(lambda host: url, token, timeout)


def test_a_refused_spawn_is_spawn_failed(stand_in: StandInAgent) -> None:
    stand_in.answer = lambda m, p: (409, {"spawn_failed": {
        "kind": "UnsupportedHardware", "message": "no e1000 here",
        "feature": "hw_vif_model=e1000", "reschedule": True}})
    with pytest.raises(SpawnFailed) as caught:
        _client(stand_in.url).spawn("h1", GUEST)
    failure = caught.value
    assert (failure.host, failure.kind, failure.message, failure.feature,
            failure.reschedule) == ("h1", "UnsupportedHardware", "no e1000 here",
                                    "hw_vif_model=e1000", True)
    method, path, headers, body = stand_in.requests[0]
    assert (method, path, headers["X-Service-Token"]) == ("POST", "/guests", "s3cret")
    assert body["guest"]["uuid"] == GUEST.uuid and body["guest"]["image"]["disk_format"] == "raw"


def test_calls_that_succeed_return_nothing(stand_in: StandInAgent) -> None:
    stand_in.answer = lambda m, p: {"POST": (201, {"guest": {}}), "DELETE": (204, None),
                                    "PUT": (200, {"service": {"disabled": True}})}[m]
    client = _client(stand_in.url, token=None)
    client.spawn("h1", GUEST)
    client.destroy("h1", GUEST.uuid)
    client.set_disabled("h1", True)
    assert [(m, p, b) for m, p, _, b in stand_in.requests][1:] == [
        ("DELETE", f"/guests/{GUEST.uuid}", None), ("PUT", "/service", {"disabled": True})]
    assert all("X-Service-Token" not in h for _, _, h, _ in stand_in.requests)


def test_a_wrong_token_says_what_to_configure(stand_in: StandInAgent) -> None:
    stand_in.answer = lambda m, p: (401, {"error": {"message": "a valid X-Service-Token "
                                                               "header is required"}})
    with pytest.raises(AgentUnreachable) as caught:
        _client(stand_in.url).destroy("h1", GUEST.uuid)
    text = str(caught.value)
    assert "h1" in text and stand_in.url in text and "401" in text
    assert "[DEFAULT] service_token" in text


def test_a_409_without_spawn_failed_is_not_taken_for_a_refusal(
        stand_in: StandInAgent) -> None:
    stand_in.answer = lambda m, p: (409, {"error": {"message": "busy"}})
    with pytest.raises(AgentUnreachable, match="answered 409: busy"):
        _client(stand_in.url).spawn("h1", GUEST)


def test_nobody_listening_is_unreachable_naming_host_and_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(AgentUnreachable) as caught:
        _client(url).spawn("h7", GUEST)
    assert "h7" in str(caught.value) and f"{url}/guests" in str(caught.value)


def test_an_agent_too_slow_is_unreachable(stand_in: StandInAgent) -> None:
    def slow(method: str, path: str) -> Answer:
        time.sleep(1.5)
        return 204, None

    stand_in.answer = slow
    started = time.monotonic()
    with pytest.raises(AgentUnreachable, match=r"did not answer within 0\.3s"):
        _client(stand_in.url, timeout=0.3).destroy("h1", GUEST.uuid)
    assert time.monotonic() - started < 1.4


def test_an_unknown_host_is_unreachable_from_resolve() -> None:
    def resolve(host: str) -> str:
        raise AgentUnreachable(f"no compute service on host {host}")

    with pytest.raises(AgentUnreachable, match="no compute service on host h9"):
        HTTPAgentClient(resolve, None, 1.0).set_disabled("h9", True)


# -- in process ---------------------------------------------------------------------------

def _local_agent(host: FakeHost) -> ComputeAgent:
    conf = load_config([], [("DEFAULT", "host", host.nodes[0])])
    # Nothing listens there: only set_disabled talks to placement, and reports the failure.
    return ComputeAgent(conf, FakeDriver(conf, host),
                        PlacementClient(f"http://127.0.0.1:{free_port()}", "admin"))


def test_local_client_maps_failures_as_the_http_api_does() -> None:
    agent = _local_agent(FakeHost(nodes=("h1",)))
    client = LocalAgentClient({"h1": agent})
    client.spawn("h1", GUEST)
    assert agent.driver.guests() == [GUEST.uuid]
    vhd = Guest("0b5d2c1a-9e8f-4a3b-8c7d-6e5f4a3b2c1d", "vm", "h1", Flavor("f", 1, 512),
                Image.create("img", "old", "vhd"))
    with pytest.raises(SpawnFailed) as caught:
        client.spawn("h1", vhd)
    assert (caught.value.kind, caught.value.feature, caught.value.reschedule) == (
        "UnsupportedHardware", "disk_format=vhd", True)
    client.destroy("h1", GUEST.uuid)
    client.destroy("h1", GUEST.uuid)
    assert agent.driver.guests() == []
    client.set_disabled("h1", True)
    assert agent.disabled


def test_local_client_knows_only_its_agents() -> None:
    client = LocalAgentClient({"h1": _local_agent(FakeHost(nodes=("h1",)))})
    with pytest.raises(AgentUnreachable, match=r"host h2 .*known: h1"):
        client.destroy("h2", GUEST.uuid)


def test_local_client_powers_guests_and_reads_their_console() -> None:
    agent = _local_agent(FakeHost(nodes=("h1",)))
    driver = agent.driver
    assert isinstance(driver, FakeDriver)
    client = LocalAgentClient({"h1": agent})
    client.spawn("h1", GUEST)
    client.power("h1", GUEST.uuid, PowerAction.STOP)
    assert not driver.running(GUEST.uuid)
    client.power("h1", GUEST.uuid, PowerAction.REBOOT_HARD)
    assert driver.running(GUEST.uuid)
    assert client.console_output("h1", GUEST.uuid).splitlines()[-1] == (
        "fake guest rebooted (hard)")
    with pytest.raises(PowerFailed) as caught:
        client.power("h1", "0b5d2c1a-9e8f-4a3b-8c7d-6e5f4a3b2c1d", PowerAction.START)
    assert caught.value.kind == "GuestNotFound"
    with pytest.raises(ConsoleUnavailable) as missing:
        client.console_output("h1", "0b5d2c1a-9e8f-4a3b-8c7d-6e5f4a3b2c1d")
    assert missing.value.missing
    # A simulated host has no uptime to tell: None (the API's 501).
    assert client.host_uptime("h1") is None
