"""A server's typed history: the attempts and faults it shows, MaxRetriesExceeded against
a single spawn failure, what a user reads (built from the fields that name no host),
and the JSON round trip at the store's edge, old rows included."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from moorage.lifecycle import history
from moorage.lifecycle.history import (
    Attempt,
    AttemptResult,
    Fault,
    ResizeRecord,
    SchedulingRecord,
)
from moorage.model.disclosure import host_fields
from moorage.model.discretion import EXACT, Floor
from moorage.model.flavor import Flavor
from moorage.scheduler.decisions import Decisions, Exclusion, for_user
from moorage.scheduler.filter_records import (
    Addition,
    Constraint,
    FilterRecord,
    Origin,
    OriginKind,
)
from moorage.scheduler.types import Rejection, Unschedulable

UUID = "6a1f0c2e-5b3d-4e7f-9a80-1b2c3d4e5f60"
CREATED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def failed(host: str, kind: str = "UnsupportedHardware", detail: str = "no e1000 here",
           feature: str | None = "hw_vif_model=e1000") -> Attempt:
    return history.attempt_failed(host, host, kind, detail, feature)


E1000_RECORD = FilterRecord("transform_image_metadata", True, (Addition(
    Constraint.ROOT_REQUIRED, ("COMPUTE_NET_VIF_MODEL_E1000",),
    Origin(OriginKind.IMAGE_PROPERTY, "hw_vif_model", "e1000")),))
DEFINE_ERROR = ("SpawnFailed", "libvirt refused the domain on kvm1 (10.1.2.3)", None)


# -- attempts ---------------------------------------------------------------------------
@pytest.mark.parametrize(("attempt", "stored"), [
    (history.attempt_failed("big1", "n1", "UnsupportedHardware", "no e1000 here",
                            "hw_vif_model=e1000"),
     {"host": "big1", "node": "n1", "result": "failed", "kind": "UnsupportedHardware",
      "message": "no e1000 here", "feature": "hw_vif_model=e1000"}),
    (history.attempt_unreachable("h", None, "connection refused"),
     {"host": "h", "node": None, "result": "failed", "kind": "AgentUnreachable",
      "message": "connection refused", "feature": None}),
    (history.attempt_claim_lost("h", "h"),
     {"host": "h", "node": "h", "result": "claim-failed", "kind": "ClaimFailed",
      "message": "the alternate's resources were taken by another consumer",
      "feature": None}),
    (history.attempt_ok("h", "h"),
     {"host": "h", "node": "h", "result": "ok", "kind": None, "message": None,
      "feature": None}),
    (history.attempt_interrupted("h", "h", "api-7.example:123:abcdef"),
     {"host": "h", "node": "h", "result": "interrupted", "kind": "Interrupted",
      "message": "the conductor building it stopped during the spawn; the build was "
                 "taken over", "feature": None, "conductor": "api-7.example:123:abcdef"}),
])
def test_an_attempt_is_stored_in_the_shape_clients_read(attempt: Attempt,
                                                        stored: dict[str, object]) -> None:
    assert attempt.to_json() == stored
    assert Attempt.from_json(json.loads(json.dumps(stored))) == attempt


def test_the_fields_that_name_a_host_are_marked() -> None:
    assert host_fields(Attempt) == {"host", "node", "detail", "conductor"}
    assert {"message", "attempts", "unschedulable"} <= host_fields(Fault)
    assert host_fields(SchedulingRecord) == {"alternates", "error", "attempts", "conductor"}
    assert host_fields(ResizeRecord) == {"old_node"}
    assert {"host", "requested_host", "providers", "rejections", "request",
            "reason"} <= host_fields(Unschedulable)


@pytest.mark.parametrize(("attempt", "shown"), [
    (failed("big1", detail="not on big1 (big10 has), qemu 7.2.22"),
     {"result": "failed", "kind": "UnsupportedHardware",
      "message": "the host cannot provide hw_vif_model=e1000",
      "feature": "hw_vif_model=e1000"}),
    (failed("kvm1", *DEFINE_ERROR),
     {"result": "failed", "kind": "SpawnFailed", "message": "the host refused the guest",
      "feature": None}),
    (history.attempt_unreachable("h", "h", "http://10.0.0.7:1: refused"),
     {"result": "failed", "kind": "AgentUnreachable",
      "message": "the host's compute agent did not answer", "feature": None}),
    (history.attempt_ok("h", "h"),
     {"result": "ok", "kind": None, "message": None, "feature": None}),
])
def test_an_attempt_as_its_owner_reads_it(attempt: Attempt, shown: dict[str, object]) -> None:
    """Made of the kind and the feature: the driver's own words (which may name the
    host, its addresses or its software) are the admin's."""
    assert attempt.for_user() == shown


