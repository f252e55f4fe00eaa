"""Times as nova's API writes the ones it serializes from its objects (a key pair's
``created_at``, a zone's services' ``updated_at``): oslo.serialization's
``%Y-%m-%dT%H:%M:%S.%f``, naive UTC with microseconds and no offset. Clients parse
nova's spelling; the same spelling here keeps them parsing ours."""

from __future__ import annotations

import datetime

NOVA_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"


def nova_time(value: datetime.datetime | None) -> str | None:
    """``value`` (naive UTC) as nova answers it; None stays None (JSON null)."""
    return value.strftime(NOVA_TIME_FORMAT) if value is not None else None
