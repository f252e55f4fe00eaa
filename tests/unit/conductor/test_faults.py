"""The faults a server shows: the texts users read, MaxRetriesExceeded against a single
spawn failure, and which attempts count as hosts tried."""

from __future__ import annotations

import re
from typing import Any

import pytest

from moorage.compute.client import SpawnFailed
from moorage.conductor import faults
from moorage.scheduler.types import NoValidHost

UUID = "6a1f0c2e-5b3d-4e7f-9a80-1b2c3d4e5f60"
CREATED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

UNSUPPORTED = SpawnFailed("big1", "UnsupportedHardware", "no e1000 here", "hw_vif_model=e1000")
DEFINE_ERROR = SpawnFailed("kvm1", "SpawnFailed", "libvirt refused the domain")


def failed(host: str, exc: SpawnFailed = UNSUPPORTED) -> dict[str, Any]:
    return faults.attempt_failed(host, host, exc)


# -- attempts ---------------------------------------------------------------------------
@pytest.mark.parametrize(("attempt", "expected"), [
    (faults.attempt_failed("big1", "n1", UNSUPPORTED),
     {"host": "big1", "node": "n1", "result": "failed", "kind": "UnsupportedHardware",
      "message": "no e1000 here", "feature": "hw_vif_model=e1000"}),
    (faults.attempt_unreachable("h", None, "connection refused"),
     {"host": "h", "node": None, "result": "failed", "kind": "AgentUnreachable",
      "message": "connection refused", "feature": None}),
    (faults.attempt_claim_lost("h", "h"),
     {"host": "h", "node": "h", "result": "claim-failed", "kind": "ClaimFailed",
      "message": "the alternate's resources were taken by another consumer",
      "feature": None}),
    (faults.attempt_ok("h", "h"),
     {"host": "h", "node": "h", "result": "ok", "kind": None, "message": None,
      "feature": None}),
])
def test_attempt_records(attempt: dict[str, Any], expected: dict[str, Any]) -> None:
    assert attempt == expected


# -- no valid host ----------------------------------------------------------------------
@pytest.mark.parametrize(("reason", "message"), [
    ("", "No valid host was found."),
    ("no host reports COMPUTE_NET_VIF_MODEL_IGB",
     "No valid host was found. no host reports COMPUTE_NET_VIF_MODEL_IGB"),
])
def test_no_valid_host(reason: str, message: str) -> None:
    fault = faults.no_valid_host(NoValidHost(reason, {"missing": ["X"]}))
    assert fault["code"] == 500
    assert fault["message"] == message
    assert fault["details"] == {"missing": ["X"], faults.USER_MESSAGE: message}
    assert CREATED.match(fault["created"])


# -- build failures ---------------------------------------------------------------------
def test_retries_exhausted_is_max_retries_exceeded_listing_every_host_tried() -> None:
    attempts = [failed("big1"), failed("big2", DEFINE_ERROR)]
    fault = faults.build_failed(UUID, attempts, retries=True)
    assert fault["code"] == 500
    assert fault["message"] == (
        "Exceeded maximum number of retries. Exhausted all hosts available for retrying "
        f"build failures for instance {UUID}. "
        "big1: UnsupportedHardware: no e1000 here (feature hw_vif_model=e1000); "
        "big2: SpawnFailed: libvirt refused the domain")
    assert fault["details"]["kind"] == "MaxRetriesExceeded"
    assert fault["details"]["attempts"] == attempts
    assert CREATED.match(fault["created"])


def test_claim_lost_alternates_are_not_hosts_tried() -> None:
    lost = faults.attempt_claim_lost("alt1", "alt1")
    attempts = [failed("big1"), lost]
    fault = faults.build_failed(UUID, attempts, retries=True)
    assert "big1" in fault["message"]
    assert "alt1" not in fault["message"]
    # ... but the details still say what happened to the alternate.
    assert fault["details"]["attempts"] == [attempts[0], lost]


