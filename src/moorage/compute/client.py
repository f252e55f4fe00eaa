"""How the conductor reaches compute agents: over HTTP, or in process."""

from __future__ import annotations

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


class AgentClient(Protocol):
    """The calls the conductor makes on a host's compute agent."""

    def spawn(self, host: str, guest: Guest) -> None:
        """Boot ``guest``; SpawnFailed (or AgentUnreachable) if it could not."""

    def destroy(self, host: str, instance_uuid: str) -> None:
        """Remove a guest; nothing if it is not there."""

    def has_guest(self, host: str, instance_uuid: str) -> bool:
        """Does the host run this guest? (AgentUnreachable if it cannot say.)"""

    def set_disabled(self, host: str, disabled: bool) -> None:
        """Tell the agent its service is (no longer) disabled."""
