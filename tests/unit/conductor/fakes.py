"""A simulated cloud for the conductor's tasks: hosts with room for a few guests, the
claims placement would hold, the guests the agents run, and the scheduler's choice
among them. Named as what it is: a simulation standing in for placement, the agents
and the scheduler, so that every path of every operation (and every point a
conductor can die or be paused at) can be walked in milliseconds, against the real
lifecycle tables on a real database.

``FakeCloud.trip`` makes the n-th call into the simulation raise ``Crash`` (a
conductor dying there, before the call took effect or after it did and before its
answer arrived: BaseException, which no task catches) or, once the call took effect,
block until released (a conductor paused between two steps)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from moorage.compute.agent import GuestFences
from moorage.compute.client import (
    AgentUnreachable,
    Fence,
    Fenced,
    PowerAction,
    PowerFailed,
    SpawnFailed,
)
from moorage.placement.client import Holding
from moorage.scheduler.decisions import Decisions
from moorage.scheduler.types import (
    Destination,
    HostInfo,
    Liveness,
    NoValidHost,
    RequestSpec,
    Selection,
    Unschedulable,
)
from moorage.virt.driver import Guest


class Crash(BaseException):
    """The conductor died here."""


def provider(host: str) -> str:
    return f"rp-{host}"


@dataclass
class Trip:
    """What happens at the n-th call: a crash (``after``: once the call took effect), or
    a pause once it took effect, until ``resume`` is set."""

    at: int
    pause: bool = False
    # Once the call took effect (True), or before it went out.
    after: bool = False
    reached: threading.Event = field(default_factory=threading.Event)
    resume: threading.Event = field(default_factory=threading.Event)


class FakeCloud:
    """Hosts (each with ``slots`` for guests), claims and guests."""

    def __init__(self, hosts: Mapping[str, int]) -> None:
        self.slots = dict(hosts)
        self.up = dict.fromkeys(hosts, True)
        # consumer -> (host, generation): one allocation per consumer on one host.
        self.claims: dict[str, tuple[str, int]] = {}
        self.guests: dict[str, set[str]] = {host: set() for host in hosts}
        # host -> the SpawnFailed its driver raises; hosts whose agent does not answer.
        self.refusing: dict[str, SpawnFailed] = {}
        self.unreachable: set[str] = set()
        self.fences: dict[str, GuestFences] = {}
        self.calls = 0
        self.trip: Trip | None = None
        self._guard = threading.RLock()

    # -- the simulation's own bookkeeping ------------------------------------------
    def step(self) -> None:
        """Every call into the simulation counts, here at its start; a trip armed for
        this count before the call takes effect fires."""
        with self._guard:
            self.calls += 1
            trip = self.trip if self.trip is not None and self.calls == self.trip.at else None
        if trip is not None and not trip.after:
            trip.reached.set()
            if not trip.pause:
                raise Crash(f"crash at call {trip.at}")
            trip.resume.wait(30)

    def done(self) -> None:
        """The call took effect: a trip armed for it after that fires now."""
        trip = self.trip
        if trip is None or self.calls != trip.at or not trip.after:
            return
        trip.reached.set()
        if not trip.pause:
            raise Crash(f"crash after call {trip.at}")
        trip.resume.wait(30)

    def used(self, host: str) -> int:
        return sum(1 for where, _ in self.claims.values() if where == host)

    def fits(self, host: str, consumer: str) -> bool:
        held = self.claims.get(consumer)
        already = 1 if held is not None and held[0] == host else 0
        return self.up[host] and self.used(host) - already < self.slots[host]

    def hosts_running(self, uuid: str) -> list[str]:
        return sorted(host for host, guests in self.guests.items() if uuid in guests)


class FakePlacement:
    def __init__(self, cloud: FakeCloud) -> None:
        self.cloud = cloud
        self.url = "simulated://placement"

    def allocations(self, consumer: str) -> tuple[dict[str, dict[str, int]], int | None]:
        self.cloud.step()
        held = self.cloud.claims.get(consumer)
        self.cloud.done()
        if held is None:
            return {}, None
        return {provider(held[0]): {"VCPU": 1}}, held[1]

    def holding(self, consumer: str) -> Holding | None:
        self.cloud.step()
        held = self.cloud.claims.get(consumer)
        self.cloud.done()
        if held is None:
            return None
        return Holding({provider(held[0]): {"VCPU": 1}}, held[1], "p", "u")

    def clear_at(self, consumer: str, holding: Holding,
                 confirm: Callable[[], None] | None = None) -> bool:
        self.cloud.step()
        if confirm is not None:
            confirm()
        with self.cloud._guard:
            held = self.cloud.claims.get(consumer)
            if held is not None and held[1] != holding.generation:
                return False
            self.cloud.claims.pop(consumer, None)
        self.cloud.done()
        return True

    def move_allocations(self, source: str, target: str, project_id: str,
                         user_id: str, confirm: Callable[[], None] | None = None) -> bool:
        """As placement's POST /allocations: made at the generations read before
        ``confirm``, refused (False) when either moved since."""
        self.cloud.step()
        read = (self.cloud.claims.get(source), self.cloud.claims.get(target))
        if read[0] is None:
            self.cloud.done()
            return True
        if confirm is not None:
            confirm()
        with self.cloud._guard:
            if (self.cloud.claims.get(source), self.cloud.claims.get(target)) != read:
                return False
            host, _ = self.cloud.claims.pop(source)
            self.cloud.claims[target] = (host, read[1][1] + 1 if read[1] else 1)
        self.cloud.done()
        return True

    def rewrite_at(self, consumer: str, holding: Holding,
                   confirm: Callable[[], None] | None = None) -> bool | None:
        self.cloud.step()
        if confirm is not None:
            confirm()
        with self.cloud._guard:
            held = self.cloud.claims.get(consumer)
            if held is None or held[1] != holding.generation:
                return None
            self.cloud.claims[consumer] = (held[0], held[1] + 1)
        self.cloud.done()
        return True

    def delete_allocations(self, consumer: str) -> None:
        self.cloud.step()
        self.cloud.claims.pop(consumer, None)
        self.cloud.done()


class FakeAgents:
    """The agents, with their fences (``GuestFences``, the agents' own)."""

    def __init__(self, cloud: FakeCloud) -> None:
        self.cloud = cloud

    def _reach(self, host: str, uuid: str, fence: Fence | None) -> None:
        self.cloud.step()
        if host in self.cloud.unreachable or not self.cloud.up[host]:
            raise AgentUnreachable(f"http://{host}.example:9000: connection refused")
        fences = self.cloud.fences.setdefault(host, GuestFences())
        if not fences.admit(uuid, fence):
            raise Fenced(f"{host}: {fence} is older than the newest at {uuid}")

    def spawn(self, host: str, guest: Guest, fence: Fence | None = None) -> None:
        self._reach(host, guest.uuid, fence)
        refusal = self.cloud.refusing.get(host)
        if refusal is not None:
            raise refusal
        self.cloud.guests[host].add(guest.uuid)
        self.cloud.done()

    def destroy(self, host: str, instance_uuid: str, fence: Fence | None = None) -> None:
        self._reach(host, instance_uuid, fence)
        self.cloud.guests[host].discard(instance_uuid)
        self.cloud.done()

    def has_guest(self, host: str, instance_uuid: str, fence: Fence | None = None) -> bool:
        self._reach(host, instance_uuid, fence)
        found = instance_uuid in self.cloud.guests[host]
        self.cloud.done()
        return found

    def power(self, host: str, instance_uuid: str, action: PowerAction,
              fence: Fence | None = None) -> None:
        """A guest stopped, started or rebooted where it runs (its power is not kept:
        what runs, in placement's sense, is what is defined)."""
        self._reach(host, instance_uuid, fence)
        if instance_uuid not in self.cloud.guests[host]:
            raise PowerFailed(host, "GuestNotFound", f"no guest {instance_uuid} on {host}")
        self.cloud.done()

    def console_output(self, host: str, instance_uuid: str) -> str:
        return ""

    def set_disabled(self, host: str, disabled: bool) -> None:
        self.cloud.step()


class FakeCatalog:
    def __init__(self, cloud: FakeCloud) -> None:
        self.cloud = cloud

    def hosts(self) -> dict[str, HostInfo]:
        return {host: HostInfo(host, (host,), True, Liveness.fixed(up), "fake")
                for host, up in self.cloud.up.items()}

    def aggregates(self) -> list[object]:
        return []

    def aggregates_of(self, host: str) -> list[object]:
        return []

    def node_of_provider(self, provider_uuid: str) -> tuple[str, str] | None:
        host = provider_uuid.removeprefix("rp-")
        return (host, host) if host in self.cloud.slots else None


class FakeScheduler:
    """The scheduler's contract: choose hosts with room (not ignored, the requested one
    when asked), claim the first, return the others as alternates."""

    def __init__(self, cloud: FakeCloud, max_alternates: int = 2) -> None:
        self.cloud = cloud
        self.max_alternates = max_alternates

    def _destination(self, host: str) -> Destination:
        return Destination(host, host, provider(host), {provider(host): {"VCPU": 1}})

    def select_destinations(self, spec: RequestSpec,
                            confirm: Callable[[], None] | None = None) -> Selection:
        self.cloud.step()  # the candidates asked for
        if confirm is not None:
            confirm()  # before the claim
        with self.cloud._guard:
            order = [h for h in sorted(self.cloud.slots)
                     if h not in spec.ignore_hosts and self.cloud.fits(h, spec.instance_uuid)
                     and (spec.requested_host is None or h == spec.requested_host)]
            if not order:
                reason = f"none of {len(self.cloud.slots)} hosts has room"
                raise NoValidHost(Unschedulable(reason, reason,
                                                Decisions(deciding="VCPU")))
            first = order[0]
            held = self.cloud.claims.get(spec.instance_uuid)
            self.cloud.claims[spec.instance_uuid] = (first, held[1] + 1 if held else 1)
        self.cloud.done()
        alternates = [self._destination(h) for h in order[1:1 + self.max_alternates]]
        return Selection(self._destination(first), alternates, candidates=len(order),
                         hosts_passing_filters=len(order),
                         decisions=Decisions(chosen=first))

    def claim(self, spec: RequestSpec, destination: Destination,
              confirm: Callable[[], None] | None = None) -> bool:
        self.cloud.step()
        if confirm is not None:
            confirm()
        with self.cloud._guard:
            if not self.cloud.fits(destination.host, spec.instance_uuid):
                return False
            held = self.cloud.claims.get(spec.instance_uuid)
            self.cloud.claims[spec.instance_uuid] = (destination.host,
                                                     held[1] + 1 if held else 1)
        self.cloud.done()
        return True

    def move_claim(self, spec: RequestSpec, destination: Destination, generation: int,
                   confirm: Callable[[], None] | None = None) -> bool | None:
        self.cloud.step()
        if confirm is not None:
            confirm()
        with self.cloud._guard:
            held = self.cloud.claims.get(spec.instance_uuid)
            if held is None or held[1] != generation:
                return None
            if not self.cloud.fits(destination.host, spec.instance_uuid):
                return False
            self.cloud.claims[spec.instance_uuid] = (destination.host, generation + 1)
        self.cloud.done()
        return True

    def verify_rebuild(self, spec: RequestSpec, host: str) -> None:
        self.cloud.step()
        self.cloud.done()
