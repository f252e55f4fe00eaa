"""An agent refuses a call about a guest from an operation older than the newest it has
seen for that guest: a conductor that resumes after a successor took its operation
over cannot spawn or destroy behind the successor. Over the agent's real HTTP API and
in process, the same way."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from moorage.compute.agent import ComputeAgent, GuestFences
from moorage.compute.client import Fence, Fenced
from moorage.compute.remote import HTTPAgentClient, LocalAgentClient
from moorage.compute.service import AgentHTTPServer
from moorage.conf import load_config
from moorage.internal_access import InternalAccess
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.placement.client import PlacementClient
from moorage.placement.launcher import free_port
from moorage.virt.driver import Guest
from moorage.virt.fake import FakeDriver, FakeHost
from tests.unit.compute.test_service import OPEN, _call

UUID = "4f0c1b2e-7a11-4c3d-9e8f-0a1b2c3d4e5f"
GUEST = Guest(uuid=UUID, name="vm", node="h1", flavor=Flavor("small", 1, 512, 1),
              image=Image(id="i", name="i", disk_format="raw"))
FIRST, TAKEN_OVER, NEXT = Fence(5, 0), Fence(5, 1), Fence(6, 0)


def _agent() -> ComputeAgent:
    conf = load_config([], [("DEFAULT", "host", "h1")])
    return ComputeAgent(conf, FakeDriver(conf, FakeHost(nodes=("h1",))),
                        PlacementClient(f"http://127.0.0.1:{free_port()}"))


@pytest.fixture
def served() -> Iterator[tuple[ComputeAgent, HTTPAgentClient]]:
    agent = _agent()
    server = AgentHTTPServer(agent, InternalAccess(None, anonymous_writes=True)).start()
    try:
        yield agent, HTTPAgentClient(lambda host: server.url, None, 10.0)
    finally:
        server.stop()


def test_fences_order_by_operation_then_takeover() -> None:
    assert FIRST < TAKEN_OVER < NEXT
    assert Fence.parse(str(TAKEN_OVER)) == TAKEN_OVER
    for text in ("5", "5.x", "-1.0", "a.b", ""):
        with pytest.raises(ValueError, match=r"OPERATION\.TAKEOVER"):
            Fence.parse(text)
    fences = GuestFences()
    assert fences.admit("g1", FIRST) and fences.admit("g1", TAKEN_OVER)
    assert not fences.admit("g1", FIRST)
    assert fences.admit("g1", None)  # a call without a fence (an operator's) goes on
    assert fences.admit("g2", FIRST)  # each guest has its own mark
    assert fences.admit("g1", NEXT) and not fences.admit("g1", TAKEN_OVER)


def test_over_http_a_call_of_an_older_operation_is_refused(
        served: tuple[ComputeAgent, HTTPAgentClient]) -> None:
    agent, client = served
    client.spawn("h1", GUEST, FIRST)
    # A successor takes the build over and asks about the guest...
    assert client.has_guest("h1", UUID, TAKEN_OVER)
    client.destroy("h1", UUID, TAKEN_OVER)
    # ...then the first resumes: its spawn and its destroy are refused.
    with pytest.raises(Fenced, match=r"refused POST /guests of operation 5\.0"):
        client.spawn("h1", GUEST, FIRST)
    with pytest.raises(Fenced):
        client.destroy("h1", UUID, FIRST)
    assert UUID not in agent.driver.guests()
    client.spawn("h1", GUEST, NEXT)  # the server's next operation
    assert UUID in agent.driver.guests()


def test_a_malformed_fence_is_a_bad_request() -> None:
    status, _, body = _call(OPEN, "DELETE", f"/guests/{UUID}", headers={"X-Moorage-Fence": "x"})
    assert status.startswith("400")
    assert "X-Moorage-Fence" in body["error"]["message"]


def test_in_process_the_same() -> None:
    agent = _agent()
    client = LocalAgentClient({"h1": agent})
    client.spawn("h1", GUEST, TAKEN_OVER)
    with pytest.raises(Fenced):
        client.spawn("h1", GUEST, FIRST)
    with pytest.raises(Fenced):
        client.has_guest("h1", UUID, FIRST)
    assert client.has_guest("h1", UUID, NEXT)
