"""The hosts of a plan that will refuse its guest (pure).

With the prefilters off, placement is not asked for the traits an image's properties
name, so the plan may choose a host whose own reports say it cannot build the guest
(its driver reported the trait False; the compute API keeps those reports,
``services.refused``). Its late check will refuse the spawn and the build will be
rescheduled to the next host: the plan names each such host, with the traits, so it
predicts the reschedule instead of promising a host that will not take the guest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from moorage.model.disclosure import IDENTIFIES_HOST
from moorage.scheduler.bootability import Requirement


@dataclass(frozen=True)
class Refusal:
    """A host of the plan (``position`` 0: the chosen one, then the alternates) that
    reports traits the guest needs unsupported: its late check will refuse the guest
    and the build will go to the next host."""

    position: int
    host: Annotated[str, IDENTIFIES_HOST]
    needs: tuple[Requirement, ...]

    def to_json(self) -> dict[str, object]:
        return {"position": self.position, "host": self.host,
                "traits": [str(r) for r in self.needs],
                "detail": "the host reports them unsupported: its late check refuses the "
                          "guest and the build is rescheduled to the next host"}


def refusals(needs: Sequence[Requirement],
             tried: Sequence[tuple[str, frozenset[str]]]) -> tuple[Refusal, ...]:
    """The hosts of ``tried`` (host, the traits it reports unsupported; in the order
    the boot tries them) that will refuse a guest needing ``needs``."""
    found = []
    for position, (host, refused) in enumerate(tried):
        hit = tuple(r for r in needs if r.trait in refused)
        if hit:
            found.append(Refusal(position, host, hit))
    return tuple(found)
