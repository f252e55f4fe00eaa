"""The request spec a scheduling of a server is made from, and the scheduling record the
server keeps."""

from __future__ import annotations

from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.specs import request_spec, scheduling_record
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.scheduler.decisions import Decisions
from moorage.scheduler.filter_records import (
    Addition,
    Constraint,
    FilterRecord,
    Origin,
    OriginKind,
)
from moorage.scheduler.types import Destination, Selection

UUID = "6a1f0c2e-5b3d-4e7f-9a80-1b2c3d4e5f60"
SMALL = Flavor("small", 1, 512, root_gb=1)
BIG = Flavor("big", 4, 4096, root_gb=10, extra_specs={"trait:HW_CPU_X86_VMX": "required"})
RAW = Image.create("img-raw", "raw", "raw")
E1000 = Image.create("img-e1000", "e1000", "qcow2", properties={"hw_vif_model": "e1000"})


def record(**changes: object) -> ServerRecord:
    server = ServerRecord(UUID, "vm", "project1", "user1", "f-small", SMALL, "img-raw", RAW,
                          is_bfv=True, availability_zone="az2", host="h1", node="h1")
    for name, value in changes.items():
        setattr(server, name, value)
    return server


def destination(host: str) -> Destination:
    return Destination(host, host, f"rp-{host}", {f"rp-{host}": {"VCPU": 1}})


def test_request_spec_is_what_the_server_is() -> None:
    spec = request_spec(record())
    assert (spec.instance_uuid, spec.project_id, spec.user_id) == (UUID, "project1", "user1")
    assert (spec.flavor, spec.image) == (SMALL, RAW)
    assert (spec.is_bfv, spec.availability_zone) == (True, "az2")
    assert (spec.ignore_hosts, spec.requested_host, spec.rebuild) == (frozenset(), None, False)
    # Nothing the request filters write is carried over.
    assert (spec.root_required, spec.root_forbidden, spec.member_of,
            spec.forbidden_aggregates, spec.filter_records) == (set(), set(), [], set(), [])


def test_request_spec_for_a_move_or_rebuild() -> None:
    spec = request_spec(record(), flavor=BIG, image=E1000, ignore_hosts=["h1", "h1", "h2"],
                        requested_host="h3", rebuild=True)
    assert (spec.flavor, spec.image) == (BIG, E1000)
    assert spec.ignore_hosts == frozenset({"h1", "h2"})
    assert (spec.requested_host, spec.rebuild) == ("h3", True)


def test_request_specs_are_fresh_each_time() -> None:
    server = record()
    first = request_spec(server)
    first.root_required.add("COMPUTE_NET_VIF_MODEL_E1000")
    first.filter_records.append(FilterRecord("x", True))
    second = request_spec(server)
    assert second.root_required == set() and second.filter_records == []


def test_scheduling_record_of_a_selection() -> None:
    spec = request_spec(record())
    spec.filter_records.append(FilterRecord("compute_status_filter", True, (Addition(
        Constraint.ROOT_FORBIDDEN, ("COMPUTE_STATUS_DISABLED",),
        Origin(OriginKind.REQUEST_FILTER, "compute_status_filter"), "no disabled host"),)))
    decisions = Decisions(hosts=9, candidates=5, passing=3, chosen="h1",
                          alternates=["h2", "h3"])
    selection = Selection(destination("h1"), [destination("h2"), destination("h3")],
                          candidates=5, hosts_passing_filters=3, decisions=decisions)
    assert scheduling_record(spec, "build", selection).to_json() == {
        "operation": "build",
        "filters": [{"name": "compute_status_filter", "ran": True, "added": [{
            "constraint": "root_forbidden", "names": ["COMPUTE_STATUS_DISABLED"],
            "origin": {"kind": "request_filter", "name": "compute_status_filter"},
            "why": "no disabled host"}], "notes": []}],
        "candidates": 5,
        "hosts_passing_filters": 3,
        "alternates": ["h2", "h3"],
        "decisions": decisions.to_json(),
    }
    assert Decisions.from_json(decisions.to_json()) == decisions


def test_scheduling_record_of_a_failure_has_no_selection() -> None:
    spec = request_spec(record())
    assert scheduling_record(spec, "migrate", error="No valid host was found.").to_json() == {
        "operation": "migrate", "filters": [], "error": "No valid host was found."}
    failed = Decisions(hosts=3, deciding="VCPU")
    assert scheduling_record(spec, "build", error="No valid host was found.",
                             decisions=failed).to_json()["decisions"] == failed.to_json()
    assert scheduling_record(spec, "rebuild").to_json() == {"operation": "rebuild",
                                                            "filters": []}
