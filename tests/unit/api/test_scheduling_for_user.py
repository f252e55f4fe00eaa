"""A server's ``moorage:scheduling`` record as a user without the host policy reads
it: the same facts, no host and no conductor's machine."""

from __future__ import annotations

from moorage.api.handlers.servers import scheduling_for_user
from moorage.compute.client import SpawnFailed
from moorage.conductor import faults


def test_every_host_and_conductor_identity_goes_and_the_facts_stay() -> None:
    record = {
        "operation": "resize",
        "filters": [],
        "candidates": 3,
        "alternates": ["alt-9"],
        "attempts": [faults.attempt_failed("big1", "big1", SpawnFailed(
                         "big1", "SpawnFailed", "big1 is full")),
                     faults.attempt_interrupted("big2", "big2", "api-7:1:abcdef")],
        "error": "Build of x failed: big1: SpawnFailed: big1 is full",
        "error_for_user": "Build of x failed: SpawnFailed: the host is full",
        "conductor": "api-7:1:abcdef",
    }
    shown = scheduling_for_user(record)
    text = str(shown)
    for identity in ("big1", "big2", "alt-9", "api-7"):
        assert identity not in text, identity
    assert shown["error"] == "Build of x failed: SpawnFailed: the host is full"
    assert shown["candidates"] == 3 and shown["operation"] == "resize"
    assert [a["result"] for a in shown["attempts"]] == ["failed", "interrupted"]


def test_an_error_naming_no_host_is_shown_as_it_is() -> None:
    shown = scheduling_for_user({"operation": "build", "error": "0 of 4 hosts have X"})
    assert shown["error"] == "0 of 4 hosts have X"
