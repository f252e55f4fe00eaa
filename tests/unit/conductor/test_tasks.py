"""Each operation's path and each of its failure paths, carried out by the real tasks
and conductor on the real lifecycle tables, against a simulated cloud: what the
server ends as, and what the hosts run and placement holds for it."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

import pytest

from moorage.compute.client import SpawnFailed
from moorage.conductor.tasks.base import Clients, Job, Task
from moorage.db.database import Database
from moorage.lifecycle import history
from moorage.lifecycle.states import MigrationStatus, OperationKind, ServerStatus, TaskState
from moorage.lifecycle.store import IllegalTransition
from moorage.model.codec import image_to_json
from moorage.model.discretion import EXACT
from tests.unit.conductor.fakes import Crash, Trip
from tests.unit.conductor.world import BIG, OTHER, World, new_database

S = ServerStatus
REFUSED = SpawnFailed("h1", "UnsupportedHardware", "no e1000 NIC on h1 (qemu 7.2.22)",
                      "COMPUTE_NET_VIF_MODEL_E1000")
_IDS = itertools.count()


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    db = new_database(tmp_path_factory.mktemp("tasks") / "api.sqlite")
    yield db
    db.dispose()


@pytest.fixture
def world(database: Database) -> World:
    return World(database, {"h1": 2, "h2": 2, "h3": 2})


def _uuid() -> str:
    return f"server-{next(_IDS)}"


def _active(world: World) -> str:
    uuid = _uuid()
    world.boot(uuid)
    world.settle(uuid)
    assert world.server(uuid).status == S.ACTIVE
    return uuid


# -- build ---------------------------------------------------------------------------
def test_a_build_runs_where_it_is_claimed(world: World) -> None:
    uuid = _uuid()
    world.boot(uuid)
    world.settle(uuid)
    assert world.holdings(uuid) == {"state": (S.ACTIVE, None, "h1"), "runs": ["h1"],
                                    "claim": "h1", "migrations": []}
    record = world.server(uuid)
    assert [a.result for a in record.attempts] == [history.AttemptResult.OK]
    assert record.scheduling is not None and record.scheduling.operation == "build"
    assert record.launched_at is not None and world.pending(uuid) == []


def test_a_refused_spawn_is_rescheduled_to_an_alternate(world: World) -> None:
    world.cloud.refusing["h1"] = REFUSED
    uuid = _uuid()
    world.boot(uuid)
    world.settle(uuid)
    assert world.holdings(uuid) == {"state": (S.ACTIVE, None, "h2"), "runs": ["h2"],
                                    "claim": "h2", "migrations": []}
    attempts = world.server(uuid).attempts
    assert [(a.host, a.result) for a in attempts] == [("h1", "failed"), ("h2", "ok")]
    assert attempts[0].feature == "COMPUTE_NET_VIF_MODEL_E1000"


def test_every_host_refusing_is_max_retries_exceeded_holding_nothing(world: World) -> None:
    for host in ("h1", "h2", "h3"):
        world.cloud.refusing[host] = REFUSED
    uuid = _uuid()
    world.boot(uuid)
    world.settle(uuid)
    record = world.server(uuid)
    assert (record.status, record.task_state, record.host) == (S.ERROR, None, None)
    assert record.fault is not None and record.fault.kind == "MaxRetriesExceeded"
    assert world.holdings(uuid)["runs"] == [] and uuid not in world.cloud.claims


def test_a_refusal_another_host_would_repeat_stops_the_build(world: World) -> None:
    world.cloud.refusing["h1"] = SpawnFailed("h1", "FlavorImageConflict", "contradiction",
                                             reschedule=False)
    uuid = _uuid()
    world.boot(uuid)
    world.settle(uuid)
    record = world.server(uuid)
    assert record.status == S.ERROR and record.fault is not None
    assert record.fault.kind == "FlavorImageConflict"
    assert [a.host for a in record.attempts] == ["h1"]
    assert uuid not in world.cloud.claims


def test_an_unreachable_agent_leaves_a_cleanup_and_the_build_goes_on(world: World) -> None:
    world.cloud.unreachable.add("h1")
    uuid = _uuid()
    world.boot(uuid)
    world.settle(uuid)
    assert world.holdings(uuid)["state"] == (S.ACTIVE, None, "h2")
    assert uuid in world.cleanups().get("h1", [])


def test_no_room_is_no_valid_host_with_the_schedulers_record(world: World) -> None:
    world.cloud.slots = dict.fromkeys(world.cloud.slots, 0)
    uuid = _uuid()
    world.boot(uuid)
    world.settle(uuid)
    record = world.server(uuid)
    assert record.status == S.ERROR and record.fault is not None
    assert record.fault.kind == "NoValidHost" and record.fault.unschedulable is not None
    assert record.fault.unschedulable.deciding == "VCPU"
    assert record.scheduling is not None and record.scheduling.error
    assert uuid not in world.cloud.claims


def test_a_delete_during_the_spawn_wins_and_the_build_cleans_up(world: World) -> None:
    uuid = _uuid()
    world.boot(uuid)
    # Paused once the guest runs (select, spawn: the second call), before ACTIVE.
    trip, thread = world.paused(world.a, uuid, 2)
    assert trip.reached.wait(10)
    assert world.delete(uuid)
    trip.resume.set()
    thread.join(10)
    # The build found the delete first, and removed its guest and claim itself.
    assert world.cloud.hosts_running(uuid) == [] and uuid not in world.cloud.claims
    world.settle(uuid)
    assert world.server(uuid).status == S.DELETED and world.pending(uuid) == []


# -- delete and rebuild ---------------------------------------------------------------
def test_a_delete_removes_the_guest_and_the_claim(world: World) -> None:
    uuid = _active(world)
    assert world.delete(uuid)
    assert not world.delete(uuid)  # once is enough: already deleting
    world.settle(uuid)
    record = world.server(uuid)
    assert (record.status, record.task_state) == (S.DELETED, None)
    assert record.deleted_at is not None
    assert world.cloud.hosts_running(uuid) == [] and uuid not in world.cloud.claims


def test_a_rebuild_runs_the_new_image_where_the_server_is(world: World) -> None:
    uuid = _active(world)
    assert world.accept(uuid, "rebuild", {"image_id": OTHER.id,
                                          "image": image_to_json(OTHER)})
    world.settle(uuid)
    record = world.server(uuid)
    assert (record.status, record.image_id, record.host) == (S.ACTIVE, OTHER.id, "h1")
    assert world.cloud.hosts_running(uuid) == ["h1"]


def test_a_rebuild_the_host_refuses_is_an_error_naming_the_feature(world: World) -> None:
    uuid = _active(world)
    world.cloud.refusing["h1"] = REFUSED
    assert world.accept(uuid, "rebuild", {"image_id": OTHER.id,
                                          "image": image_to_json(OTHER)})
    world.settle(uuid)
    record = world.server(uuid)
    assert record.status == S.ERROR and record.fault is not None
    assert record.fault.feature == "COMPUTE_NET_VIF_MODEL_E1000"
    assert "qemu" not in record.fault.for_user(EXACT)["message"]


# -- moves ------------------------------------------------------------------------------
def test_a_cold_migration_then_confirm(world: World) -> None:
    uuid = _active(world)
    assert world.accept(uuid, "migrate", {"host": None})
    world.settle(uuid)
    assert world.holdings(uuid) == {
        "state": (S.VERIFY_RESIZE, None, "h2"), "runs": ["h1", "h2"], "claim": "h2",
        "migrations": [(MigrationStatus.FINISHED, "h1", "h2", "h1")]}
    assert world.accept(uuid, "confirmResize")
    world.settle(uuid)
    assert world.holdings(uuid) == {
        "state": (S.ACTIVE, None, "h2"), "runs": ["h2"], "claim": "h2",
        "migrations": [(MigrationStatus.CONFIRMED, "h1", "h2", None)]}


def test_a_resize_then_revert_goes_back_with_the_old_flavor(world: World) -> None:
    uuid = _active(world)
    assert world.accept(uuid, "resize", {"flavor_id": BIG.name,
                                         "flavor": {"name": "big", "vcpus": 2,
                                                    "memory_mb": 1024, "root_gb": 1}})
    world.settle(uuid)
    assert world.server(uuid).flavor_id == "big"
    assert world.accept(uuid, "revertResize")
    world.settle(uuid)
    record = world.server(uuid)
    assert (record.status, record.host, record.flavor_id) == (S.ACTIVE, "h1", "small")
    assert world.holdings(uuid)["runs"] == ["h1"] and world.cloud.claims[uuid][0] == "h1"
    assert world.migrations(uuid)[0].status == MigrationStatus.REVERTED
    assert record.scheduling is not None and record.scheduling.resize is None


def test_a_move_with_nowhere_to_go_leaves_the_server_where_it_was(world: World) -> None:
    uuid = _active(world)
    world.cloud.slots.update(h2=0, h3=0)
    assert world.accept(uuid, "migrate", {"host": None})
    world.settle(uuid)
    assert world.holdings(uuid) == {
        "state": (S.ACTIVE, None, "h1"), "runs": ["h1"], "claim": "h1",
        "migrations": [(MigrationStatus.ERROR, "h1", None, None)]}
    scheduling = world.server(uuid).scheduling
    assert scheduling is not None and scheduling.error


def test_an_evacuation_and_its_end_when_the_source_is_back(world: World) -> None:
    uuid = _active(world)
    world.cloud.up["h1"] = False
    assert world.accept(uuid, "evacuate", {"host": None})
    world.settle(uuid)
    assert world.holdings(uuid) == {
        "state": (S.ACTIVE, None, "h2"), "runs": ["h1", "h2"], "claim": "h2",
        "migrations": [(MigrationStatus.DONE, "h1", "h2", "h1")]}
    world.cloud.up["h1"] = True
    assert world.source_back("h1") == [uuid]
    assert world.source_back("h1") == [uuid]  # recorded once, however often it beats
    assert len(world.pending(uuid)) == 1
    world.settle(uuid)
    assert world.holdings(uuid) == {
        "state": (S.ACTIVE, None, "h2"), "runs": ["h2"], "claim": "h2",
        "migrations": [(MigrationStatus.COMPLETED, "h1", "h2", None)]}


# -- conductors that die, break or pause -----------------------------------------------------
@pytest.mark.parametrize("at", range(1, 6))
@pytest.mark.parametrize("after", [False, True])
def test_a_build_whose_conductor_died_is_finished_by_another(
        world: World, at: int, after: bool) -> None:
    uuid = _uuid()
    world.boot(uuid)
    world.cloud.trip = Trip(world.cloud.calls + at, after=after)
    with contextlib.suppress(Crash):
        world.run(world.a, uuid)
    world.cloud.trip = None
    world.expire(uuid)
    world.settle(uuid, world.b)
    record = world.server(uuid)
    assert record.status == S.ACTIVE, record.fault
    assert world.cloud.hosts_running(uuid) == [record.host]
    assert world.cloud.claims[uuid][0] == record.host


def test_an_operation_that_keeps_killing_its_conductors_is_given_up(world: World) -> None:
    uuid = _uuid()
    world.boot(uuid)
    for number in range(world.a.max_takeovers + 1):
        # Each dies, and is replaced by a process of another identity.
        doomed = world.conductor(f"doomed-{number}")
        world.cloud.trip = Trip(world.cloud.calls + 2, after=True)
        with pytest.raises(Crash):
            world.run(doomed, uuid)
        world.expire(uuid)
    world.cloud.trip = None
    world.settle(uuid, world.b)
    record = world.server(uuid)
    assert (record.status, record.task_state, record.host) == (S.ERROR, None, None)
    assert record.fault is not None and record.fault.kind == "OperationAbandoned"
    assert "max_takeovers" in record.fault.for_user(EXACT)["message"]
    assert world.cloud.hosts_running(uuid) == [] and uuid not in world.cloud.claims


def test_an_unexpected_failure_ends_the_build_in_error_holding_nothing(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    uuid = _uuid()
    world.boot(uuid)

    def broken(*_args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(world.cloud, "fits", broken)
    world.settle(uuid)
    record = world.server(uuid)
    assert record.status == S.ERROR and record.fault is not None
    assert record.fault.kind == "RuntimeError" and world.pending(uuid) == []


@pytest.mark.parametrize("at", [1, 2])  # after its claim; after its spawn
def test_a_paused_build_resumed_after_a_takeover_touches_nothing(world: World,
                                                                 at: int) -> None:
    uuid = _uuid()
    world.boot(uuid)
    trip, thread = world.paused(world.a, uuid, at)
    assert trip.reached.wait(10)
    world.expire(uuid)
    world.settle(uuid, world.b)
    successor = world.holdings(uuid)
    assert successor["state"][0] == S.ACTIVE  # type: ignore[index]
    trip.resume.set()
    thread.join(10)
    assert not thread.is_alive()
    assert world.holdings(uuid) == successor
    assert world.pending(uuid) == []


@pytest.mark.parametrize("at", [1, 2, 3])  # after the swap; the claim; the spawn
def test_a_paused_migration_resumed_after_a_rollback_rewrites_nothing(world: World,
                                                                      at: int) -> None:
    uuid = _active(world)
    assert world.accept(uuid, "migrate", {"host": None})
    trip, thread = world.paused(world.a, uuid, at)
    assert trip.reached.wait(10)
    world.expire(uuid)
    world.settle(uuid, world.b)
    successor = world.holdings(uuid)
    assert successor["state"] == (S.ACTIVE, None, "h1")
    trip.resume.set()
    thread.join(10)
    assert world.holdings(uuid) == successor


def test_a_task_drives_only_its_own_transitions(world: World) -> None:
    uuid = _uuid()
    world.boot(uuid)
    operation = world.claim(world.a, uuid)
    assert operation is not None
    task = Task(Clients(world.conf, world.db, world.a.scheduler,  # type: ignore[arg-type]
                        None, None, None, world.a.leases),  # type: ignore[arg-type]
                Job(operation, world.a.identity))
    with pytest.raises(IllegalTransition, match=r"build does not apply resize\.finished"):
        task.apply("resize.finished")
    assert world.server(uuid).task_state == TaskState.SCHEDULING
    assert operation.kind == OperationKind.BUILD
