"""How long a conductor may trust, without asking the database, that it still holds
each of its operations.

Why: every side effect that destroys (a guest, a claim, a migration's status) must
run only while the operation is still this conductor's, checked at that moment. A
conductor that was only paused (SIGSTOP, a stalled VM, a long GC) must not resume
and undo what its successor did after taking the operation over. Asking the
database before each step would cost a round trip per step on the boot path.

Coherence: a lease is granted until a moment of the database's clock
(``lease_until``); this process translates it to its own monotonic clock when it
learns of it (the claim, the accept handed over in process, each renewal, whose
moment is taken *before* the statement is sent). Nobody can take an operation over
before its lease runs out, so while the translated moment is ahead of now by more
than ``margin``, the operation is still this conductor's. A paused process sees its
monotonic clock jump past the moment when it resumes and asks the database
(``Task.ensure_owned``), which tells it whether a successor took the operation.
Renewal only extends operations still held (``operations.renew`` returns their
ids), so an operation taken over is never trusted again.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterable


class Leases:
    """The moments (monotonic) until which this conductor's operations are its own."""

    def __init__(self, lease_seconds: float, margin: float | None = None) -> None:
        self.lease_seconds = lease_seconds
        # Renewed every third of a lease, a lease has at least two thirds left; ask
        # the database when less than a third is.
        self.margin = lease_seconds / 3 if margin is None else margin
        self._until: dict[int, float] = {}
        self._guard = threading.Lock()

    def granted(self, operation_ids: Iterable[int], since: float) -> None:
        """Leases of ``lease_seconds`` granted by a statement sent at ``since``
        (monotonic): a renewal, or a single operation's."""
        until = since + self.lease_seconds
        with self._guard:
            for operation_id in operation_ids:
                self._until[operation_id] = until

    def granted_until(self, operation_id: int, lease_until: datetime.datetime,
                      now: datetime.datetime) -> None:
        """A lease that runs until ``lease_until`` (the database's clock, naive UTC),
        learnt at ``now`` of that clock: a claim, or an accept handed over."""
        left = (lease_until - now).total_seconds()
        with self._guard:
            self._until[operation_id] = time.monotonic() + left

    def held(self, operation_id: int) -> bool:
        """Is the operation surely still this conductor's, without asking?"""
        with self._guard:
            until = self._until.get(operation_id)
        return until is not None and until - self.margin > time.monotonic()

    def forget(self, operation_id: int) -> None:
        with self._guard:
            self._until.pop(operation_id, None)