# -- faults -------------------------------------------------------------------------------
def _unschedulable(**fields: object) -> Unschedulable:
    base: dict[str, object] = {
        "reason": "Missing on host big1: X", "user_reason": "Missing on the server's host: X",
        "decisions": Decisions(hosts=4, deciding="rebuild"), "host": "big1"}
    return Unschedulable(**{**base, **fields})  # type: ignore[arg-type]


def test_no_valid_host_keeps_the_schedulers_record_and_its_users_reason() -> None:
    why = _unschedulable(filters=(E1000_RECORD,),
                         candidates=3, missing_traits=("X",), providers=("p1",))
    fault = history.no_valid_host(why.reason, why)
    stored = fault.to_json()
    assert stored["message"] == "No valid host was found. Missing on host big1: X"
    assert stored["code"] == 500 and CREATED.match(stored["created"])
    assert stored["details"]["host"] == "big1"
    assert stored["details"]["missing_traits"] == ["X"]
    assert stored["details"]["user_message"] == (
        "No valid host was found. Missing on the server's host: X")
    shown = fault.for_user(EXACT)
    assert shown["message"] == "No valid host was found. Missing on the server's host: X"
    assert shown["details"] == {"kind": "NoValidHost", "candidates": 3,
                                "decisions": for_user(why.decisions.to_json(), EXACT)}
    assert "big1" not in json.dumps(shown) and "p1" not in json.dumps(shown)
    assert Fault.from_json(json.loads(json.dumps(stored))) == fault


def test_retries_exhausted_is_max_retries_exceeded_listing_every_host_tried() -> None:
    attempts = [failed("big1"), failed("kvm1", *DEFINE_ERROR)]
    fault = history.build_failed(UUID, attempts, retries=True)
    assert fault.message == (
        "Exceeded maximum number of retries. Exhausted all hosts available for retrying "
        f"build failures for instance {UUID}. "
        "big1: UnsupportedHardware: no e1000 here (feature hw_vif_model=e1000); "
        "kvm1: SpawnFailed: libvirt refused the domain on kvm1 (10.1.2.3)")
    assert fault.user_message == (
        "Exceeded maximum number of retries. Exhausted all hosts available for retrying "
        f"build failures for instance {UUID}. "
        "UnsupportedHardware: the host cannot provide hw_vif_model=e1000 (feature "
        "hw_vif_model=e1000); SpawnFailed: the host refused the guest")
    assert fault.kind == "MaxRetriesExceeded"
    assert fault.attempts == tuple(attempts)
    shown = fault.for_user(EXACT)
    assert shown["details"] == {"kind": "MaxRetriesExceeded"}
    assert "kvm1" not in json.dumps(shown) and "10.1.2.3" not in json.dumps(shown)


def test_claim_lost_alternates_are_not_hosts_tried() -> None:
    lost = history.attempt_claim_lost("alt1", "alt1")
    fault = history.build_failed(UUID, [failed("big1"), lost], retries=True)
    assert "big1" in fault.message and "alt1" not in fault.message
    # ... but the details still say what happened to the alternate.
    assert fault.attempts == (failed("big1"), lost)


