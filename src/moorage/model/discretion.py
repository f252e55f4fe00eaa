"""How many hosts a caller may be told about (pure).

A count of hosts is an identity when it is small: "1 host has CUSTOM_GPU_A100" points
at one machine, and "excludes 499 of 500 hosts" says the same by subtraction. Users
who may not see the cloud's hosts (nova's ``os_compute_api:servers:show:host_status``)
are never told a count of hosts below ``[api] capability_host_floor``, zero included
(telling none from one would point at the one): such a count is hidden (``None`` in
JSON) or said as "fewer than N" in words. Administrators are told every count exactly
(``EXACT``).

Every count of hosts a user reads (the capability catalogue, an image's admission,
a plan, a NoValidHost and a server's scheduling record) passes through a ``Floor``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Floor:
    """Counts of hosts below ``hosts`` are not told (``hosts`` <= 1: every count is)."""

    hosts: int

    @property
    def exact(self) -> bool:
        return self.hosts <= 1

    def count(self, n: int | None) -> int | None:
        """``n`` if it may be told, else None (fewer than the floor)."""
        if n is None or self.exact or n >= self.hosts:
            return n
        return None

    def words(self, n: int) -> str:
        """``n``, or "fewer than 3" when it may not be told."""
        return self.said(self.count(n))

    def said(self, told: int | None) -> str:
        """A count as ``count`` told it (None: below the floor), in words."""
        return str(told) if told is not None else f"fewer than {self.hosts}"

    def split(self, part: int, whole: int) -> tuple[int | None, int | None]:
        """(``part``, ``whole - part``) as they may be told: both or neither, as either
        gives the other by subtraction from ``whole``."""
        rest = whole - part
        if self.count(part) is None or self.count(rest) is None:
            return None, None
        return part, rest


EXACT = Floor(1)


def rounded_down(amount: int) -> int:
    """``amount`` rounded down to 1, 2 or 5 times a power of ten (0 stays 0): a sum of
    free capacity a user reads, so that no difference of two sums is one host's."""
    if amount <= 0:
        return 0
    scale: int = 10 ** (len(str(amount)) - 1)
    lead = amount // scale
    return scale * (5 if lead >= 5 else 2 if lead >= 2 else 1)
