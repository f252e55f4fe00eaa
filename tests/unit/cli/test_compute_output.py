"""Output of the compute API commands: a server's fault and scheduling record read
as text in tables and stay the API's objects in JSON; ``--wait`` progress; the host
list joining services and hypervisors. The commands run in-process against a fake
client (the functional tests use real HTTP)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from moorage.api.client import ComputeApiError, Json
from moorage.cli import server as server_cli
from moorage.cli.host import host_rows
from moorage.cli.server import (
    ServerFailed,
    attempt_line,
    fault_text,
    filter_line,
    scheduling_lines,
    wait_for,
)
from tests.cli_runner import run_moorage

SCHEDULING: Json = {
    "filters": [
        {"name": "compute_status_filter", "ran": True,
         "added": [{"constraint": "root_forbidden", "names": ["COMPUTE_STATUS_DISABLED"],
                    "origin": {"kind": "request_filter", "name": "compute_status_filter"},
                    "why": "no disabled host"}], "notes": []},
        {"name": "transform_image_metadata", "ran": True,
         "added": [{"constraint": "root_required", "names": ["COMPUTE_NET_VIF_MODEL_E1000"],
                    "origin": {"kind": "image_property", "name": "hw_vif_model",
                               "value": "e1000"},
                    "why": "the host must offer what the image asks for"}],
         "notes": ["hw_video_model=gop has no trait: not filtered on"]},
        {"name": "require_image_type_support", "ran": False, "added": [], "notes": []},
        {"name": "isolate_aggregates", "ran": True, "added": [], "notes": []},
        # as rows stored before the records were typed
        {"name": "map_az_to_placement_aggregate", "ran": True,
         "added": ["member_of:in:a1,a2"], "notes": []},
        {"name": "transform_image_metadata", "ran": True,
         "added": ["root_required:COMPUTE_GRAPHICS_MODEL_QXL (hw_video_model=qxl)"],
         "notes": []},
        # neither form: shown as given
        {"name": "odd", "ran": True, "added": ["?"]},
    ],
    "candidates": 3,
    "attempts": [
        {"host": "vmware-1", "node": "domain-c7", "result": "failed",
         "kind": "UnsupportedHardware", "message": "e1000 is not a vmware vif model"},
        {"host": "kvm-2", "result": "ok"},
    ],
}
FAULT: Json = {"code": 500, "message": "Exceeded maximum number of retries.",
               "details": {"reason": "MaxRetriesExceeded", "hosts": ["a", "b"]}}


def test_filter_lines() -> None:
    lines = [filter_line(f) for f in SCHEDULING["filters"]]
    assert lines == [
        "compute_status_filter: forbidden host trait COMPUTE_STATUS_DISABLED "
        "(no disabled host)",
        "transform_image_metadata: required host trait COMPUTE_NET_VIF_MODEL_E1000 "
        "(image property hw_vif_model=e1000); "
        "note: hw_video_model=gop has no trait: not filtered on",
        "require_image_type_support: off",
        "isolate_aggregates: ran, added nothing",
        "map_az_to_placement_aggregate: in one of aggregates a1, a2",
        "transform_image_metadata: required host trait COMPUTE_GRAPHICS_MODEL_QXL "
        "(image property hw_video_model=qxl)",
        'odd: {"added": ["?"], "name": "odd", "ran": true}',
    ]


def test_attempt_lines() -> None:
    first, second = SCHEDULING["attempts"]
    assert attempt_line(1, first) == ("1. vmware-1 (domain-c7): failed, UnsupportedHardware: "
                                      "e1000 is not a vmware vif model")
    assert attempt_line(2, second) == "2. kvm-2: ok"


def test_scheduling_lines_keep_unknown_keys() -> None:
    lines = scheduling_lines({**SCHEDULING, "request": {"required": ["X"]}})
    assert lines[0] == "request filters:"
    assert "candidates: 3" in lines
    assert lines[lines.index("attempts:") + 1].startswith("  1. vmware-1")
    assert lines[-1] == 'request: {"required": ["X"]}'
    assert scheduling_lines({}) == []


def test_fault_text() -> None:
    assert fault_text(FAULT).splitlines() == [
        "500: Exceeded maximum number of retries.",
        "  reason: MaxRetriesExceeded",
        '  hosts: ["a", "b"]',
    ]
    assert fault_text({"message": "No valid host was found.", "details": "line 1\nline 2"}
                      ).splitlines() == ["No valid host was found.", "  line 1", "  line 2"]
    assert fault_text(None) == ""


# -- the commands with a fake client ---------------------------------------------
class FakeClient:
    """Answers GET /servers/{id} from a script of states, one per call; the last repeats."""

    def __init__(self, states: list[Json]) -> None:
        self.states = states
        self.calls: list[tuple[str, Any]] = []

    def server(self, server_id: str) -> Json:
        self.calls.append(("server", server_id))
        if len(self.states) > 1:
            return self.states.pop(0)
        if not self.states:
            raise ComputeApiError("GET /servers/x: 404 Not Found: gone", 404)
        return self.states[0]

    def servers(self, params: list[tuple[str, str]]) -> list[Json]:
        return []


def state(status: str, task: str | None = None, host: str | None = None,
          attempts: list[Json] | None = None, fault: Json | None = None) -> Json:
    return {"id": "u1", "name": "web", "status": status, "OS-EXT-STS:task_state": task,
            "OS-EXT-SRV-ATTR:host": host, "fault": fault,
            "moorage:scheduling": {"attempts": attempts or []}}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_wait_reports_each_change_and_each_host_tried() -> None:
    failed = SCHEDULING["attempts"][0]
    client = FakeClient([
        state("BUILD", "scheduling"),
        state("BUILD", "scheduling"),
        state("BUILD", "spawning", "vmware-1"),
        state("BUILD", "spawning", "kvm-2", [failed]),
        state("ACTIVE", None, "kvm-2", [failed, SCHEDULING["attempts"][1]]),
    ])
    progress, clock = io.StringIO(), Clock()
    server = wait_for(client, "u1", "create", progress,  # type: ignore[arg-type]
                      interval=0.5, clock=clock, sleep=clock.sleep)
    assert server["status"] == "ACTIVE"
    assert progress.getvalue().splitlines() == [
        "server web: BUILD (scheduling)",
        "server web: BUILD (spawning) on vmware-1",
        "server web: BUILD (spawning) on kvm-2",
        "  attempt 1. vmware-1 (domain-c7): failed, UnsupportedHardware: "
        "e1000 is not a vmware vif model",
        "server web: ACTIVE on kvm-2",
        "  attempt 2. kvm-2: ok",
    ]
    assert clock.now == 2.0


def test_wait_fails_with_the_fault() -> None:
    client = FakeClient([state("BUILD", "scheduling"), state("ERROR", fault=FAULT)])
    clock = Clock()
    with pytest.raises(ServerFailed, match=r"^create of server u1 failed: ERROR: "
                       r"Exceeded maximum number of retries\.$"):
        wait_for(client, "u1", "create", io.StringIO(),  # type: ignore[arg-type]
                 clock=clock, sleep=clock.sleep)


@pytest.mark.parametrize(("operation", "final"), [
    ("resize", "VERIFY_RESIZE"), ("migrate", "VERIFY_RESIZE"),
    ("confirm", "ACTIVE"), ("rebuild", "ACTIVE"), ("evacuate", "ACTIVE")])
def test_wait_ends_in_the_operations_status(operation: str, final: str) -> None:
    client = FakeClient([state("RESIZE", "resize_prep"), state(final, None, "h2")])
    clock = Clock()
    assert wait_for(client, "u1", operation, io.StringIO(),  # type: ignore[arg-type]
                    clock=clock, sleep=clock.sleep)["status"] == final


def test_wait_does_not_stop_while_a_task_runs() -> None:
    # ACTIVE with a task in progress (a rebuild just accepted) is not the end.
    client = FakeClient([state("ACTIVE", "rebuilding"), state("ACTIVE", None, "h1")])
    clock = Clock()
    wait_for(client, "u1", "rebuild", io.StringIO(),  # type: ignore[arg-type]
             clock=clock, sleep=clock.sleep)
    assert len(client.calls) == 2


def test_wait_gives_up_after_the_timeout() -> None:
    client = FakeClient([state("BUILD", "scheduling")])
    clock = Clock()
    with pytest.raises(ServerFailed, match=r"still BUILD after 5s; the create goes on: "
                       r"follow it with `moorage server show u1`"):
        wait_for(client, "u1", "create", io.StringIO(),  # type: ignore[arg-type]
                 interval=1, timeout=5, clock=clock, sleep=clock.sleep)


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[list[Json]], None]]:
    def install(states: list[Json]) -> None:
        monkeypatch.setattr(server_cli, "api_client", lambda args, cloud: FakeClient(states))

    yield install


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    found = run_moorage(capsys, list(argv))
    return found.code, found.out, found.err


def errored_server() -> Json:
    server = state("ERROR", fault=FAULT)
    server.update({"moorage:scheduling": SCHEDULING, "image": "",
                   "flavor": {"original_name": "small", "vcpus": 1}})
    return server


def test_server_show_table(fake_api: Callable[[list[Json]], None],
                           capsys: pytest.CaptureFixture[str]) -> None:
    fake_api([errored_server()])
    code, out, _ = run(capsys, "server", "show", "u1")
    assert code == 0
    assert "| fault             | 500: Exceeded maximum number of retries." in out
    assert "|                   |   reason: MaxRetriesExceeded" in out
    assert ("transform_image_metadata: required host trait COMPUTE_NET_VIF_MODEL_E1000 "
            "(image property hw_vif_model=e1000); note:") in out
    assert "2. kvm-2: ok" in out
    assert "| image             | N/A (booted from volume)" in out
    assert "| flavor            | small" in out


def test_server_show_json_keeps_the_api_objects(fake_api: Callable[[list[Json]], None],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    fake_api([errored_server()])
    code, out, _ = run(capsys, "server", "show", "u1", "-f", "json")
    assert code == 0
    shown = json.loads(out)
    assert shown["fault"] == FAULT
    assert shown["scheduling"] == SCHEDULING
    assert shown["status"] == "ERROR"


def test_server_show_value_column(fake_api: Callable[[list[Json]], None],
                                  capsys: pytest.CaptureFixture[str]) -> None:
    fake_api([errored_server()])
    code, out, _ = run(capsys, "server", "show", "u1", "-f", "value", "-c", "status")
    assert (code, out) == (0, "ERROR\n")


# -- hosts ----------------------------------------------------------------------
def test_host_rows_join_services_and_hypervisors() -> None:
    services = [
        {"id": 2, "binary": "nova-compute", "host": "vm-1", "status": "disabled",
         "state": "up", "disabled_reason": "maintenance", "forced_down": False,
         "zone": "nova"},
        {"id": 1, "binary": "nova-compute", "host": "bm-1", "status": "enabled",
         "state": "down", "forced_down": True},
        {"id": 3, "binary": "moorage-conductor", "host": "ctl", "status": "enabled",
         "state": "up"},
    ]
    hypervisors = [
        {"hypervisor_hostname": "n1", "hypervisor_type": "ironic", "running_vms": 1,
         "service": {"host": "bm-1", "id": 1}},
        {"hypervisor_hostname": "n2", "hypervisor_type": "ironic", "running_vms": 0,
         "service": {"host": "bm-1", "id": 1}},
        {"hypervisor_hostname": "vm-1", "hypervisor_type": "VMware vCenter Server",
         "running_vms": 4, "service": {"host": "vm-1", "id": 2}},
    ]
    rows = host_rows(services, hypervisors)
    assert [(r["host"], r["driver"], r["status"], r["state"], r["servers"], r["forced_down"])
            for r in rows] == [
        ("bm-1", "ironic", "enabled", "down", 1, True),
        ("vm-1", "VMware vCenter Server", "disabled", "up", 4, False),
    ]
    assert rows[0]["nodes"].human_readable() == "n1, n2"
    assert rows[1]["disabled_reason"] == "maintenance"
    # A driver the service names itself wins over the hypervisors' type.
    assert host_rows([{**services[0], "driver": "vmware"}], hypervisors)[0]["driver"] == "vmware"


def test_a_move_given_up_is_a_failure() -> None:
    # The resize found no other host: the server is ACTIVE where it was, not
    # VERIFY_RESIZE; the last refusal says why when there is no fault.
    refused = {"host": "big", "result": "failed", "kind": "UnsupportedHardware",
               "message": "no e1000"}
    client = FakeClient([state("RESIZE", "resize_prep", "small"),
                         state("ACTIVE", None, "small", [refused])])
    clock = Clock()
    with pytest.raises(ServerFailed, match=r"^resize of server u1 failed: ACTIVE, not "
                       r"VERIFY_RESIZE: big: failed, UnsupportedHardware: no e1000$"):
        wait_for(client, "u1", "resize", io.StringIO(),  # type: ignore[arg-type]
                 clock=clock, sleep=clock.sleep)
    client = FakeClient([state("ACTIVE", None, "small", fault={"message": "No valid host"})])
    with pytest.raises(ServerFailed, match=r"failed: ACTIVE, not VERIFY_RESIZE: No valid host$"):
        wait_for(client, "u1", "resize", io.StringIO(),  # type: ignore[arg-type]
                 clock=clock, sleep=clock.sleep)
    # The scheduler's error, when the move recorded one.
    given_up = state("ACTIVE", None, "small", [refused])
    given_up["moorage:scheduling"]["error"] = "No valid host was found. Only small fits."
    with pytest.raises(ServerFailed, match=r"failed: ACTIVE, not VERIFY_RESIZE: No valid "
                       r"host was found\. Only small fits\.$"):
        wait_for(FakeClient([given_up]), "u1", "migrate",  # type: ignore[arg-type]
                 io.StringIO(), clock=clock, sleep=clock.sleep)


def test_a_users_decisions_read_fewer_than_the_floor() -> None:
    from moorage.model.discretion import Floor
    from moorage.scheduler.decisions import Decisions, Exclusion, Together, for_user

    decisions = Decisions(hosts=4)
    decisions.exclude(Exclusion("placement", "required trait X", "X", 3, 4, hosts=("h1",)))
    decisions.exclude(Exclusion("host filter", "host filter ComputeFilter",
                                "ComputeFilter", 2, 4, reasons={"down": 1, "disabled": 1}))
    decisions.together = Together(("X", "Y"), (1, 3))
    shown = json.loads(json.dumps(for_user(decisions.to_json(), Floor(2))))
    text = "\n".join(server_cli.decision_lines(shown))
    assert text.splitlines() == [
        "hosts counted: 4",
        "placement: required trait X: leaves fewer than 2 of the 4 hosts",
        "host filter: host filter ComputeFilter: excludes 2 of 4 hosts "
        "(fewer than 2 down, fewer than 2 disabled)",
        "no host has all of X + Y (fewer than 2 and 3 hosts have each)"]
    assert "h1" not in text
    assert server_cli.scheduling_lines({"candidates": None})[0] == (
        "candidates: fewer than the host floor")
