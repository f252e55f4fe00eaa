"""The timestamps the tables store: naive UTC (no offset in the column, the same on
SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime


def utcnow() -> datetime.datetime:
    """Naive UTC to the second, as the ``created_at`` and ``updated_at`` columns store."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)


def utcnow_precise() -> datetime.datetime:
    """Naive UTC to the microsecond: leases (seconds long) and a server's
    ``updated_at``, which ``GET /servers?changes-since=`` compares."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
