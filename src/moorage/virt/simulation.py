"""What the simulated hypervisors share: they can be told to be unreachable.

There is no vCenter and no Ironic on this machine, so the VMware and Ironic
drivers run on simulations (``vmware/simulator.py``, ``ironic/simulator.py``)
named as such. Like the real services behind a broken network, a simulation
can be made unreachable: it then answers every call with SimulatorUnreachable
and the reason, which its driver turns into HypervisorUnavailable, so that the
compute agent reports nothing rather than guess.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from moorage.virt.driver import HypervisorUnavailable


class SimulatorUnreachable(Exception):
    """The simulated service does not answer."""


class Reachability:
    """A simulation that can be made unreachable (``unreachable`` holds the reason)."""

    unreachable: str | None

    def make_unreachable(self, reason: str) -> None:
        self.unreachable = reason

    def make_reachable(self) -> None:
        self.unreachable = None

    def answer(self) -> None:
        """Called first by every call of the simulated API."""
        if self.unreachable is not None:
            raise SimulatorUnreachable(self.unreachable)


@contextmanager
def reaching(service: str) -> Iterator[None]:
    """Calls to a simulated ``service``: unreachable is HypervisorUnavailable, with why."""
    try:
        yield
    except SimulatorUnreachable as exc:
        raise HypervisorUnavailable(f"{service}: {exc}") from None
