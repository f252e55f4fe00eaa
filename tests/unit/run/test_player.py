"""The player's translations: from a server's record to what the report says."""

from __future__ import annotations

import io
import re

from moorage.cli.run import ProgressBar
from moorage.run.player import Census, _result, exclusions_of, late_exclusions
from moorage.run.results import Exclusion


def test_late_exclusions_group_hosts_by_what_they_refused() -> None:
    attempts = [
        {"host": "a", "result": "failed", "kind": "UnsupportedHardware",
         "feature": "hw_vif_model=e1000"},
        {"host": "b", "result": "failed", "kind": "UnsupportedHardware",
         "feature": "hw_vif_model=e1000"},
        {"host": "c", "result": "failed", "kind": "AgentUnreachable", "feature": None},
        {"host": "d", "result": "claim-failed", "kind": "ClaimFailed", "feature": None},
    ]
    assert late_exclusions(attempts, 5) == [
        Exclusion("refused at spawn: AgentUnreachable", 1, 5),
        Exclusion("refused at spawn: hw_vif_model=e1000", 2, 5),
    ]


def test_exclusions_come_from_the_recorded_decisions() -> None:
    """What the scheduler recorded, read as it is: no message or filter record is
    parsed back."""
    decisions = {
        "hosts": 4,
        "exclusions": [
            {"stage": "placement", "constraint": "required host trait COMPUTE_IMAGE_TYPE_VHD",
             "key": "COMPUTE_IMAGE_TYPE_VHD", "excluded": 4, "of": 4,
             "origin": "image disk_format=vhd", "hosts": []},
            {"stage": "placement", "constraint": "resources VCPU=2", "key": "VCPU",
             "excluded": 0, "of": 4, "origin": "flavor small", "hosts": []},
            {"stage": "host filter", "constraint": "host filter ComputeFilter",
             "key": "ComputeFilter", "excluded": 1, "of": 3, "origin": None, "hosts": []},
        ],
        "together": {"constraints": ["A", "B"], "satisfied": [2, 1]},
    }
    found = exclusions_of({"decisions": decisions}, {}, Census(None, total=9))
    assert found == [
        Exclusion("required host trait COMPUTE_IMAGE_TYPE_VHD (image disk_format=vhd)", 4, 4),
        Exclusion("host filter ComputeFilter", 1, 3),
        Exclusion("together: A + B", 4, 4),
    ]
    # A record from before decisions were kept says so, over the whole cloud.
    assert exclusions_of({}, {}, Census(None, total=9)) == [
        Exclusion("no decisions recorded", 9, 9)]


def test_result_of_a_rescheduled_build() -> None:
    server = {
        "status": "ACTIVE", "OS-EXT-SRV-ATTR:host": "c",
        "moorage:scheduling": {
            "candidates": 4, "seconds": 0.012,
            "attempts": [{"host": "a", "result": "failed"},
                         {"host": "b", "result": "claim-failed"},
                         {"host": "c", "result": "ok"}]},
    }
    boot = _result(3, "img", "small", server, Census(None, total=4))
    assert (boot.index, boot.status, boot.host, boot.spawn_attempts, boot.candidates,
            boot.scheduling_seconds, boot.fault) == (3, "ACTIVE", "c", 2, 4, 0.012, None)


def test_result_of_max_retries() -> None:
    server = {
        "status": "ERROR", "OS-EXT-SRV-ATTR:host": None,
        "fault": {"message": "Exceeded maximum number of retries. ...",
                  "details": {"kind": "MaxRetriesExceeded"}},
        "moorage:scheduling": {"candidates": 2, "attempts": [
            {"host": "a", "result": "failed", "feature": "disk_format=vhd"},
            {"host": "b", "result": "failed", "feature": "disk_format=vhd"}]},
    }
    boot = _result(0, "img", "small", server, Census(None, total=3))
    assert boot.fault == "MaxRetriesExceeded"
    assert boot.spawn_attempts == 2
    assert list(boot.exclusions) == [Exclusion("refused at spawn: disk_format=vhd", 2, 3)]


def test_progress_without_a_terminal_prints_a_line_per_configuration() -> None:
    stream = io.StringIO()
    progress = ProgressBar(stream, 2)
    for done in range(4):
        progress("prefilters off", done, 3)
    progress("both", 0, 3)
    progress.finish()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[1/2] prefilters off: 3 boots"
    assert re.fullmatch(r"\[1/2\] prefilters off: 3 boots in \d+\.\ds "
                        r"\(\s*\d+\.\d boots/s\)", lines[1]), lines[1]
    assert lines[2:] == ["[2/2] both: 3 boots"]