def test_only_claim_lost_alternates_is_still_max_retries_exceeded() -> None:
    fault = faults.build_failed(UUID, [faults.attempt_claim_lost("alt1", "alt1")],
                                retries=True)
    assert fault["message"] == (
        "Exceeded maximum number of retries. Exhausted all hosts available for retrying "
        f"build failures for instance {UUID}.")
    assert fault["details"]["kind"] == "MaxRetriesExceeded"


def test_without_retries_the_fault_is_the_one_spawn_failure() -> None:
    fault = faults.build_failed(UUID, [failed("big1")], retries=False)
    assert fault["message"] == (
        f"Build of instance {UUID} failed: big1: UnsupportedHardware: no e1000 here "
        "(feature hw_vif_model=e1000)")
    assert "Exceeded maximum number of retries" not in fault["message"]
    assert fault["details"]["kind"] == "UnsupportedHardware"


def test_without_retries_the_last_host_tried_names_the_failure() -> None:
    attempts = [failed("big1"), failed("kvm1", DEFINE_ERROR),
                faults.attempt_claim_lost("alt1", "alt1")]
    fault = faults.build_failed(UUID, attempts, retries=False)
    assert fault["message"] == (
        f"Build of instance {UUID} failed: kvm1: SpawnFailed: libvirt refused the domain")
    assert fault["details"]["kind"] == "SpawnFailed"
    assert fault["details"]["attempts"] == attempts


def test_without_retries_and_only_a_lost_claim_the_claim_is_the_failure() -> None:
    fault = faults.build_failed(UUID, [faults.attempt_claim_lost("alt1", "alt1")],
                                retries=False)
    assert fault["details"]["kind"] == "ClaimFailed"
    assert fault["message"].startswith(f"Build of instance {UUID} failed: alt1: ClaimFailed: ")


@pytest.mark.parametrize("retries", [True, False])
def test_successful_attempts_are_left_out_of_the_details(retries: bool) -> None:
    # A host that spawned (a rebuild's earlier success, say) is not a failure.
    attempts = [faults.attempt_ok("ok1", "ok1"), failed("big1")]
    fault = faults.build_failed(UUID, attempts, retries=retries)
    assert fault["details"]["attempts"] == [attempts[1]]
    assert "ok1" not in fault["message"]


def test_build_aborted_names_the_one_host_and_why() -> None:
    attempt = failed("h1", SpawnFailed("h1", "FlavorImageConflict", "the flavor forbids "
                                       "what the image requires", reschedule=False))
    fault = faults.build_aborted(UUID, attempt)
    assert fault["message"] == (f"Build of instance {UUID} aborted: h1: FlavorImageConflict: "
                                "the flavor forbids what the image requires")
    assert fault["details"]["kind"] == "FlavorImageConflict"
    assert fault["details"]["attempts"] == [attempt]
    assert fault["code"] == 500 and CREATED.match(fault["created"])


def test_rebuild_failed() -> None:
    fault = faults.rebuild_failed(UNSUPPORTED)
    assert fault["message"] == "Rebuild failed on big1: UnsupportedHardware: no e1000 here"
    assert fault["details"]["kind"] == "UnsupportedHardware"
    assert fault["details"]["feature"] == "hw_vif_model=e1000"


def test_internal_error_names_the_operation_and_the_exception() -> None:
    fault = faults.internal_error("Build", KeyError("flavor"))
    assert fault["message"] == "Build failed: KeyError: 'flavor'"
    assert fault["details"]["kind"] == "KeyError"
    assert fault["code"] == 500


