"""The two ways the conductor reaches compute agents (``moorage.compute.client.AgentClient``).

``HTTPAgentClient`` speaks to agents in other processes over their HTTP API
(``service.py``); ``LocalAgentClient`` calls agents living in this process (the
embedded mode). Both fail the same way: a refused spawn is SpawnFailed with the
feature and whether to reschedule; an agent that cannot be reached, or answers
something other than its API's answers, is AgentUnreachable naming the host and
the URL.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Protocol

from oslo_config import cfg

from moorage import transport
from moorage.compute import wire
from moorage.compute.agent import GuestFences
from moorage.compute.client import (
    AgentUnreachable,
    ConsoleUnavailable,
    Fence,
    Fenced,
    PowerAction,
    PowerFailed,
)
from moorage.internal_access import TOKEN_HEADER
from moorage.jsonvalue import JSONValue
from moorage.virt.driver import ComputeDriver, Guest, GuestNotFound

LOG = logging.getLogger(__name__)


class HTTPAgentClient:
    """AgentClient over HTTP. ``resolve(host)`` is the agent's URL (AgentUnreachable for
    a host it does not know); ``token`` goes in X-Service-Token when set. Connections
    are kept alive and shared by the conductor's workers (``moorage.transport``, as
    the placement client's)."""

    def __init__(self, resolve: Callable[[str], str], token: str | None,
                 timeout: float, *, connections: int = 16) -> None:
        self.resolve = resolve
        self.token = token
        self.timeout = timeout
        self._servers = transport.Servers(timeout=timeout, maxsize=connections)
        self._headers = {"accept": "application/json", "content-type": "application/json",
                         **({TOKEN_HEADER: token} if token else {})}

    def _call(self, host: str, method: str, path: str, body: object = None,
              fence: Fence | None = None) -> _Answer:
        url = self.resolve(host).rstrip("/") + path
        data = None if body is None else json.dumps(body).encode()
        try:
            server, target = self._servers.for_url(url)
        except ValueError:
            raise AgentUnreachable(f"the agent of {host} has no usable URL: {url!r}"
                                   ) from None
        try:
            # Should the agent close a kept-alive connection as the request went out
            # on it, nothing was done: the request is sent once more.
            headers = (self._headers if fence is None
                       else {**self._headers, wire.FENCE_HEADER: str(fence)})
            response = server.request(method, target, body=data, headers=headers,
                                      resend=True)
        except transport.TransportError as exc:
            if exc.timed_out and not exc.unreachable:
                raise AgentUnreachable(f"the agent of {host} at {url} did not answer "
                                       f"within {self.timeout:g}s") from None
            raise AgentUnreachable(f"the agent of {host} at {url} cannot be reached: "
                                   f"{exc}") from None
        answer = _Answer(method, url, response.status, response.reason or "", response.data)
        if fence is not None and answer.status == 409 and wire.is_fenced(answer.json()):
            raise Fenced(f"the agent of {host} refused {method} {path} of operation "
                         f"{fence}: a newer operation has been there")
        return answer

    def spawn(self, host: str, guest: Guest, fence: Fence | None = None) -> None:
        answer = self._call(host, "POST", "/guests", wire.spawn_request(guest), fence)
        if answer.status == 201:
            return
        if answer.status == 409:
            failure = wire.spawn_failed_from_json(host, answer.json())
            if failure is not None:
                raise failure
        raise _unexpected(host, answer)

    def destroy(self, host: str, instance_uuid: str, fence: Fence | None = None) -> None:
        answer = self._call(host, "DELETE", f"/guests/{instance_uuid}", fence=fence)
        if answer.status != 204:
            raise _unexpected(host, answer)

    def has_guest(self, host: str, instance_uuid: str, fence: Fence | None = None) -> bool:
        answer = self._call(host, "GET", f"/guests/{instance_uuid}", fence=fence)
        if answer.status in (200, 404):
            return answer.status == 200
        raise _unexpected(host, answer)

    def power(self, host: str, instance_uuid: str, action: PowerAction,
              fence: Fence | None = None) -> None:
        answer = self._call(host, "POST", f"/guests/{instance_uuid}/power",
                            wire.power_request(action), fence)
        if answer.status == 204:
            return
        if answer.status == 409:
            failure = wire.power_failed_from_json(host, answer.json())
            if failure is not None:
                raise failure
        raise _unexpected(host, answer)

    def console_output(self, host: str, instance_uuid: str) -> str:
        answer = self._call(host, "GET", f"/guests/{instance_uuid}/console")
        body = answer.json()
        if answer.status == 200 and isinstance(body, dict) and isinstance(
                body.get("console"), dict) and isinstance(body["console"].get("output"), str):
            return str(body["console"]["output"])
        if answer.status in (404, 501):
            error = body.get("error") if isinstance(body, dict) else None
            message = error.get("message") if isinstance(error, dict) else None
            raise ConsoleUnavailable(str(message or answer.reason),
                                     missing=answer.status == 404)
        raise _unexpected(host, answer)

    def host_uptime(self, host: str) -> str | None:
        answer = self._call(host, "GET", "/host/uptime")
        body = answer.json()
        if answer.status == 200 and isinstance(body, dict) and isinstance(
                body.get("uptime"), str):
            return str(body["uptime"])
        if answer.status == 501:
            return None
        raise _unexpected(host, answer)

    def set_disabled(self, host: str, disabled: bool) -> None:
        answer = self._call(host, "PUT", "/service", {"disabled": disabled})
        if answer.status != 200:
            raise _unexpected(host, answer)