def test_only_claim_lost_alternates_is_still_max_retries_exceeded() -> None:
    fault = history.build_failed(UUID, [history.attempt_claim_lost("alt1", "alt1")],
                                 retries=True)
    assert fault.message == (
        "Exceeded maximum number of retries. Exhausted all hosts available for retrying "
        f"build failures for instance {UUID}.")
    assert fault.kind == "MaxRetriesExceeded"


def test_without_retries_the_fault_is_the_last_host_tried() -> None:
    fault = history.build_failed(UUID, [failed("big1"), failed("kvm1", *DEFINE_ERROR),
                                        history.attempt_claim_lost("alt1", "alt1")],
                                 retries=False)
    assert fault.message == (f"Build of instance {UUID} failed: kvm1: SpawnFailed: libvirt "
                             "refused the domain on kvm1 (10.1.2.3)")
    assert fault.user_message == (f"Build of instance {UUID} failed: SpawnFailed: the host "
                                  "refused the guest")
    assert fault.kind == "SpawnFailed"


def test_without_retries_and_only_a_lost_claim_the_claim_is_the_failure() -> None:
    fault = history.build_failed(UUID, [history.attempt_claim_lost("alt1", "alt1")],
                                 retries=False)
    assert fault.kind == "ClaimFailed"
    assert fault.message.startswith(f"Build of instance {UUID} failed: alt1: ClaimFailed: ")


@pytest.mark.parametrize("retries", [True, False])
def test_successful_attempts_are_left_out_of_the_fault(retries: bool) -> None:
    fault = history.build_failed(UUID, [history.attempt_ok("ok1", "ok1"), failed("big1")],
                                 retries=retries)
    assert fault.attempts == (failed("big1"),)
    assert "ok1" not in fault.message


def test_build_aborted_names_the_one_host_and_why() -> None:
    attempt = failed("h1", "FlavorImageConflict", "the flavor forbids what the image "
                     "requires", None)
    fault = history.build_aborted(UUID, attempt)
    assert fault.message == (f"Build of instance {UUID} aborted: h1: FlavorImageConflict: "
                             "the flavor forbids what the image requires")
    assert fault.user_message == (f"Build of instance {UUID} aborted: FlavorImageConflict: "
                                  "the host refused the guest")
    assert fault.kind == "FlavorImageConflict" and fault.attempts == (attempt,)


def test_rebuild_failed() -> None:
    fault = history.rebuild_failed("big1", "UnsupportedHardware", "no e1000 on big1",
                                   "hw_vif_model=e1000")
    assert fault.message == "Rebuild failed on big1: UnsupportedHardware: no e1000 on big1"
    assert fault.user_message == ("Rebuild failed: UnsupportedHardware: the host cannot "
                                  "provide hw_vif_model=e1000 (feature hw_vif_model=e1000)")
    assert fault.to_json()["details"]["feature"] == "hw_vif_model=e1000"


def test_internal_error_names_the_operation_and_the_exception_to_admins_only() -> None:
    fault = history.internal_error("build", RuntimeError("agent big1 at 10.0.0.7 broke"))
    assert fault.message == "build failed: RuntimeError: agent big1 at 10.0.0.7 broke"
    assert fault.kind == "RuntimeError"
    assert "big1" not in json.dumps(fault.for_user(EXACT))


def test_an_abandoned_operation_says_so() -> None:
    fault = history.abandoned("build", 4)
    assert fault.kind == "OperationAbandoned" and fault.takeovers == 4
    assert "max_takeovers" in fault.user_message
    assert Fault.from_json(fault.to_json()) == fault


@pytest.mark.parametrize("fault", [
    history.build_failed(UUID, [failed("big1")], retries=False),
    history.build_aborted(UUID, failed("big1")),
    history.rebuild_failed("big1", "UnsupportedHardware", "big1 has none", None),
    history.no_valid_host("Missing on host big1: X", _unschedulable()),
    history.no_valid_host("host filters", _unschedulable(
        reason="x", user_reason="x", host=None,
        rejections=(Rejection("ComputeFilter", "big1", "disabled"),))),
    history.internal_error("build", RuntimeError("agent big1 at 10.0.0.7 broke")),
])
def test_no_fault_names_its_host_to_a_user(fault: Fault) -> None:
    assert "big1" in json.dumps(fault.to_json())
    shown = json.dumps(fault.for_user(EXACT))
    assert "big1" not in shown and "10.0.0.7" not in shown
    assert fault.for_user(EXACT)["message"]


