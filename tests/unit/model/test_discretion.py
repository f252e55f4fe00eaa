"""The floor under counts of hosts, and the rounding of free capacity."""

from __future__ import annotations

import pytest

from moorage.model.discretion import EXACT, Floor, rounded_down
from moorage.scheduler.decisions import Decisions, Exclusion, Relaxation, Together, for_user


def test_a_count_below_the_floor_is_not_told_zero_included() -> None:
    floor = Floor(3)
    assert [floor.count(n) for n in (0, 1, 2, 3, 40)] == [None, None, None, 3, 40]
    assert floor.words(2) == "fewer than 3" and floor.words(0) == "fewer than 3"
    assert floor.words(7) == "7"
    assert [EXACT.count(n) for n in (0, 1, 2)] == [0, 1, 2]
    assert Floor(1).exact and not Floor(2).exact


@pytest.mark.parametrize(("part", "whole", "told"), [
    (5, 10, (5, 5)), (9, 10, (None, None)), (1, 10, (None, None)), (10, 10, (None, None)),
])
def test_a_part_and_its_rest_are_told_both_or_neither(
        part: int, whole: int, told: tuple[int | None, int | None]) -> None:
    assert Floor(2).split(part, whole) == told


def test_exact_tells_a_whole_exclusion() -> None:
    assert EXACT.split(10, 10) == (10, 0)


@pytest.mark.parametrize(("amount", "shown"), [
    (0, 0), (1, 1), (3, 2), (9, 5), (10, 10), (19, 10), (260, 200), (79208, 50000),
    (1800398, 1000000), (-4, 0),
])
def test_free_capacity_is_rounded_down_on_the_1_2_5_scale(amount: int, shown: int) -> None:
    assert rounded_down(amount) == shown


def test_the_words_of_a_record_tell_no_small_count() -> None:
    decisions = Decisions(hosts=4)
    decisions.exclude(Exclusion("placement", "required trait X", "X", 3, 4, hosts=("h1",)))
    decisions.exclude(Exclusion("placement", "required trait Y", "Y", 2, 4))
    decisions.exclude(Exclusion("host filter", "host filter ComputeFilter", "ComputeFilter",
                                1, 40, reasons={"down": 1}))
    decisions.together = Together(("X", "Y"), (1, 2))
    decisions.relaxed = Relaxation("required trait X", None, 1)
    exact = decisions.explanation()
    assert "excludes 3 of 4 hosts" in exact and "(1 and 2 hosts have each)" in exact
    said = decisions.explanation(floor=Floor(3))
    assert "required trait X: leaves fewer than 3 of the 4 hosts" in said
    assert "required trait Y: leaves fewer than 3 of the 4 hosts" in said
    assert "ComputeFilter: excludes fewer than 3 of the 40 hosts" in said
    assert "(fewer than 3 hosts have each)" in said
    assert "without required trait X, fewer than 3 hosts satisfy every other" in said
    shown = for_user(decisions.to_json(), Floor(3))
    assert shown["hosts"] == 4
    assert [(e["excluded"], e["of"], e["remaining"]) for e in shown["exclusions"]] == [
        (None, 4, None), (None, 4, None), (None, 40, None)]
    assert shown["exclusions"][2]["reasons"] == {"down": None}
    assert shown["together"]["satisfied"] == [None, None]
    assert shown["relaxed"]["hosts"] is None
    assert "hosts" not in shown["exclusions"][0]
    wide = for_user(decisions.to_json(), Floor(2))
    assert (wide["exclusions"][1]["excluded"], wide["exclusions"][1]["remaining"]) == (2, 2)
