"""What the scheduler probes when placement has no explanation, and the counts it makes
of the answers (the same as Moorage's placement: test_probed_explanation.py in
functional compares both on one cloud)."""

from __future__ import annotations

from moorage.scheduler.probed_explanation import (
    MAX_PROBED,
    Probe,
    explanation,
    probes,
    satisfying,
)
from moorage.scheduler.resource_request import RequestGroup, ResourceRequest


def request(**groups: RequestGroup) -> ResourceRequest:
    return ResourceRequest({"" if k == "unnumbered" else k: g for k, g in groups.items()},
                           root_required=frozenset({"COMPUTE_IMAGE_TYPE_QCOW2"}),
                           root_forbidden=frozenset({"COMPUTE_STATUS_DISABLED"}))


def test_every_constraint_of_the_unnumbered_group_and_the_root_is_probed() -> None:
    planned = probes(request(unnumbered=RequestGroup(
        resources={"VCPU": 2, "MEMORY_MB": 512}, required={"HW_CPU_X86_AVX2"},
        forbidden={"CUSTOM_SLOW"})))
    assert [(p.kind, p.names, p.query.params()) for p in planned.probes] == [
        ("root_required", ("COMPUTE_IMAGE_TYPE_QCOW2",),
         [("required", "COMPUTE_IMAGE_TYPE_QCOW2")]),
        ("root_forbidden", ("COMPUTE_STATUS_DISABLED",),
         [("required", "COMPUTE_STATUS_DISABLED")]),
        ("resources", ("MEMORY_MB",), [("resources", "MEMORY_MB:512")]),
        ("resources", ("VCPU",), [("resources", "VCPU:2")]),
        ("required", ("HW_CPU_X86_AVX2",), [("required", "HW_CPU_X86_AVX2")]),
        ("forbidden", ("CUSTOM_SLOW",), [("required", "CUSTOM_SLOW")])]
    assert planned.left_out == ()


def test_what_cannot_be_probed_is_said() -> None:
    many = RequestGroup(required={f"CUSTOM_T{i}" for i in range(MAX_PROBED)},
                        member_of=[frozenset({"agg"})])
    planned = probes(request(unnumbered=many, _1=RequestGroup(resources={"VGPU": 1})))
    assert len(planned.probes) == MAX_PROBED
    assert planned.left_out == ("2 more constraints", "the resource groups _1",
                                "the aggregates")


def test_a_roots_own_trait_and_a_forbidden_one() -> None:
    hosts = frozenset({"r1", "r2", "r3"})
    found = [("r1", "r1"), ("child-of-r2", "r2")]  # (provider, its root)
    own = Probe("root_required", ("T",), probes(request()).probes[0].query, own=True)
    tree = Probe("required", ("T",), own.query)
    banned = Probe("root_forbidden", ("T",), own.query, own=True, negated=True)
    assert satisfying(own, found, hosts) == {"r1"}
    assert satisfying(tree, found, hosts) == {"r1", "r2"}
    assert satisfying(banned, found, hosts) == {"r2", "r3"}


def test_counts_together_and_the_smallest_change() -> None:
    a = Probe("required", ("A",), probes(request()).probes[0].query)
    b = Probe("required", ("B",), a.query)
    answer = explanation(["h1", "h2", "h3", "h4"],
                         [(a, frozenset({"h1", "h2", "h3"})), (b, frozenset({"h4"}))], 2)
    assert (answer["hosts"], answer["viable"]) == (4, 0)
    assert [(c["names"], c["satisfied"], c["excluded"], c["excluded_roots"])
            for c in answer["constraints"]] == [(["A"], 3, 1, ["h4"]),
                                                (["B"], 1, 3, ["h1", "h2"])]
    assert answer["together"] == [0, 1]
    assert answer["relaxed"] == {"constraint": 1, "viable": 3}
