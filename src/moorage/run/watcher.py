"""Waiting for many servers at once, as a dashboard does: one poller of ``GET
/servers/detail?changes-since=...&status=ACTIVE&status=ERROR...`` (the servers that came
to rest since its last look) wakes whoever waits for one, instead of every waiter
polling its own server. Asking only for the statuses at rest keeps each answer to the
servers that finished: a burst of builds changes each server three or four times on
its way, and the poller need not read every step.

A change committed after a later poll had started is in no answer (``updated_at`` is
stamped before the commit, as in nova), so servers waited on for longer than
``straggler_after`` are also looked at one by one (a deleted one is found so: 404).

Each server is meant to be waited for once, after the request that set it going: a
server at rest is kept until its waiter asks, since it may come to rest before the
waiter does, so a second wait for the same server may be handed a state from before
the second request (polls overlap). ``moorage run`` waits once per server.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Mapping
from typing import Any

from moorage.api.client import ComputeApiClient, ComputeApiError
from moorage.lifecycle import machine
from moorage.lifecycle.states import ServerStatus

# The statuses asked for: a server at rest that is not gone (the API lists DELETED
# ones only under changes-since, by their own status filter).
LISTED_AT_REST = sorted(machine.AT_REST - {ServerStatus.DELETED})


class ServerWatcher:
    """Polls a compute API (admin token) every ``interval`` seconds until ``stop``."""

    def __init__(self, api_url: str, token: str = "admin", *, interval: float = 0.02,
                 overlap: float = 0.05, straggler_after: float = 1.0) -> None:
        self.interval = interval
        # Each poll asks from this long before the previous one began: a change
        # stamped before that poll but committed after it is in the next answer.
        self.overlap = datetime.timedelta(seconds=overlap)
        self.straggler_after = straggler_after
        self._client = ComputeApiClient(api_url, token)
        self._waiting: dict[str, tuple[threading.Event, float]] = {}
        self._rested: dict[str, dict[str, Any] | None] = {}  # None: deleted
        # The state each server was last handed on in (status and "updated"): the
        # polls overlap, so most servers come back in two or three answers, and
        # nobody waits for them any more.
        self._handed: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._since = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=5)
        self._thread = threading.Thread(target=self._run, daemon=True, name="server-watcher")

    def start(self) -> ServerWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def wait(self, uuid: str, timeout: float) -> dict[str, Any] | None:
        """The server once at rest (a deleted one: None), or TimeoutError."""
        with self._lock:
            if uuid in self._rested:
                return self._rested.pop(uuid)
            event, _since = self._waiting.setdefault(uuid, (threading.Event(),
                                                           time.monotonic()))
        if not event.wait(timeout):
            with self._lock:
                self._waiting.pop(uuid, None)
            raise TimeoutError(f"server {uuid} not at rest after {timeout:g}s")
        with self._lock:
            return self._rested.pop(uuid, None)

    def _settle(self, server: Mapping[str, Any]) -> None:
        """Under the lock: record a server that came to rest, wake its waiter."""
        uuid = str(server["id"])
        if not machine.at_rest(server["status"], server.get("OS-EXT-STS:task_state")):
            return
        state = f"{server['status']} {server.get('updated')}"
        if self._handed.get(uuid) == state and uuid not in self._waiting:
            return  # handed on already, seen again in an overlapping poll
        self._handed[uuid] = state
        self._rested[uuid] = (None if server["status"] == ServerStatus.DELETED
                              else dict(server))
        waiting = self._waiting.pop(uuid, None)
        if waiting is not None:
            waiting[0].set()

    def _run(self) -> None:
        polls = 0
        while not self._stop.wait(self.interval):
            polls += 1
            try:
                if polls % max(1, round(self.straggler_after / self.interval)) == 0:
                    self._stragglers()
                self._poll()
            except ComputeApiError:
                continue  # the API restarting, for instance: look again

    def _poll(self) -> None:
        started = datetime.datetime.now(datetime.UTC)
        servers = self._client.servers([
            ("all_tenants", "1"), ("changes-since", self._since.isoformat()),
            *(("status", str(status)) for status in LISTED_AT_REST)])
        # From a little before this poll on (clocks of one machine); stragglers are
        # looked at one by one.
        self._since = started - self.overlap
        with self._lock:
            for server in servers:
                self._settle(server)

    def _stragglers(self) -> None:
        now = time.monotonic()
        with self._lock:
            late = [u for u, (_e, since) in self._waiting.items()
                    if now - since > self.straggler_after]
        for uuid in late:
            try:
                server = self._client.server(uuid)
            except ComputeApiError as exc:
                if exc.not_found:
                    with self._lock:
                        self._settle({"id": uuid, "status": "DELETED"})
                continue
            with self._lock:
                self._settle(server)
