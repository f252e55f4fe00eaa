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

import abc
import json
import logging
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

import moorage
from moorage import transport
from moorage.compute import BINARY
from moorage.compute.agent import ComputeAgent
from moorage.internal_access import TOKEN_HEADER
from moorage.model.codec import Json

LOG = logging.getLogger(__name__)



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


class HostReporter:
    """One host's side of its heartbeat: what it says about itself, and following the
    API's answer (its disabled state, guests to destroy)."""

    def __init__(self, agent: ComputeAgent, agent_url: str) -> None:
        self.agent = agent
        self.agent_url = agent_url
        # Guests the API asked us to destroy that are not destroyed yet.
        self._to_destroy: set[str] = set()
        # What the driver said last, for beats while its hypervisor is unavailable.
        self._nodes: list[str] = []
        self._supported: list[tuple[str, str, str]] = []
        self._version: int | None = None

    @property
    def host(self) -> str:
        return self.agent.host

    @property
    def destroy_pending(self) -> bool:
        """Guests the API asked to destroy whose destruction failed so far."""
        return bool(self._to_destroy)

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
                "hypervisor_version": self._version, "version": moorage.__version__,
                # of the nodes reported now: a node gone since the last sync is not one
                "refused": {node: traits for node, traits in self.agent.refused.items()
                            if traits and node in self._nodes}}

    def apply(self, state: ServiceState) -> list[str]:
        """Follow the API's record: the disabled state, and destroy the guests it
        evacuated elsewhere. The uuids destroyed now."""
        agent = self.agent
        if state.disabled != agent.disabled:
            # The first beat's answer tells the agent what the API records: that a
            # host is enabled is news to nobody (every host of a fleet hears it at
            # once), that it is disabled is worth a line, as any change after it.
            first = agent.disabled is None
            LOG.log(logging.INFO if state.disabled or not first else logging.DEBUG,
                    "service %s %s by the operator%s", agent.host,
                    "disabled" if state.disabled else "enabled",
                    f" ({state.disabled_reason})" if state.disabled_reason else "")
            if first:
                agent.learn_disabled(state.disabled)
            else:
                agent.set_disabled(state.disabled)
        self._to_destroy.update(state.destroy)
        destroyed = []
        for instance_uuid in sorted(self._to_destroy):
            try:
                agent.driver.destroy(instance_uuid)
            except Exception as exc:  # retried at the next beat
                LOG.error("destroying guest %s on %s failed, retrying at the next "
                          "heartbeat: %s", instance_uuid, agent.host, exc)
                continue
            LOG.info("destroyed guest %s on %s: the compute API no longer places it "
                     "there", instance_uuid, agent.host)
            self._to_destroy.discard(instance_uuid)
            destroyed.append(instance_uuid)
        return destroyed


class _Beating(abc.ABC):
    """What both heartbeats share: one connection to the compute API, a beat now
    (registration), then one every ``interval`` seconds in a thread until ``stop``."""

    def __init__(self, api_url: str, *, interval: float, timeout: float,
                 thread_name: str) -> None:
        self.interval = interval
        self.timeout = timeout
        self.last: Beat | None = None
        self._server = transport.Server(api_url, timeout=timeout, maxsize=1)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._thread_name = thread_name

    @abc.abstractmethod
    def beat(self) -> Beat:
        """One beat, and what its answer asks for applied; never raises."""

    def start(self) -> Self:
        """Beat now (registration), then every ``interval`` seconds in a thread."""
        self.beat()
        self._thread = threading.Thread(target=self._run, daemon=True, name=self._thread_name)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 5)
        self._server.close()


class Heartbeat(_Beating):
    """Registers ``agent`` with the compute API at ``api_url`` and keeps it registered."""

    def __init__(self, agent: ComputeAgent, api_url: str, agent_url: str, *,
                 token: str | None, interval: float, timeout: float) -> None:
        super().__init__(api_url, interval=interval, timeout=timeout,
                         thread_name=f"heartbeat-{agent.host}")
        self.agent = agent
        self.reporter = HostReporter(agent, agent_url)
        self.url = f"{api_url.rstrip('/')}/internal/services/{agent.host}"
        self.agent_url = agent_url
        self.token = token
        self._path = f"/internal/services/{agent.host}"

    def report(self) -> Json:
        return self.reporter.report()

    def apply(self, state: ServiceState) -> list[str]:
        return self.reporter.apply(state)

    def beat(self) -> Beat:
        """One heartbeat, and what its answer asks for applied; never raises."""
        beat = self._beat()
        self.last = beat
        return beat

    def _beat(self) -> Beat:
        answer = _put(self._server, self._path, self.report(), self.token,
                      what="heartbeat", url=self.url, interval=self.interval)
        if isinstance(answer, Beat):
            return answer
        try:
            state = service_state(answer)
        except InvalidAnswer as exc:
            LOG.error("heartbeat to %s: %s", self.url, exc)
            return Beat(problem=str(exc))
        return Beat(state=state, destroyed=self.apply(state))


# A fleet's heartbeat request stays about this small: half the compute API's default
# [api] max_request_body_size (1 MiB), which the API refuses a larger body over.
MAX_BEAT_BODY = 512 * 1024


