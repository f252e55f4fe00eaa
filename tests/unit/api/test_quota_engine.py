"""The quota engine on a real database: what it counts, how limits resolve, how many
servers a create may make and nova's words when none."""

from __future__ import annotations

import dataclasses

import pytest

from moorage.api.quotas import engine
from moorage.api.quotas.resources import Resource
from moorage.api.storage import quotas as stored
from moorage.conf import load_config
from moorage.db.database import Database
from moorage.lifecycle import store, usage
from moorage.lifecycle.states import ServerStatus
from moorage.model.flavor import Flavor
from tests.lifecycle_paths import OWNER, bring, flavor_change, hold, new_record, operation_of

R = Resource


def _insert(db: Database, uuid: str, user: str, vcpus: int, ram: int,
            project: str = "p") -> None:
    record = dataclasses.replace(new_record(uuid), project_id=project, user_id=user,
                                 flavor=Flavor("f", vcpus, ram, 1))
    with db.writer() as writer:
        store.insert_server(writer.conn, record)


def test_count_sums_the_live_servers_of_the_project_and_the_users_part(db: Database) -> None:
    _insert(db, "a", "u", 2, 1024)
    _insert(db, "b", "v", 4, 2048)
    _insert(db, "c", "u", 8, 4096, project="other")
    bring(db, "gone", (ServerStatus.DELETED, None))  # project p, user u, 1 vCPU
    with db.reader() as conn:
        counted = usage.count(conn, "p", "u")
        light = usage.count(conn, "p", "u", resources=False)
        project_only = usage.count(conn, "p", "u", per_user=False)
        fewest = usage.count(conn, "p", "u", resources=False, per_user=False)
    assert counted.project == usage.ServerUsage(2, 6, 3072)
    assert counted.user == usage.ServerUsage(1, 2, 1024)
    assert light.project == usage.ServerUsage(2) and light.user == usage.ServerUsage(1)
    # Without the user's part (no per-user limit to hold it to), the project's alone.
    assert project_only == usage.ProjectUsage(usage.ServerUsage(2, 6, 3072), usage.ServerUsage())
    assert fewest == usage.ProjectUsage(usage.ServerUsage(2), usage.ServerUsage())


def test_the_counted_sizes_follow_a_transition_that_changes_the_flavor(db: Database) -> None:
    step, state = flavor_change()
    bring(db, "s", state)
    with db.writer() as writer:
        operation = hold(writer.conn, "s", operation_of(step))
        assert store.apply(writer.conn, step, "s",
                           store.ServerChanges(flavor=Flavor("big", 6, 6144, 1)),
                           fence=store.Fence(operation.id, OWNER)) is store.Applied.APPLIED
    with db.reader() as conn:
        assert usage.count(conn, "p", "u").project == usage.ServerUsage(1, 6, 6144)


def test_limits_resolve_option_class_project_then_user(db: Database) -> None:
    conf = load_config([], [("quota", "key_pairs", 7)])
    with db.writer() as writer:
        stored.set_defaults(writer.conn, {"instances": 4, "cores": 30})
        stored.set_limits(writer.conn, "p", None, {"cores": 12})
        stored.set_limits(writer.conn, "p", "u", {"cores": 3})
    with db.reader() as conn:
        found = engine.limits(conn, conf, "p", "u")
        other = engine.limits(conn, conf, "q", "u")
    assert (found.project[R.KEY_PAIRS], found.project[R.INSTANCES],
            found.project[R.CORES], found.user[R.CORES]) == (7, 4, 12, 3)
    assert found.user[R.INSTANCES] == 4 and found.user_set == {R.CORES}
    assert other.project[R.CORES] == 30 and other.project[R.FLOATING_IPS] == -1


def _boot(db: Database, conf_limits: dict[str, int], user: str, vcpus: int, ram: int,
          min_count: int, max_count: int) -> int:
    conf = load_config([], [("quota", name, value) for name, value in conf_limits.items()])
    with db.writer() as writer:
        found = engine.limits(writer.conn, conf, "p", user)
        return engine.check_boot(writer.conn, found, "p", user, vcpus, ram, min_count,
                                 max_count)


def test_a_create_gets_what_every_limit_leaves(db: Database) -> None:
    _insert(db, "a", "u", 2, 1024)
    limits = {"instances": 10, "cores": 9, "ram": -1}
    assert _boot(db, limits, "u", 2, 512, 1, 10) == 3  # cores: (9 - 2) // 2
    assert _boot(db, limits, "u", 0, 512, 1, 10) == 9  # no cores asked: instances
    with pytest.raises(engine.OverQuota) as refused:
        _boot(db, limits, "u", 2, 512, 4, 5)
    assert str(refused.value) == ("Quota exceeded for cores: Requested 10, but already "
                                  "used 2 of 9 cores")
    unlimited = {"instances": -1, "cores": -1, "ram": -1}
    assert _boot(db, unlimited, "u", 64, 10**6, 1, 50) == 50


def test_a_users_own_server_limits_count_their_servers_only(db: Database) -> None:
    _insert(db, "a", "u", 1, 512)
    _insert(db, "b", "v", 1, 512)
    with db.writer() as writer:
        stored.set_limits(writer.conn, "p", "u", {"instances": 2})
    limits = {"instances": 10, "cores": -1, "ram": -1}
    assert _boot(db, limits, "u", 1, 512, 1, 5) == 1
    assert _boot(db, limits, "v", 1, 512, 1, 5) == 5  # v has no limits of their own
    with pytest.raises(engine.OverQuota) as refused:
        _boot(db, limits, "u", 1, 512, 2, 2)
    assert str(refused.value) == ("Quota exceeded for instances: Requested 2, but already "
                                  "used 1 of 2 instances")
