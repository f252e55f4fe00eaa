"""A conductor that was only paused, not dead, cannot undo its successor's work.

Conductor A carries out eight builds, deletes or cold migrations and is stopped by
SIGSTOP at a named step of one of them (``failpoints``: every thread of the process
stops there, wherever it was). Its leases run out; conductor B takes the operations
over and brings every server to rest. Then A resumes: its transitions are refused
(the fence is lost) and its destructive steps find the operations no longer its own,
so guests, claims and migration records stay exactly as B left them.

Every service is its own process: placement, a fleet of fake hosts, a compute API
that only records work, and the two conductors, over PostgreSQL (the database of
several processes: a session paused inside a transaction has its locks released after
``moorage.db.engine.IDLE_IN_TRANSACTION``; on SQLite, a process stopped while it holds
the write turn holds up every writer until it resumes)."""

from __future__ import annotations

import signal
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.functional.servers.process_cloud import ProcessCloud, wait_for

SERVERS = 8
LEASE = 2.0
SETTLE = 60.0
# After A resumes: long enough for it to try what it was doing (its leases are checked
# within a lease's third, its housekeeping polls every 0.2 s).
AFTERWARDS = 3 * LEASE


def _snapshot(cloud: ProcessCloud, servers: list[dict[str, Any]]) -> dict[str, Any]:
    """What the cloud holds for these servers: their states and hosts, every guest,
    every claim, every migration."""
    held = {s["id"]: cloud.placement_get(f"/allocations/{s['id']}")["allocations"]
            for s in servers}
    migrations = cloud.migrations()
    for migration in migrations:
        held[migration["uuid"]] = cloud.placement_get(
            f"/allocations/{migration['uuid']}")["allocations"]
    return {
        "servers": sorted((s["id"], s["status"], s["OS-EXT-STS:task_state"],
                           s.get("OS-EXT-SRV-ATTR:host")) for s in servers),
        "guests": {host: sorted(uuids) for host, uuids in cloud.guests().items()},
        "claims": {consumer: sorted(found) for consumer, found in held.items()},
        "migrations": sorted((m["uuid"], m["status"], m["dest_compute"]) for m in migrations),
    }


def _boot(cloud: ProcessCloud, count: int) -> list[str]:
    return [str(cloud.post("/servers", {"server": {"networks": "none",
        "name": f"vm{n}", "flavorRef": cloud.flavor, "imageRef": cloud.image}})["server"]["id"])
        for n in range(count)]


@pytest.mark.parametrize(("operation", "step"), [
    ("build", "conductor.build.after_spawn"),
    ("delete", "conductor.delete.after_destroy"),
    ("migrate", "conductor.move.after_spawn"),
])
def test_a_paused_conductor_resumes_without_undoing_its_successor(
        tmp_path: Path, postgresql_url: str, operation: str, step: str) -> None:
    with ExitStack() as stack:
        # The API only records the work; conductor processes carry it out.
        cloud = ProcessCloud(tmp_path, stack, run_conductor=False, lease_seconds=LEASE,
                             database_url=postgresql_url)
        if operation != "build":
            builder = cloud.start_conductor()
            uuids = _boot(cloud, SERVERS)
            cloud.wait_settled(SETTLE)
            builder.stop()
        paused = cloud.start_conductor(failpoint=step, action="stop")
        if operation == "build":
            uuids = _boot(cloud, SERVERS)
        for uuid in uuids if operation != "build" else ():
            if operation == "delete":
                assert cloud.call("DELETE", f"/servers/{uuid}").status_code == 204
            else:
                assert cloud.call("POST", f"/servers/{uuid}/action",
                                  {"migrate": None}).status_code == 202
        wait_for(lambda: cloud.fired(step), 60, f"the failpoint {step}")
        time.sleep(LEASE + 1)  # its leases run out while it is stopped
        successor = cloud.start_conductor()
        settled = cloud.wait_settled(SETTLE)
        assert len(settled) == (0 if operation == "delete" else SERVERS), settled
        if operation == "migrate":  # confirmed or rolled back, all at rest
            assert {s["status"] for s in settled} <= {"VERIFY_RESIZE", "ACTIVE"}, settled
        before = _snapshot(cloud, settled)
        assert cloud.consistent(settled) == []

        paused.signal(signal.SIGCONT)
        time.sleep(AFTERWARDS)
        assert paused.running(), "the resumed conductor died:\n" + paused.output()[-3000:]
        after = cloud.wait_settled(SETTLE)
        assert _snapshot(cloud, after) == before
        assert cloud.consistent(after) == []
        # It found out, and said so.
        assert "stopping" in paused.output(), paused.output()[-3000:]
        successor.stop()
