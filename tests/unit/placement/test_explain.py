"""Moorage-Explain's per-constraint counts where sharing providers lend.

Each case is a small cloud in which one constraint alone decides whether a
sharing provider may lend to a host; the explanation must exclude exactly the
hosts the candidates engine refuses for that reason (engine/candidates.py).
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass

import pytest

from moorage.placement.engine.candidates import find_candidates
from moorage.placement.engine.index import ProviderIndex
from moorage.placement.engine.request import CandidateRequest, RequestGroup
from moorage.placement.storage.records import Inventory
from tests.unit.placement.oracle import SHARING, Cloud, Provider

AGG_A, AGG_B = str(uuidlib.UUID(int=1)), str(uuidlib.UUID(int=2))
ROOT, HOST, LENDER = (str(uuidlib.UUID(int=n)) for n in (1000, 2000, 9000))


def _inventory(rc: str) -> dict[str, Inventory]:
    return {rc: Inventory(4, 0, 1, 4, 1, 1.0)}


@dataclass(frozen=True)
class Case:
    name: str
    cloud: Cloud
    group: RequestGroup
    kind: str
    # uuids of the hosts the constraint excludes on its own.
    excluded: frozenset[str]


CASES = [
    # The suffixed group's one provider must be in the named tree, and the lender is.
    Case("in_tree names a lender", Cloud([
        Provider(HOST, aggregates=frozenset([AGG_A]), inventories=_inventory("VCPU")),
        Provider(LENDER, aggregates=frozenset([AGG_A]), inventories=_inventory("DISK_GB"),
                 traits=frozenset([SHARING])),
    ]), RequestGroup(suffix="1", resources={"DISK_GB": 1}, in_tree=LENDER), "in_tree",
        frozenset()),
    # The unsuffixed group takes nothing from outside the named tree.
    Case("in_tree of the unsuffixed group", Cloud([
        Provider(HOST, aggregates=frozenset([AGG_A]), inventories=_inventory("VCPU")),
        Provider(LENDER, aggregates=frozenset([AGG_A]), inventories=_inventory("DISK_GB"),
                 traits=frozenset([SHARING])),
    ]), RequestGroup(resources={"DISK_GB": 1}, in_tree=LENDER), "in_tree",
        frozenset([HOST])),
    # No loan into a tree whose root is in a forbidden aggregate.
    Case("forbidden aggregate on the borrower's root", Cloud([
        Provider(HOST, aggregates=frozenset([AGG_A, AGG_B]), inventories=_inventory("VCPU")),
        Provider(LENDER, aggregates=frozenset([AGG_B]), inventories=_inventory("DISK_GB"),
                 traits=frozenset([SHARING])),
    ]), RequestGroup(resources={"DISK_GB": 1}, forbidden_aggregates=frozenset([AGG_A])),
        "forbidden_aggregates", frozenset([HOST])),
    # A lender must be a member itself: its own root's membership serves only its tree.
    Case("member_of through the lender's root", Cloud([
        Provider(ROOT, aggregates=frozenset([AGG_A]), inventories=_inventory("VCPU")),
        Provider(LENDER, parent=ROOT, aggregates=frozenset([AGG_B]),
                 inventories=_inventory("DISK_GB"), traits=frozenset([SHARING])),
        Provider(HOST, aggregates=frozenset([AGG_B]), inventories=_inventory("VCPU")),
    ]), RequestGroup(resources={"DISK_GB": 1}, member_of=(frozenset([AGG_A]),)), "member_of",
        frozenset([HOST])),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_constraint_excludes_the_hosts_the_engine_refuses_for_it(case: Case) -> None:
    index = ProviderIndex(None)
    index.load(case.cloud.records())
    found = find_candidates(index, CandidateRequest(groups=(case.group,)), explain_listing=10)
    assert found.explanation is not None
    [counted] = [c for c in found.explanation.constraints if c.constraint.kind == case.kind]
    uuid_of = {r.id: r.uuid for r in index.by_id.values()}
    assert {uuid_of[i] for i in counted.excluded_ids} == case.excluded
    offering = {uuid_of[c.anchor] for c in found.all()}
    assert not offering & case.excluded
