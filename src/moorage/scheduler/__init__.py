"""The scheduler: request spec, request filters (image properties become required
traits), host filters, weighers, and select_destinations with its claim.

The names below are loaded when first used, so that importing a light module of the
package (decisions, for the command line) does not load the whole scheduler and its
placement client."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from moorage.scheduler.filter_records import FilterRecord
    from moorage.scheduler.manager import Scheduler
    from moorage.scheduler.request_filters import RequestFilterFailed
    from moorage.scheduler.types import (
        Aggregate,
        AllocationRequest,
        Catalog,
        Destination,
        HostInfo,
        NoValidHost,
        RequestSpec,
        Selection,
    )

_HOMES = {
    "Scheduler": "manager",
    "RequestFilterFailed": "request_filters",
    "FilterRecord": "filter_records",
    **dict.fromkeys(("Aggregate", "AllocationRequest", "Catalog", "Destination",
                     "HostInfo", "NoValidHost", "RequestSpec", "Selection"), "types"),
}

__all__ = [
    "Aggregate",
    "AllocationRequest",
    "Catalog",
    "Destination",
    "FilterRecord",
    "HostInfo",
    "NoValidHost",
    "RequestFilterFailed",
    "RequestSpec",
    "Scheduler",
    "Selection",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
