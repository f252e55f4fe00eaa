"""How the conductor reaches compute agents: over HTTP, or in process."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from moorage.virt.driver import ComputeDriver, Guest


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


class PowerAction(StrEnum):
    """What the conductor asks of a guest's power (``POST /guests/{uuid}/power``)."""

    STOP = "stop"
    START = "start"
    REBOOT_SOFT = "reboot_soft"
    REBOOT_HARD = "reboot_hard"

    def carry_out(self, driver: ComputeDriver, instance_uuid: str) -> None:
        """Have ``driver`` do it (its exceptions as they are)."""
        if self is PowerAction.STOP:
            driver.power_off(instance_uuid)
        elif self is PowerAction.START:
            driver.power_on(instance_uuid)
        else:
            driver.reboot(instance_uuid, hard=self is PowerAction.REBOOT_HARD)


class PowerFailed(Exception):
    """The host could not do a power action: ``kind`` is the driver's exception
    (GuestNotFound, NotImplementedError, libvirtError...)."""

    def __init__(self, host: str, kind: str, message: str) -> None:
        super().__init__(f"{host}: {kind}: {message}")
        self.host = host
        self.kind = kind
        self.message = message


class ConsoleUnavailable(Exception):
    """The host keeps no console output of the guest: ``missing`` True when it runs no
    such guest, False when its driver keeps none."""

    def __init__(self, message: str, *, missing: bool) -> None:
        super().__init__(message)
        self.missing = missing


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

    def power(self, host: str, instance_uuid: str, action: PowerAction,
              fence: Fence | None = None) -> None:
        """Stop, start or reboot a guest; PowerFailed (or AgentUnreachable, Fenced)."""

    def console_output(self, host: str, instance_uuid: str) -> str:
        """The guest's console output; ConsoleUnavailable (or AgentUnreachable)."""

    def host_uptime(self, host: str) -> str | None:
        """The host's uptime line; None when its driver cannot tell (or
        AgentUnreachable)."""

    def set_disabled(self, host: str, disabled: bool) -> None:
        """Tell the agent its service is (no longer) disabled."""