class _Answer:
    """An agent's answer: what the client needs of it."""

    def __init__(self, method: str, url: str, status: int, reason: str, data: bytes) -> None:
        self.method = method
        self.url = url
        self.status = status
        self.reason = reason
        self.data = data

    def json(self) -> JSONValue:
        """The body parsed (None when it is not JSON), to be narrowed by its reader."""
        try:
            data: JSONValue = json.loads(self.data)
        except ValueError:
            return None
        return data


def _unexpected(host: str, answer: _Answer) -> AgentUnreachable:
    """An answer the agent's API does not give to a good request: its status and
    message, and for a 401 what to configure."""
    body = answer.json()
    error = body.get("error") if isinstance(body, dict) else None
    message = (error.get("message") if isinstance(error, dict) else None) or (
        answer.data[:200].decode(errors="replace") or answer.reason)
    hint = (" (set the same [DEFAULT] service_token on the compute API and the agent)"
            if answer.status == 401 else "")
    return AgentUnreachable(
        f"the agent of {host} at {answer.method} {answer.url} answered "
        f"{answer.status}: {message}{hint}")


class LocalAgent(Protocol):
    """What LocalAgentClient needs of an agent: a ComputeAgent has it."""

    conf: cfg.ConfigOpts
    driver: ComputeDriver
    fences: GuestFences

    def set_disabled(self, disabled: bool) -> object: ...


class LocalAgentClient:
    """AgentClient over agents in this process, by host: the embedded mode. Failures
    are mapped as the HTTP API maps them, so the conductor cannot tell the difference."""

    def __init__(self, agents: Mapping[str, LocalAgent]) -> None:
        self.agents = agents

    def _agent(self, host: str) -> LocalAgent:
        agent = self.agents.get(host)
        if agent is None:
            raise AgentUnreachable(f"no compute agent of host {host} runs in this process "
                                   f"(known: {', '.join(sorted(self.agents)) or 'none'})")
        return agent

    def _admit(self, agent: LocalAgent, host: str, instance_uuid: str,
               fence: Fence | None) -> None:
        if not agent.fences.admit(instance_uuid, fence):
            raise Fenced(f"the agent of {host} refused a call of operation {fence} about "
                         f"{instance_uuid}: a newer operation has been there")

    def spawn(self, host: str, guest: Guest, fence: Fence | None = None) -> None:
        agent = self._agent(host)
        self._admit(agent, host, guest.uuid, fence)
        try:
            agent.driver.spawn(guest)
        except Exception as exc:  # every refusal goes back to the conductor, named
            failure = wire.spawn_failure(host, exc)
            LOG.info("spawn of %s on %s failed: %s: %s", guest.uuid, host, failure.kind,
                     failure.message)
            raise failure from exc

    def destroy(self, host: str, instance_uuid: str, fence: Fence | None = None) -> None:
        agent = self._agent(host)
        self._admit(agent, host, instance_uuid, fence)
        agent.driver.destroy(instance_uuid)

    def has_guest(self, host: str, instance_uuid: str, fence: Fence | None = None) -> bool:
        agent = self._agent(host)
        self._admit(agent, host, instance_uuid, fence)
        return instance_uuid in agent.driver.guests()

    def power(self, host: str, instance_uuid: str, action: PowerAction,
              fence: Fence | None = None) -> None:
        agent = self._agent(host)
        self._admit(agent, host, instance_uuid, fence)
        try:
            action.carry_out(agent.driver, instance_uuid)
        except Exception as exc:  # every failure goes back to the conductor, named
            raise PowerFailed(host, type(exc).__name__, str(exc) or type(exc).__name__
                              ) from exc

    def console_output(self, host: str, instance_uuid: str) -> str:
        try:
            return self._agent(host).driver.console_output(instance_uuid)
        except GuestNotFound as exc:
            raise ConsoleUnavailable(str(exc), missing=True) from None
        except NotImplementedError as exc:
            raise ConsoleUnavailable(str(exc), missing=False) from None

    def host_uptime(self, host: str) -> str | None:
        try:
            return self._agent(host).driver.host_uptime()
        except NotImplementedError:
            return None

    def set_disabled(self, host: str, disabled: bool) -> None:
        self._agent(host).set_disabled(disabled)

