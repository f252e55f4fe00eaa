"""The agent's heartbeat to the compute API: ``PUT /internal/services/{host}``.

Once at start, then every ``[DEFAULT] report_interval`` seconds, the agent says who
it is (driver, nodes, the URL of its HTTP API, what guests it runs). The answer
carries what the operator decided meanwhile: the service's disabled state, which
the agent applies (COMPUTE_STATUS_DISABLED follows), and the guests evacuated
away from this host while it was down, which it destroys. A compute API that
does not answer is logged and tried again at the next beat; guests it asked to
destroy whose destruction failed are retried at every beat until it succeeds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import requests

import moorage
from moorage.compute.agent import ComputeAgent
from moorage.compute.service import TOKEN_HEADER
from moorage.model.codec import Json

LOG = logging.getLogger(__name__)

BINARY = "moorage-compute"


@dataclass(frozen=True)
class ServiceState:
    """The compute API's record of this service, as a heartbeat's answer carries it."""

    disabled: bool
    disabled_reason: str | None = None
    forced_down: bool = False
    destroy: tuple[str, ...] = ()


@dataclass
class Beat:
    """One heartbeat: the state the API answered, or why there was none."""

    state: ServiceState | None = None
    problem: str | None = None
    destroyed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.problem is None


class InvalidAnswer(ValueError):
    """The compute API answered a heartbeat with a body we cannot read."""


def service_state(body: object) -> ServiceState:
    """The ServiceState of a heartbeat's answer; InvalidAnswer naming what is wrong."""
    if not isinstance(body, Mapping) or not isinstance(body.get("service"), Mapping):
        raise InvalidAnswer('the answer is not {"service": {...}, "destroy": [...]}')
    service = body["service"]
    disabled = service.get("disabled")
    if not isinstance(disabled, bool):
        raise InvalidAnswer(f"service.disabled is {disabled!r}, not a boolean")
    destroy = body.get("destroy", [])
    if not isinstance(destroy, list) or not all(isinstance(u, str) for u in destroy):
        raise InvalidAnswer(f"destroy is {destroy!r}, not a list of instance uuids")
    reason = service.get("disabled_reason")
    return ServiceState(disabled, reason if isinstance(reason, str) else None,
                        bool(service.get("forced_down", False)), tuple(destroy))


class Heartbeat:
    """Registers ``agent`` with the compute API at ``api_url`` and keeps it registered."""

    def __init__(self, agent: ComputeAgent, api_url: str, agent_url: str, *,
                 token: str | None, interval: float, timeout: float) -> None:
        self.agent = agent
        self.url = f"{api_url.rstrip('/')}/internal/services/{agent.conf.host}"
        self.agent_url = agent_url
        self.token = token
        self.interval = interval
        self.timeout = timeout
        self.last: Beat | None = None
        self._session = requests.Session()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Guests the API asked us to destroy that are not destroyed yet.
        self._to_destroy: set[str] = set()
        # What the driver said last, for beats while its hypervisor is unavailable.
        self._nodes: list[str] = []
        self._supported: list[tuple[str, str, str]] = []
        self._version: int | None = None

    def report(self) -> Json:
        """The body of a heartbeat. What the driver cannot tell now (its hypervisor
        unreachable) is what it told last."""
        driver = self.agent.driver
        try:
            self._nodes = driver.nodes()
            self._supported = driver.supported_instances()
            self._version = driver.hypervisor_version()
        except Exception as exc:  # the beat goes on: the agent is up, its hypervisor not
            LOG.warning("heartbeat: %s driver cannot say what it has now (%s); "
                        "sending what it said last", driver.name, exc)
        return {"binary": BINARY, "driver": driver.name, "nodes": self._nodes,
                "agent_url": self.agent_url,
                "supported_instances": [list(t) for t in self._supported],
                "hypervisor_version": self._version, "version": moorage.__version__}

    def beat(self) -> Beat:
        """One heartbeat, and what its answer asks for applied; never raises."""
        beat = self._beat()
        self.last = beat
        return beat

    def _beat(self) -> Beat:
        headers = {TOKEN_HEADER: self.token} if self.token else {}
        try:
            response = self._session.put(self.url, json=self.report(), headers=headers,
                                         timeout=self.timeout)
        except requests.RequestException as exc:
            LOG.warning("heartbeat to %s failed, trying again in %gs: %s", self.url,
                        self.interval, exc)
            return Beat(problem=f"{self.url}: {exc}")
        if response.status_code != 200:
            LOG.warning("heartbeat to %s answered %d, trying again in %gs: %s", self.url,
                        response.status_code, self.interval, response.text[:300])
            return Beat(problem=f"{self.url} answered {response.status_code}")
        try:
            state = service_state(_json(response))
        except InvalidAnswer as exc:
            LOG.error("heartbeat to %s: %s", self.url, exc)
            return Beat(problem=str(exc))
        return Beat(state=state, destroyed=self.apply(state))

    def apply(self, state: ServiceState) -> list[str]:
        """Follow the API's record: the disabled state, and destroy the guests it
        evacuated elsewhere. The uuids destroyed now."""
        agent = self.agent
        if state.disabled != agent.disabled:
            LOG.info("service %s by the operator%s", "disabled" if state.disabled
                     else "enabled", f" ({state.disabled_reason})"
                     if state.disabled_reason else "")
            agent.set_disabled(state.disabled)
        self._to_destroy.update(state.destroy)
        destroyed = []
        for instance_uuid in sorted(self._to_destroy):
            try:
                agent.driver.destroy(instance_uuid)
            except Exception as exc:  # retried at the next beat
                LOG.error("destroying evacuated guest %s failed, retrying at the next "
                          "heartbeat: %s", instance_uuid, exc)
                continue
            LOG.info("destroyed guest %s, evacuated to another host while this one "
                     "was down", instance_uuid)
            self._to_destroy.discard(instance_uuid)
            destroyed.append(instance_uuid)
        return destroyed

    # -- running ------------------------------------------------------------------------
    def start(self) -> Heartbeat:
        """Beat now (registration), then every ``interval`` seconds in a thread."""
        self.beat()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"heartbeat-{self.agent.conf.host}")
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 5)
        self._session.close()


def _json(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise InvalidAnswer("the answer is not JSON") from None
