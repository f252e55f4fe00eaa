"""Times as nova's API writes them, in its two spellings. Clients parse nova's
spelling; the same spelling here keeps them parsing ours.

- ``nova_time``: the times it serializes from its objects (a key pair's ``created_at``,
  a migration's, a zone's services' ``updated_at``): oslo.serialization's
  ``%Y-%m-%dT%H:%M:%S.%f``, naive UTC with microseconds and no offset.
- ``iso_time``: the times its views format themselves (a server's ``created``,
  ``updated``): nova's ``utils.isotime``, to the second, with ``Z``.
"""

from __future__ import annotations

import datetime

NOVA_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"
ISO_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


# Both functions write the formats' text by ``isoformat`` (about half ``strftime``'s
# cost; a server listing writes two or three times per server) for the naive times of
# years 1000 on, and leave the others, which ``isoformat`` would write differently, to
# ``strftime``.


def nova_time(value: datetime.datetime | None) -> str | None:
    """``value`` (naive UTC) as nova answers it; None stays None (JSON null)."""
    if value is None:
        return None
    if value.tzinfo is None and value.year >= 1000:
        return value.isoformat(timespec="microseconds")
    return value.strftime(NOVA_TIME_FORMAT)


def iso_time(value: datetime.datetime | None) -> str | None:
    """``value`` (naive UTC) as nova's views write it; None stays None (JSON null)."""
    if value is None:
        return None
    if value.tzinfo is None and value.year >= 1000:
        return value.isoformat(timespec="seconds") + "Z"
    return value.strftime(ISO_TIME_FORMAT)
