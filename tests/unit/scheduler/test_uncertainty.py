"""Where a boot may choose another host than its plan: each source of randomness the
options switch on, and the hosts it may choose from."""

from __future__ import annotations

from moorage.scheduler.uncertainty import Randomness, differences
from moorage.scheduler.weighers import WeighedHost

NAMES = {"r1": "kvm-a", "r2": "kvm-b", "r3": "kvm-c", "r4": "kvm-d"}
TIED_TWO = [WeighedHost("r1", 2.0), WeighedHost("r2", 2.0), WeighedHost("r3", 1.0),
            WeighedHost("r4", 0.5)]
ONE_BEST = [WeighedHost("r3", 3.0), WeighedHost("r1", 2.0), WeighedHost("r2", 1.0)]


def sources(randomness: Randomness, weighed: list[WeighedHost], sampled: bool = False
            ) -> dict[str, tuple[str, ...]]:
    return {d.source: d.hosts for d in differences(randomness, weighed, NAMES, sampled)}


def test_nothing_random_is_certain() -> None:
    assert sources(Randomness(), TIED_TWO, sampled=True) == {}
    assert differences(Randomness(True, True, 3), [], NAMES, True) == ()


def test_randomized_candidates_in_whole_change_only_ties() -> None:
    assert sources(Randomness(randomized_candidates=True), TIED_TWO) == {
        "[placement] randomize_allocation_candidates": ("kvm-a", "kvm-b")}
    assert sources(Randomness(randomized_candidates=True), ONE_BEST) == {}


def test_a_randomized_sample_may_hold_other_hosts() -> None:
    found = differences(Randomness(randomized_candidates=True), ONE_BEST, NAMES, True)
    assert [(d.source, d.hosts) for d in found] == [
        ("[placement] randomize_allocation_candidates", ("kvm-c", "kvm-a", "kvm-b"))]
    assert "did not see" in found[0].detail


def test_shuffle_and_subset() -> None:
    assert sources(Randomness(shuffle_best=True), TIED_TWO) == {
        "[filter_scheduler] shuffle_best_same_weighed_hosts": ("kvm-a", "kvm-b")}
    assert sources(Randomness(shuffle_best=True), ONE_BEST) == {}
    assert sources(Randomness(subset_size=3), ONE_BEST) == {
        "[filter_scheduler] host_subset_size": ("kvm-c", "kvm-a", "kvm-b")}
    assert sources(Randomness(subset_size=2), ONE_BEST[:1]) == {}


def test_details_name_no_host() -> None:
    every = differences(Randomness(True, True, 4), TIED_TWO, NAMES, True)
    assert len(every) == 3
    for difference in every:
        assert "kvm-" not in difference.detail
