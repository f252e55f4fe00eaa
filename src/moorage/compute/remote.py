"""The two ways the conductor reaches compute agents (``moorage.compute.client.AgentClient``).

``HTTPAgentClient`` speaks to agents in other processes over their HTTP API
(``service.py``); ``LocalAgentClient`` calls agents living in this process (the
embedded mode). Both fail the same way: a refused spawn is SpawnFailed with the
feature and whether to reschedule; an agent that cannot be reached, or answers
something other than its API's answers, is AgentUnreachable naming the host and
the URL.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import requests
from oslo_config import cfg

from moorage.compute import wire
from moorage.compute.client import AgentUnreachable
from moorage.compute.service import TOKEN_HEADER
from moorage.virt.driver import ComputeDriver, Guest

LOG = logging.getLogger(__name__)


class HTTPAgentClient:
    """AgentClient over HTTP. ``resolve(host)`` is the agent's URL (AgentUnreachable for
    a host it does not know); ``token`` goes in X-Service-Token when set."""

    def __init__(self, resolve: Callable[[str], str], token: str | None,
                 timeout: float) -> None:
        self.resolve = resolve
        self.token = token
        self.timeout = timeout
        self._local = threading.local()  # one session per thread: conductor workers

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def _call(self, host: str, method: str, path: str, body: object = None
              ) -> requests.Response:
        url = self.resolve(host).rstrip("/") + path
        headers = {TOKEN_HEADER: self.token} if self.token else {}
        try:
            return self._session().request(method, url, json=body, headers=headers,
                                           timeout=self.timeout)
        except requests.Timeout:
            raise AgentUnreachable(f"the agent of {host} at {url} did not answer within "
                                   f"{self.timeout:g}s") from None
        except requests.RequestException as exc:
            raise AgentUnreachable(f"the agent of {host} at {url} cannot be reached: "
                                   f"{_reason(exc)}") from None

    def spawn(self, host: str, guest: Guest) -> None:
        response = self._call(host, "POST", "/guests", wire.spawn_request(guest))
        if response.status_code == 201:
            return
        if response.status_code == 409:
            failure = wire.spawn_failed_from_json(host, _body(response))
            if failure is not None:
                raise failure
        raise _unexpected(host, response)

    def destroy(self, host: str, instance_uuid: str) -> None:
        response = self._call(host, "DELETE", f"/guests/{instance_uuid}")
        if response.status_code != 204:
            raise _unexpected(host, response)

    def has_guest(self, host: str, instance_uuid: str) -> bool:
        response = self._call(host, "GET", f"/guests/{instance_uuid}")
        if response.status_code in (200, 404):
            return response.status_code == 200
        raise _unexpected(host, response)

    def set_disabled(self, host: str, disabled: bool) -> None:
        response = self._call(host, "PUT", "/service", {"disabled": disabled})
        if response.status_code != 200:
            raise _unexpected(host, response)


def _body(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _unexpected(host: str, response: requests.Response) -> AgentUnreachable:
    """An answer the agent's API does not give to a good request: its status and
    message, and for a 401 what to configure."""
    body = _body(response)
    error = body.get("error") if isinstance(body, dict) else None
    message = (error.get("message") if isinstance(error, dict) else None) or (
        response.text[:200] or response.reason)
    hint = (" (set the same [DEFAULT] service_token on the compute API and the agent)"
            if response.status_code == 401 else "")
    return AgentUnreachable(
        f"the agent of {host} at {response.request.method} {response.url} answered "
        f"{response.status_code}: {message}{hint}")


def _reason(exc: requests.RequestException) -> str:
    """The innermost cause of a connection error, in one line (urllib3 wraps it twice)."""
    cause: BaseException = exc
    while cause.__context__ is not None and not isinstance(cause, OSError):
        cause = cause.__context__
    text = str(cause).strip() or type(cause).__name__
    return text.splitlines()[0]


class LocalAgent(Protocol):
    """What LocalAgentClient needs of an agent: a ComputeAgent has it."""

    conf: cfg.ConfigOpts
    driver: ComputeDriver

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

    def spawn(self, host: str, guest: Guest) -> None:
        agent = self._agent(host)
        try:
            agent.driver.spawn(guest)
        except Exception as exc:  # every refusal goes back to the conductor, named
            failure = wire.spawn_failure(host, exc)
            LOG.info("spawn of %s on %s failed: %s: %s", guest.uuid, host, failure.kind,
                     failure.message)
            raise failure from exc

    def destroy(self, host: str, instance_uuid: str) -> None:
        self._agent(host).driver.destroy(instance_uuid)

    def has_guest(self, host: str, instance_uuid: str) -> bool:
        return instance_uuid in self._agent(host).driver.guests()

    def set_disabled(self, host: str, disabled: bool) -> None:
        self._agent(host).set_disabled(disabled)