# -- what a user who may not see hosts reads ---------------------------------------------
def test_a_user_reads_every_failure_without_the_hosts_tried() -> None:
    attempts = [failed("big1", SpawnFailed("big1", "SpawnFailed", "big1 ran out of memory")),
                failed("kvm-2.example", DEFINE_ERROR),
                faults.attempt_unreachable("h3", "h3", "http://10.1.2.3:9000: connection "
                                                       "refused"),
                faults.attempt_claim_lost("alt1", "alt1")]
    fault = faults.build_failed(UUID, attempts, retries=True)
    shown = faults.for_user(fault)
    assert shown["message"] == (
        "Exceeded maximum number of retries. Exhausted all hosts available for retrying "
        f"build failures for instance {UUID}. "
        "SpawnFailed: the host ran out of memory; SpawnFailed: libvirt refused the domain; "
        "AgentUnreachable: the host's compute agent did not answer")
    assert shown["details"] == {"kind": "MaxRetriesExceeded"}
    assert shown["code"] == 500 and shown["created"] == fault["created"]
    # The admin's fault is untouched.
    assert "big1" in fault["message"] and "10.1.2.3" in fault["message"]


@pytest.mark.parametrize("fault", [
    faults.build_failed(UUID, [failed("big1")], retries=False),
    faults.build_aborted(UUID, failed("big1")),
    faults.rebuild_failed(UNSUPPORTED),
    faults.no_valid_host(NoValidHost("Missing on host big1: X", {"host": "big1"})),
    faults.no_valid_host(NoValidHost("host big1 fails", {"rejections": [{"host": "big1"}]})),
    faults.internal_error("Build", RuntimeError("agent big1 at 10.0.0.7 broke")),
])
def test_no_fault_names_its_host_to_a_user(fault: dict[str, Any]) -> None:
    assert "big1" in fault["message"]
    shown = faults.for_user(fault)
    assert "big1" not in str(shown) and "10.0.0.7" not in str(shown)
    assert shown["message"]


def test_a_host_is_replaced_as_a_whole_word_only() -> None:
    fault = faults.build_failed(UUID, [failed("h1", SpawnFailed(
        "h1", "SpawnFailed", "h1 said: h10 and h1-b and sh1 are not h1"))], retries=False)
    assert faults.for_user(fault)["message"].endswith(
        "SpawnFailed: the host said: h10 and h1-b and sh1 are not the host")


def test_a_fault_recorded_without_a_user_message() -> None:
    counts = {"code": 500, "message": "No valid host was found. 0 of 4 hosts",
              "details": {"decisions": {"exclusions": []}}}
    assert faults.for_user(counts)["message"] == counts["message"]
    named = {"code": 500, "message": "Build of x failed: big1: Boom",
             "details": {"kind": "Boom", "attempts": [{"host": "big1"}]}}
    assert faults.for_user(named)["message"] == "Boom failed"
    assert faults.for_user({"code": 500, "message": "h1 broke"})["message"] == (
        "The operation failed")


def test_an_attempt_as_its_owner_reads_it() -> None:
    attempt = failed("big1", SpawnFailed("big1", "SpawnFailed", "not on big1 (big10 has)"))
    assert faults.attempt_for_user(attempt) == {
        "result": "failed", "kind": "SpawnFailed", "message": "not on the host (big10 has)",
        "feature": None}
    unreachable = faults.attempt_unreachable("h", "h", "http://10.0.0.7:1: refused")
    assert faults.attempt_for_user(unreachable)["message"] == (
        "the host's compute agent did not answer")
    assert faults.attempt_for_user(faults.attempt_ok("h", "h")) == {
        "result": "ok", "kind": None, "message": None, "feature": None}


def test_an_interrupted_spawn_keeps_its_conductor_apart_from_the_message() -> None:
    attempt = faults.attempt_interrupted("h1", "h1", "api-7.example:123:abcdef")
    assert attempt["conductor"] == "api-7.example:123:abcdef"
    assert "api-7" not in attempt["message"]
    assert "conductor" not in faults.attempt_for_user(attempt)


def test_a_no_valid_host_reason_for_a_user() -> None:
    exc = NoValidHost("Missing on host big1: X (from image property)", {"host": "big1"})
    assert faults.reason_for_user(exc) == "Missing on host the host: X (from image property)"
