"""How the conductor reaches compute agents: over HTTP, or in process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from moorage.virt.driver import Guest


class SpawnFailed(Exception):
    """A build failed on its host. ``kind`` is the exception (UnsupportedHardware, ...);
    ``feature`` what the host could not provide, when that is the cause.
    ``reschedule`` False means another host would fail the same way (a flavor and
    image that contradict each other): the build stops instead of trying alternates."""

    def __init__(self, host: str, kind: str, message: str, feature: str | None = None,
                 reschedule: bool = True) -> None:
        super().__init__(f"{host}: {kind}: {message}")
        self.host = host
        self.kind = kind
        self.message = message
        self.feature = feature
        self.reschedule = reschedule


class AgentUnreachable(Exception):
    """The agent of a host did not answer."""


@dataclass(frozen=True, order=True)
class Fence:
    """Which operation of a guest's server a call about the guest belongs to, and its
    takeover: a later operation, or the same one taken over, orders after. An agent
    refuses a call whose fence orders before the newest it has seen for that guest
    (``Fenced``), so a conductor that was paused and resumes after a successor took
    its operation over cannot spawn or destroy what the successor decided."""

    operation: int
    takeover: int

    def __str__(self) -> str:
        return f"{self.operation}.{self.takeover}"

    @classmethod
    def parse(cls, text: str) -> Fence:
        """``operation.takeover``; ValueError for anything else."""
        operation, dot, takeover = text.partition(".")
        if not dot or not operation.isdigit() or not takeover.isdigit():
            raise ValueError(f"a fence is OPERATION.TAKEOVER, not {text!r}")
        return cls(int(operation), int(takeover))


class Fenced(Exception):
    """The agent refused the call: a newer operation (or a successor) has been there."""


class AgentClient(Protocol):
    """The calls the conductor makes on a host's compute agent; each call about a guest
    may carry the ``Fence`` of the operation it belongs to."""

    def spawn(self, host: str, guest: Guest, fence: Fence | None = None) -> None:
        """Boot ``guest``; SpawnFailed (or AgentUnreachable, or Fenced) if it could not."""

    def destroy(self, host: str, instance_uuid: str, fence: Fence | None = None) -> None:
        """Remove a guest; nothing if it is not there."""

    def has_guest(self, host: str, instance_uuid: str, fence: Fence | None = None) -> bool:
        """Does the host run this guest? (AgentUnreachable if it cannot say.)"""

    def set_disabled(self, host: str, disabled: bool) -> None:
        """Tell the agent its service is (no longer) disabled."""
