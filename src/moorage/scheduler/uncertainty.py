"""Where a boot may choose another host than its dry run (pure).

The plan (``POST /v2.1/scheduler/plan``) runs the pipeline a boot runs, so the boot
that follows it lands on the plan's host, unless something random stands between
them. Each source of randomness the options switch on is named here with the hosts
the boot may choose from instead, so that the plan says when it cannot promise:

- ``[placement] randomize_allocation_candidates``: placement returns its candidates
  in a random order and, with a limit, a random sample. A sample (the scheduler asks
  for ``[scheduler] placement_sample_size``) holds other hosts at the boot; in
  whole, the hosts tied for the best weight are taken in placement's order.
- ``[filter_scheduler] shuffle_best_same_weighed_hosts``: the hosts tied for the best
  weight are shuffled.
- ``[filter_scheduler] host_subset_size`` above 1: one of that many best hosts is
  chosen at random.

A host chosen although its own reports say it will refuse the guest is not random
either: ``refusals.py`` names those.

What else differs (the cloud changing between the plan and the boot, a claim lost to
a concurrent boot) is in docs/scheduling.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated

from moorage.model.disclosure import IDENTIFIES_HOST
from moorage.scheduler.weighers import WeighedHost


@dataclass(frozen=True)
class Difference:
    """One reason the boot may choose differently: the option, what it does (naming
    no host and no count), and the hosts the boot may choose from (the plan's own
    among them; for a random sample, only the ones this plan saw)."""

    source: str
    detail: str
    hosts: Annotated[tuple[str, ...], IDENTIFIES_HOST]

    def to_json(self) -> dict[str, object]:
        return {"source": self.source, "detail": self.detail, "hosts": list(self.hosts)}


@dataclass(frozen=True)
class Randomness:
    """The options that make a boot's choice random."""

    randomized_candidates: bool = False
    shuffle_best: bool = False
    subset_size: int = 1


def differences(randomness: Randomness, weighed: Sequence[WeighedHost],
                names: Mapping[str, str], sampled: bool) -> tuple[Difference, ...]:
    """Every source of randomness that can change the host of a boot whose hosts were
    ``weighed`` (best first; ``names`` maps their roots to host names). ``sampled``:
    placement returned a sample of more candidates."""
    if not weighed:
        return ()
    named = [names[w.host] for w in weighed]
    tied = tuple(names[w.host] for w in weighed if w.weight == weighed[0].weight)
    found = []
    if randomness.randomized_candidates and sampled:
        found.append(Difference(
            "[placement] randomize_allocation_candidates",
            "placement returns a random sample of its allocation candidates: the boot "
            "weighs another sample and may choose a host this plan did not see",
            tuple(named)))
    elif randomness.randomized_candidates and len(tied) > 1:
        found.append(Difference(
            "[placement] randomize_allocation_candidates",
            "placement returns its allocation candidates in a random order: the boot may "
            "choose another of the hosts tied for the best weight", tied))
    if randomness.shuffle_best and len(tied) > 1:
        found.append(Difference(
            "[filter_scheduler] shuffle_best_same_weighed_hosts",
            "the hosts tied for the best weight are shuffled", tied))
    if randomness.subset_size > 1 and len(named) > 1:
        found.append(Difference(
            "[filter_scheduler] host_subset_size",
            "the boot chooses at random among the best hosts",
            tuple(named[:randomness.subset_size])))
    return tuple(found)

