"""The scheduler: request spec, request filters (image properties become required
traits), host filters, weighers, and select_destinations with its claim."""

from moorage.scheduler.manager import Scheduler
from moorage.scheduler.request_filters import RequestFilterFailed
from moorage.scheduler.types import (
    Aggregate,
    AllocationRequest,
    Catalog,
    Destination,
    FilterRecord,
    HostInfo,
    NoValidHost,
    RequestSpec,
    Selection,
)

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
