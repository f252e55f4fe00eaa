"""The player's translations: from a server's record to what the report says."""

from __future__ import annotations

import io
import re

from moorage.cli.run import ProgressBar
from moorage.run.player import Census, _result, _trait_origins, _traits, late_exclusions
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


def test_traits_of_a_request_wherever_they_are() -> None:
    request = {"root_required": ["COMPUTE_NET_VIF_MODEL_E1000", "COMPUTE_IMAGE_TYPE_RAW"],
               "root_forbidden": ["COMPUTE_STATUS_DISABLED"],
               "required": "HW_CPU_X86_VMX,!HW_CPU_X86_SGX"}
    assert _traits(request, "required") == [
        "COMPUTE_IMAGE_TYPE_RAW", "COMPUTE_NET_VIF_MODEL_E1000", "HW_CPU_X86_SGX",
        "HW_CPU_X86_VMX"]
    assert _traits(request, "forbidden") == ["COMPUTE_STATUS_DISABLED"]


def test_trait_origins_come_from_the_filter_records() -> None:
    scheduling = {"filters": [
        {"name": "transform_image_metadata",
         "added": ["root_required:COMPUTE_NET_VIF_MODEL_E1000 (hw_vif_model=e1000)"]},
        {"name": "compute_status_filter", "added": ["root_forbidden:COMPUTE_STATUS_DISABLED"]},
    ]}
    assert _trait_origins(scheduling) == {
        "COMPUTE_NET_VIF_MODEL_E1000": "hw_vif_model=e1000",
        "COMPUTE_STATUS_DISABLED": "compute_status_filter",
    }


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