def test_a_fault_recorded_before_user_messages() -> None:
    counts = {"code": 500, "message": "No valid host was found. 0 of 4 hosts",
              "details": {"decisions": {"exclusions": []}}}
    assert Fault.from_json(counts).for_user(EXACT)["message"] == counts["message"]
    named = {"code": 500, "message": "Build of x failed: big1: Boom",
             "details": {"kind": "Boom", "attempts": [{"host": "big1"}]}}
    assert Fault.from_json(named).for_user(EXACT)["message"] == "Boom failed"
    assert Fault.from_json({"code": 500, "message": "h1 broke"}).for_user(EXACT)["message"] == (
        "The operation failed")


# -- the scheduling record ----------------------------------------------------------------
def _record() -> SchedulingRecord:
    decisions = Decisions(hosts=3, chosen="h2", alternates=["h3"])
    decisions.exclude(Exclusion("placement", "required trait X", "X", 1, 3, hosts=("h1",)))
    return SchedulingRecord(
        "resize", (E1000_RECORD,), candidates=2,
        hosts_passing_filters=2, alternates=("h3",), decisions=decisions,
        error="spawn on h2 failed", error_for_user="spawn failed", seconds=0.25,
        attempts=(failed("h2"),),
        resize=ResizeRecord("small", Flavor("small", 1, 512, 1), "h1-node", "m1",
                            stopped=True),
        conductor="ctl-1:42:abcdef")


def test_a_scheduling_record_round_trips() -> None:
    record = _record()
    assert SchedulingRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
    bare = SchedulingRecord("build")
    assert bare.to_json() == {"operation": "build", "filters": []}
    assert SchedulingRecord.from_json(bare.to_json()) == bare


def test_a_scheduling_records_json_is_made_once_and_given_out_as_a_new_dict() -> None:
    record = _record()
    first = record.to_json()
    first["requested_host"] = "h9"  # what the store adds to the dict it is given
    again = record.to_json()
    assert "requested_host" not in again and again == _record().to_json()
    assert again["decisions"] is first["decisions"]  # made once, not at each call
    changed = dataclasses.replace(record, error="spawn on h3 failed")
    assert changed.to_json()["error"] == "spawn on h3 failed"
    assert record.to_json()["error"] == "spawn on h2 failed"
    assert changed != record and dataclasses.replace(changed, error=record.error) == record


def test_a_scheduling_record_as_a_user_reads_it() -> None:
    shown = _record().for_user(EXACT)
    text = json.dumps(shown)
    for name in ("h1", "h2", "h3", "ctl-1"):
        assert name not in text, name
    assert shown["error"] == "spawn failed" and "error_for_user" not in shown
    assert shown["attempts"] == [failed("h2").for_user()]
    assert shown["decisions"]["exclusions"][0]["excluded"] == 1
    assert shown["resize"] == {"old_flavor_id": "small", "migration": "m1",
                               "old_flavor": shown["resize"]["old_flavor"], "stopped": True}
    assert shown["candidates"] == 2


def test_a_user_reads_no_count_of_hosts_below_the_floor() -> None:
    shown = _record().for_user(Floor(3))
    assert shown["candidates"] is None  # 2 hosts
    exclusion = shown["decisions"]["exclusions"][0]
    assert (exclusion["excluded"], exclusion["remaining"]) == (None, None)
    assert shown == _record().for_user(Floor(3))
    assert _record().for_user(Floor(2))["candidates"] == 2


def test_a_record_without_a_separate_user_error_shows_the_one_error() -> None:
    record = dataclasses.replace(SchedulingRecord("build"), error="0 of 4 hosts have X")
    assert record.for_user(EXACT)["error"] == "0 of 4 hosts have X"
    assert AttemptResult("claim-failed") is AttemptResult.CLAIM_FAILED
