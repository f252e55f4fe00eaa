"""What a driver says about one trait, and where the answer came from."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Source(enum.StrEnum):
    """Where a driver learned that a trait is (not) supported."""

    DOMAIN_CAPABILITIES = "domain capabilities"
    HOST_CAPABILITIES = "host capabilities"
    DRIVER_TABLE = "driver table"
    CONFIGURATION = "configuration"
    NODE_RECORD = "node record"
    HYPERVISOR = "hypervisor"
    DEVICE_LIST = "emulator device list"
    SERVICE = "service"


@dataclass(frozen=True)
class TraitReport:
    """``trait`` is supported (add it) or not (remove it), says ``source``.

    ``detail`` says which entry: a capability key, the domain capabilities of one
    machine type, an option, a node record.
    """

    trait: str
    supported: bool
    source: Source
    detail: str = ""