def _put(server: transport.Server, path: str, body: object, token: str | None, *,
         what: str, url: str, interval: float) -> Any:
    """PUT a heartbeat (the same state again: safe to send twice, so it is sent once
    more should the API close a kept-alive connection without answering) and return
    the parsed answer; a Beat naming the problem when there is none to read."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token:
        headers[TOKEN_HEADER] = token
    try:
        reply = server.request("PUT", path, body=json.dumps(body).encode(), headers=headers,
                               resend=True)
    except transport.TransportError as exc:
        LOG.warning("%s to %s failed, trying again in %gs: %s", what, url, interval, exc)
        return Beat(problem=f"{url}: {exc}")
    if reply.status != 200:
        LOG.warning("%s to %s answered %d, trying again in %gs: %s", what, url, reply.status,
                    interval, reply.data[:300].decode("utf-8", "replace"))
        return Beat(problem=f"{url} answered {reply.status}")
    try:
        return json.loads(reply.data)
    except ValueError:
        LOG.error("%s to %s: the answer is not JSON", what, url)
        return Beat(problem="the answer is not JSON")


class FleetHeartbeat(_Beating):
    """The heartbeat of many hosts of one process (a fleet): one ``PUT
    /internal/services`` per beat for all of them, in parts of at most ``chunk`` hosts
    and about ``max_body`` bytes. A host's full report is sent when it is new or
    changed (or the API forgot it); otherwise only its name, in ``alive``. Hosts in
    ``silent`` are left out, so the API sees them go down as it would see a dead
    agent."""

    def __init__(self, reporters: Mapping[str, HostReporter], api_url: str, *,
                 token: str | None, interval: float, timeout: float,
                 chunk: int = 2000, max_body: int = MAX_BEAT_BODY) -> None:
        super().__init__(api_url, interval=interval, timeout=timeout,
                         thread_name="fleet-heartbeat")
        self.reporters = reporters
        self.url = f"{api_url.rstrip('/')}/internal/services"
        self.token = token
        self.chunk = chunk
        self.max_body = max_body
        self.silent: set[str] = set()
        self._acknowledged: dict[str, Json] = {}  # host -> the report the API has

    def beat(self) -> Beat:
        """One beat of every host that is not silent; never raises."""
        hosts = [h for h in self.reporters if h not in self.silent]
        outcome = Beat()
        for reports in self._parts(hosts):
            part = self._beat(reports)
            outcome.destroyed.extend(part.destroyed)
            if part.problem is not None:
                outcome.problem = part.problem
        self.last = outcome
        return outcome

    def _parts(self, hosts: list[str]) -> Iterator[dict[str, Json | None]]:
        """The beat's requests: {host: its full report, or None when the API has it},
        at most ``chunk`` hosts and about ``max_body`` bytes each. A fleet's first
        beat reports every host in full (about a kilobyte each with the libvirt
        groups' refused traits): 2,000 of them were 2 MB, which the compute API
        refuses ([api] max_request_body_size, 1 MiB by default)."""
        part: dict[str, Json | None] = {}
        size = 0
        for host in hosts:
            report = self.reporters[host].report()
            if self._acknowledged.get(host) == report:
                wanted: Json | None = None
                cost = len(host) + 4
            else:
                wanted = report
                cost = len(host) + len(json.dumps(report)) + 12
            if part and (len(part) >= self.chunk or size + cost > self.max_body):
                yield part
                part, size = {}, 0
            part[host] = wanted
            size += cost
        if part:
            yield part

    def _beat(self, reports: dict[str, Json | None]) -> Beat:
        hosts = list(reports)
        full: list[Json] = []
        alive: list[str] = []
        sent: dict[str, Json] = {}
        for host, report in reports.items():
            if report is None:
                alive.append(host)
            else:
                sent[host] = report
                full.append({"host": host, **report})
        answer = _put(self._server, "/internal/services", {"services": full, "alive": alive},
                      self.token, what="fleet heartbeat", url=self.url,
                      interval=self.interval)
        if isinstance(answer, Beat):
            return answer
        try:
            states = answer["services"]
            unknown = set(answer.get("unknown", ()))
        except (KeyError, TypeError, AttributeError) as exc:
            LOG.error("fleet heartbeat to %s: unreadable answer: %s", self.url, exc)
            return Beat(problem=f"unreadable answer: {exc}")
        self._acknowledged.update(sent)
        for host in unknown:
            self._acknowledged.pop(host, None)  # report in full next time
        destroyed: list[str] = []
        for host in hosts:
            if host in unknown:
                continue
            found = states.get(host)
            try:
                state = (service_state({"service": found, "destroy": found.get("destroy", [])})
                         if found is not None else ServiceState(disabled=False))
            except InvalidAnswer as exc:
                LOG.error("fleet heartbeat: answer for %s: %s", host, exc)
                continue
            reporter = self.reporters[host]
            if state.disabled != reporter.agent.disabled or state.destroy or \
                    reporter.destroy_pending:
                destroyed.extend(reporter.apply(state))
        return Beat(destroyed=destroyed)
