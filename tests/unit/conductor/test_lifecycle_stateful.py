"""The lifecycle under random sequences of what users, conductors and hosts do: API
actions (refused exactly where the table says), conductors carrying out operations,
dying at any call into the cloud (before or after it took effect) and being taken
over, pausing there while a successor finishes, hosts going down and coming back.
Whatever happens, no server is in a state the table lacks, none is left busy once a
conductor has carried out what is pending, and a server at rest holds in placement
and runs on the hosts exactly what its record says (Hypothesis' stateful testing:
the sequences it finds failing are shrunk to the shortest)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from moorage.compute.client import SpawnFailed
from moorage.conductor.manager import Conductor
from moorage.db.database import Database
from moorage.lifecycle import machine
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.states import MigrationKind, MigrationStatus, ServerStatus
from moorage.model.codec import flavor_to_json, image_to_json
from tests.lifecycle_paths import paths
from tests.unit.conductor.fakes import Crash, Trip
from tests.unit.conductor.world import BIG, OTHER, World, new_database

S = ServerStatus
HOSTS = {"h1": 2, "h2": 2, "h3": 1}
REACHED = set(paths())
ARGUMENTS = {
    "rebuild": {"image_id": OTHER.id, "image": image_to_json(OTHER)},
    "resize": {"flavor_id": BIG.name, "flavor": flavor_to_json(BIG)},
    "migrate": {"host": None},
    "evacuate": {"host": None},
}
_DB: Database | None = None
_RUNS = itertools.count()


def _database(tmp: Path) -> Database:
    global _DB
    if _DB is None:
        _DB = new_database(tmp / "stateful.sqlite")
    return _DB


class Lifecycle(RuleBasedStateMachine):
    servers = Bundle("servers")
    tmp: Path

    def __init__(self) -> None:
        super().__init__()
        self.world = World(_database(self.tmp), HOSTS)
        self.run_id = next(_RUNS)
        self.count = itertools.count()
        self.uuids: list[str] = []
        self.conductors = itertools.count()

    def _fresh(self, name: str) -> Conductor:
        return self.world.conductor(f"{name}-{self.run_id}-{next(self.conductors)}")

    # -- users ------------------------------------------------------------------------------
    @initialize(target=servers)
    def first_boot(self) -> str:
        return self.boot()

    @rule(target=servers)
    def boot(self) -> str:
        uuid = f"r{self.run_id}-s{next(self.count)}"
        self.world.boot(uuid)
        self.uuids.append(uuid)
        return uuid

    @rule(uuid=servers, action=st.sampled_from(sorted(machine.ACTIONS)))
    def act(self, uuid: str, action: str) -> None:
        record = self.world.server(uuid)
        if not self._api_allows(record, action):
            return  # refused by the API's own checks before the table is asked
        legal = machine.ACTIONS[action].allows(record.status, record.task_state)
        accepted = self.world.accept(uuid, action, ARGUMENTS.get(action))
        assert accepted is legal, (action, record.status, record.task_state)

    def _api_allows(self, record: ServerRecord, action: str) -> bool:
        """What the API checks besides the table: a host to rebuild, move or evacuate
        from, a down source to evacuate, an up source to move."""
        if action in ("rebuild", "migrate", "resize", "evacuate", "os-stop", "os-start") \
                and record.host is None:
            return False
        if action == "evacuate":
            return not self.world.cloud.up.get(record.host or "", True)
        if action in ("migrate", "resize"):
            return self.world.cloud.up.get(record.host or "", False)
        return True

    @rule(uuid=servers)
    def delete(self, uuid: str) -> None:
        record = self.world.server(uuid)
        legal = machine.transition("delete.accepted").allows(record.status, record.task_state)
        assert self.world.delete(uuid) is legal

    # -- conductors ----------------------------------------------------------------------
    @rule(uuid=servers)
    def carry_out(self, uuid: str) -> None:
        self.world.run(self.world.a, uuid)

    @rule(uuid=servers, at=st.integers(1, 6), after=st.booleans())
    def die(self, uuid: str, at: int, after: bool) -> None:
        """A conductor dies at a call into the cloud; its lease runs out and another
        conductor may take the operation over."""
        self.world.cloud.trip = Trip(self.world.cloud.calls + at, after=after)
        try:
            self.world.run(self._fresh("doomed"), uuid)
        except Crash:
            self.world.expire(uuid)
        finally:
            self.world.cloud.trip = None

    @rule(uuid=servers, at=st.integers(1, 5), after=st.booleans())
    def pause(self, uuid: str, at: int, after: bool) -> None:
        """A conductor pauses at a call into the cloud, before it went out or once it
        took effect, past its lease; a successor carries the server's operations out;
        the first resumes and must change nothing."""
        paused = self._fresh("paused")
        trip, thread = self.world.paused(paused, uuid, at, after=after)
        while thread.is_alive() and not trip.reached.wait(0.005):
            pass
        if not trip.reached.is_set():  # it finished before reaching the pause
            self.world.cloud.trip = None
            return
        self.world.cloud.trip = None
        self.world.expire(uuid)
        self.world.settle(uuid, self.world.b)
        before = self._everything()
        trip.resume.set()
        thread.join(10)
        assert not thread.is_alive()
        assert self._everything() == before

    # -- hosts ------------------------------------------------------------------------------
    @rule(host=st.sampled_from(sorted(HOSTS)), up=st.booleans())
    def liveness(self, host: str, up: bool) -> None:
        was = self.world.cloud.up[host]
        self.world.cloud.up[host] = up
        if up and not was:
            self.heartbeat(host)

    @rule(host=st.sampled_from(sorted(HOSTS)), refusing=st.booleans())
    def refuse(self, host: str, refusing: bool) -> None:
        if refusing:
            self.world.cloud.refusing[host] = SpawnFailed(host, "UnsupportedHardware",
                                                          "no", "X")
        else:
            self.world.cloud.refusing.pop(host, None)

    @rule(host=st.sampled_from(sorted(HOSTS)))
    def heartbeat(self, host: str) -> None:
        """A host that is up heart-beats: its agent destroys the guests it is told to,
        and its return ends the evacuations from it."""
        if not self.world.cloud.up[host]:
            return
        from moorage.lifecycle import store
        with self.world.db.writer() as writer:
            due = store.take_cleanups(writer.conn, [host]).get(host, [])
        for uuid in due:
            self.world.cloud.guests[host].discard(uuid)
        self.world.source_back(host)

    # -- what must always hold ------------------------------------------------------------
    def _everything(self) -> dict[str, object]:
        return {uuid: self.world.holdings(uuid) for uuid in self.uuids}

    @invariant()
    def every_server_is_in_a_state_of_the_table(self) -> None:
        for uuid in self.uuids:
            record = self.world.server(uuid)
            assert (record.status, record.task_state) in REACHED, (uuid, record.status,
                                                                   record.task_state)

    @invariant()
    def a_server_at_rest_holds_what_runs(self) -> None:
        world = self.world
        cleanups = world.cleanups()
        for uuid in self.uuids:
            if world.pending(uuid):
                continue  # an operation under way, waiting or abandoned by the dead
            record = world.server(uuid)
            assert machine.at_rest(record.status, record.task_state), uuid
            migrations = world.migrations(uuid)
            # Guests that may still run besides where the record puts the server: told
            # to be destroyed at a heartbeat, on the source of an evacuation awaiting
            # its end, on the source of a move awaiting confirmation.
            may_run = {h for h, uuids in cleanups.items() if uuid in uuids}
            may_run |= {m.source_host for m in migrations if m.status in (
                MigrationStatus.DONE, MigrationStatus.FINISHED)}
            runs = set(world.cloud.hosts_running(uuid))
            claim = world.cloud.claims.get(uuid, (None,))[0]
            if record.status == S.DELETED:
                assert runs <= may_run, (uuid, runs, may_run)
                assert claim is None, (uuid, claim)
            elif record.status in (S.ACTIVE, S.VERIFY_RESIZE, S.SHUTOFF):
                assert record.host in runs, (uuid, record.status, record.host, runs)
                assert runs - {record.host} <= may_run, (uuid, runs, may_run)
                assert claim == record.host, (uuid, record.host, claim)
            else:
                assert record.status == S.ERROR, (uuid, record.status)
                assert runs - {record.host} <= may_run, (uuid, runs, may_run)
                assert claim in (None, record.host), (uuid, record.host, claim)
            for m in migrations:
                held = world.cloud.claims.get(m.uuid, (None,))[0]
                holds = m.status == MigrationStatus.FINISHED or (
                    m.status == MigrationStatus.DONE and m.kind == MigrationKind.EVACUATION)
                assert held == (m.source_host if holds else None), (uuid, m, held)

    def teardown(self) -> None:
        """Nothing is stuck: once conductors have carried out what is pending (taking
        over what the dead left), every server is at rest and its invariant holds."""
        for uuid in self.uuids:
            self.world.expire(uuid)
            self.world.settle(uuid, self.world.b)
            assert self.world.pending(uuid) == [], uuid
        self.every_server_is_in_a_state_of_the_table()
        self.a_server_at_rest_holds_what_runs()


@pytest.fixture(scope="module")
def lifecycle_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("stateful")


def test_the_lifecycle_under_random_actions_crashes_and_pauses(lifecycle_tmp: Path) -> None:
    Lifecycle.tmp = lifecycle_tmp
    runner = Lifecycle.TestCase()
    runner.settings = settings(max_examples=60, stateful_step_count=30, deadline=None,
                               suppress_health_check=[HealthCheck.too_slow])
    runner.runTest()
